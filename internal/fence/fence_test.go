package fence

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/shardid/shardid/strategies"
)

var layout = strategies.Layout{}.Normalized() // 40/13/10

var moveRange = Range{From: 5, To: 6}

func TestValidation(t *testing.T) {
	ctx := context.Background()
	if _, err := (Fence{Dialect: "oracle", ShardBits: 13}).ShardSQL(Table{Name: "t", Key: "id"}, ""); !errors.Is(err, ErrUnsupportedDialect) {
		t.Errorf("oracle: %v", err)
	}
	if _, err := (Fence{Dialect: "mysql", ShardBits: 17}).ShardSQL(Table{Name: "t", Key: "id"}, ""); !errors.Is(err, ErrInvalid) {
		t.Errorf("17 shard bits: %v", err)
	}
	f := Fence{Dialect: "sqlite", ShardBits: layout.ShardBits, SequenceBits: layout.SequenceBits}
	if err := f.Open(ctx, nil, Range{From: 3, To: 1}, "x"); !errors.Is(err, ErrInvalid) {
		t.Errorf("backwards range: %v", err)
	}
	if err := f.Open(ctx, nil, Range{From: 0, To: 1 << 13}, "x"); !errors.Is(err, ErrInvalid) {
		t.Errorf("range past the shards: %v", err)
	}
	if err := f.Open(ctx, nil, moveRange, "x'; DROP"); !errors.Is(err, ErrInvalid) {
		t.Errorf("target with a quote: %v", err)
	}
	long := strings.Repeat("a_very_long_table_name", 4)
	for _, d := range []string{"mysql", "postgres"} {
		limit := map[string]int{"mysql": 64, "postgres": 63}[d]
		a, b := triggerName(d, long, "ins"), triggerName(d, long+"x", "ins")
		if len(a) > limit || a == b || !strings.HasPrefix(a, "shardid_fence_a_very") || !strings.HasSuffix(a, "_ins") {
			t.Errorf("%s: trigger names %q, %q", d, a, b)
		}
	}
}

// scatteredRanges is n ranges of one shard each, every other shard.
func scatteredRanges(n int) []Range {
	rs := make([]Range, n)
	for i := range rs {
		rs[i] = Range{From: 2 * i, To: 2 * i}
	}
	return rs
}

func TestInRanges(t *testing.T) {
	for _, c := range []struct {
		ranges []Range
		want   string
	}{
		{nil, "1 = 0"},
		{[]Range{{From: 0, To: 9}}, "s BETWEEN 0 AND 9"},
		{[]Range{{From: 0, To: 9}, {From: 20, To: 20}}, "s BETWEEN 0 AND 9 OR s BETWEEN 20 AND 20"},
		{scatteredRanges(65), "s IN (0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62, 64, 66, 68, 70, 72, 74, 76, 78, 80, 82, 84, 86, 88, 90, 92, 94, 96, 98, 100, 102, 104, 106, 108, 110, 112, 114, 116, 118, 120, 122, 124, 126, 128)"},
	} {
		if got := InRanges("s", c.ranges); got != c.want {
			t.Errorf("InRanges(%v) = %q, want %q", c.ranges, got, c.want)
		}
	}
}

// TestInRangesListsNarrowRangesAlone: among many ranges, the wide ones
// are tested as ranges; listing their every shard made a database holding
// 65 ranges of 1,024 shards a condition of 66,560 numbers (about 400 KB of
// SQL in every statement of a part).
func TestInRangesListsNarrowRangesAlone(t *testing.T) {
	mixed := append(scatteredRanges(64), Range{From: 200, To: 999})
	if got, want := InRanges("s", mixed), "s BETWEEN 200 AND 999 OR s IN (0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62, 64, 66, 68, 70, 72, 74, 76, 78, 80, 82, 84, 86, 88, 90, 92, 94, 96, 98, 100, 102, 104, 106, 108, 110, 112, 114, 116, 118, 120, 122, 124, 126)"; got != want {
		t.Errorf("InRanges(64 scattered and one wide) = %q, want %q", got, want)
	}
	wide := make([]Range, 65)
	for i := range wide {
		wide[i] = Range{From: 2048 * i, To: 2048*i + 1023}
	}
	got := InRanges("s", wide)
	if len(got) > 65*40 {
		t.Errorf("InRanges(65 ranges of 1,024 shards) is %d characters, want one test a range", len(got))
	}
	if !strings.HasPrefix(got, "(s BETWEEN 0 AND 1023 OR ") || !strings.HasSuffix(got, ") OR (s BETWEEN 131072 AND 132095)") {
		t.Errorf("InRanges(65 ranges of 1,024 shards) = %q, want them ORed in groups of 64", got)
	}
}

// TestSeqRunsKeepGaps: Forget deletes consecutive seqs as one range and
// never spans a gap, where a change not yet committed at the read may sit.
func TestSeqRunsKeepGaps(t *testing.T) {
	got := seqRuns([]int64{9, 3, 4, 5, 7, 12, 11, 10, 4})
	want := [][2]int64{{3, 5}, {7, 7}, {9, 12}}
	if !slices.Equal(got, want) {
		t.Fatalf("seqRuns = %v, want %v", got, want)
	}
	if got := seqRuns(nil); len(got) != 0 {
		t.Fatalf("seqRuns(nil) = %v", got)
	}
}
