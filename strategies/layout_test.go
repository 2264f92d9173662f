package strategies

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestLayoutDefaults(t *testing.T) {
	l := Layout{}.Normalized()
	if l.TimeBits != 40 || l.ShardBits != 13 || l.SequenceBits != 10 || l.WorkerBits != 6 {
		t.Fatalf("widths %d/%d/%d/%d, want 40/13/10/6", l.TimeBits, l.ShardBits, l.SequenceBits, l.WorkerBits)
	}
	if !l.Epoch.Equal(DefaultEpoch) || l.TimeUnit != time.Millisecond {
		t.Fatalf("epoch %s unit %s", l.Epoch, l.TimeUnit)
	}
	if got, want := (Layout{}).RunsOut(), DefaultEpoch.Add(time.Duration(1<<40)*time.Millisecond); !got.Equal(want) {
		t.Fatalf("RunsOut = %s, want %s (epoch + 2^40 ms)", got, want)
	}
	if (Layout{}).ShardCount() != 8192 || (Layout{}).IDsPerTick() != 1024 || (Layout{}).WorkerIDsPerTick() != 16 || oneWorker.WorkerIDsPerTick() != 1024 {
		t.Fatalf("ShardCount %d IDsPerTick %d", (Layout{}).ShardCount(), (Layout{}).IDsPerTick())
	}
	if err := (Layout{}).Validate(now); err != nil {
		t.Fatal(err)
	}
}

func TestLayoutValidate(t *testing.T) {
	cases := []struct {
		name   string
		layout Layout
		want   string // a part of the error; empty: valid
	}{
		{"default", Layout{}, ""},
		{"sonyflake-like", Layout{TimeBits: 39, ShardBits: 8, SequenceBits: 16, WorkerBits: 8, TimeUnit: 10 * time.Millisecond}, ""},
		{"sum 64", Layout{TimeBits: 41, ShardBits: 13, SequenceBits: 10}, "want 63"},
		{"sum 62", Layout{TimeBits: 40, ShardBits: 12, SequenceBits: 10}, "want 63"},
		{"zero shard bits", Layout{TimeBits: 53, ShardBits: 0, SequenceBits: 10}, "at least 1"},
		{"zero sequence bits", Layout{TimeBits: 50, ShardBits: 13}, "at least 1"},
		{"negative", Layout{TimeBits: 64, ShardBits: -11, SequenceBits: 10}, "at least 1"},
		{"too many shard bits", Layout{TimeBits: 22, ShardBits: 32, SequenceBits: 9}, "at most 16"},
		{"31 shard bits", Layout{TimeBits: 22, ShardBits: 31, SequenceBits: 10}, "at most 16"},
		{"worker takes all sequence", Layout{WorkerBits: 10}, "WorkerBits"},
		{"negative worker", Layout{WorkerBits: -2}, "WorkerBits"},
		{"sub-millisecond unit", Layout{TimeUnit: time.Microsecond}, "TimeUnit"},
		{"fractional unit", Layout{TimeUnit: 1500 * time.Microsecond}, "TimeUnit"},
		{"negative unit", Layout{TimeUnit: -time.Millisecond}, "TimeUnit"},
		{"future epoch", Layout{Epoch: now.Add(time.Hour)}, "in the future"},
		{"runs out within a year", Layout{TimeBits: 34, ShardBits: 16, SequenceBits: 13, Epoch: now.Add(-180 * 24 * time.Hour)}, "runs out"},
		{"already run out", Layout{TimeBits: 30, ShardBits: 16, SequenceBits: 17}, "runs out"},
		{"run out, from an epoch before 1970", Layout{Epoch: time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)}, "runs out"},
		{"an epoch before 1970 with years left", Layout{TimeBits: 45, ShardBits: 10, SequenceBits: 8, Epoch: time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)}, ""},
		{"an epoch beyond a time.Duration", Layout{TimeBits: 50, ShardBits: 8, SequenceBits: 5, Epoch: time.Date(1700, 1, 1, 0, 0, 0, 0, time.UTC)}, "280 years"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.layout.Validate(now)
			if c.want == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidLayout) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrInvalidLayout mentioning %q", err, c.want)
			}
		})
	}
}

func TestLayoutComposeDecode(t *testing.T) {
	l := oneWorker
	at := DefaultEpoch.Add(123456789 * time.Millisecond)
	id := l.Compose(at, 8191, 1023)
	if want := int64(123456789)<<23 | 8191<<10 | 1023; id != want {
		t.Fatalf("Compose = %d, want %d", id, want)
	}
	p := l.Decode(id)
	if !p.Time.Equal(at) || p.Shard != 8191 || p.Sequence != 1023 || p.Worker != 0 || p.Ticks != 123456789 {
		t.Fatalf("Decode = %+v", p)
	}
	if l.Shard(id) != int(id>>10&8191) {
		t.Fatal("Shard is not (id >> SequenceBits) & mask")
	}
	w := Layout{WorkerBits: 4}
	p = w.Decode(w.ComposeTicks(5, 3, 9<<6|17))
	if p.Worker != 9 || p.WorkerSequence != 17 || p.Sequence != 9<<6|17 || p.Shard != 3 || p.Ticks != 5 {
		t.Fatalf("worker layout Decode = %+v", p)
	}
}

func TestLayoutCheck(t *testing.T) {
	l := Layout{}
	good := l.Compose(now, 1, 1)
	for _, c := range []struct {
		id int64
		ok bool
	}{{good, true}, {0, false}, {-good, false}, {l.Compose(now.Add(48*time.Hour), 1, 1), false}, {1, true}} {
		if err := l.Check(c.id, now); (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInvalidID)) {
			t.Errorf("Check(%d) = %v, want ok=%v", c.id, err, c.ok)
		}
	}
}

// FuzzLayoutRoundTrip: any fields within their widths survive Compose and Decode,
// and the shard is always at the same position.
func FuzzLayoutRoundTrip(f *testing.F) {
	f.Add(uint8(40), uint8(13), uint8(0), int64(123456789), 42, 7)
	f.Add(uint8(39), uint8(8), uint8(8), int64(1), 255, 65535)
	f.Add(uint8(30), uint8(20), uint8(3), int64(1<<29), 1<<19, 4000)
	f.Fuzz(func(t *testing.T, timeBits, shardBits, workerBits uint8, ticks int64, shard, seq int) {
		l := Layout{TimeBits: int(timeBits % 62), ShardBits: int(shardBits % 31)}
		l.SequenceBits = 63 - l.TimeBits - l.ShardBits
		l.WorkerBits = int(workerBits) % max(l.SequenceBits, 1)
		if l.TimeBits < 1 || l.ShardBits < 1 || l.SequenceBits < 1 {
			t.Skip()
		}
		l = l.Normalized() // a zero WorkerBits is the default
		ticks &= 1<<l.TimeBits - 1
		shard &= 1<<l.ShardBits - 1
		seq &= 1<<l.SequenceBits - 1
		id := l.ComposeTicks(ticks, shard, seq)
		if id < 0 {
			t.Fatalf("negative ID %d", id)
		}
		p := l.Decode(id)
		seqOnly := l.SequenceBits - l.WorkerBits
		if p.Ticks != ticks || p.Shard != shard || p.Sequence != seq || p.Worker<<seqOnly|p.WorkerSequence != seq {
			t.Fatalf("%+v: compose(%d, %d, %d) decodes to %+v", l, ticks, shard, seq, p)
		}
		if l.Shard(id) != int(id>>l.SequenceBits&(1<<l.ShardBits-1)) {
			t.Fatal("shard not at its fixed position")
		}
	})
}

// oneWorker is the default layout with no snowflake worker bits: the whole
// sequence field counts IDs within a tick.
var oneWorker = Layout{WorkerBits: NoWorkerBits}

// A partly given layout fills the rest as Layout's documentation says, and a
// layout normalized twice stays the same.
func TestLayoutFillsWhatIsUnset(t *testing.T) {
	cases := []struct {
		given            Layout
		time, shard, seq int
		worker           int
	}{
		{Layout{}, 40, 13, 10, 6},
		{Layout{ShardBits: 12}, 40, 12, 11, 6},
		{Layout{SequenceBits: 12}, 40, 11, 12, 6},
		{Layout{TimeBits: 41}, 41, 13, 9, 5},
		{Layout{TimeBits: 41, SequenceBits: 12}, 41, 10, 12, 6},
		{Layout{ShardBits: 8, SequenceBits: 6}, 49, 8, 6, 2},
		{Layout{WorkerBits: NoWorkerBits}, 40, 13, 10, 0},
		{Layout{WorkerBits: 3}, 40, 13, 10, 3},
	}
	for _, c := range cases {
		l := c.given.Normalized()
		if l.TimeBits != c.time || l.ShardBits != c.shard || l.SequenceBits != c.seq || l.WorkerBits != c.worker {
			t.Errorf("%+v: %d/%d/%d worker %d, want %d/%d/%d worker %d", c.given, l.TimeBits, l.ShardBits, l.SequenceBits, l.WorkerBits, c.time, c.shard, c.seq, c.worker)
		}
		if err := c.given.Validate(now); err != nil {
			t.Errorf("%+v: %v", c.given, err)
		}
		if again := l.Normalized(); again != l {
			t.Errorf("%+v normalized twice: %+v, then %+v", c.given, l, again)
		}
	}
}

// TestLayoutCheckRefusesFarTicksOfACoarseUnit: a tick of a day late in a
// 40-bit field is past what a time in milliseconds holds; Check still sees
// it is after now.
func TestLayoutCheckRefusesFarTicksOfACoarseUnit(t *testing.T) {
	l := Layout{TimeUnit: 24 * time.Hour}
	if err := l.Validate(now); err != nil {
		t.Fatal(err)
	}
	for _, ticks := range []int64{1 << 39, 1<<40 - 1, l.Ticks(now) + 2} {
		if err := l.Check(l.ComposeTicks(ticks, 1, 1), now); !errors.Is(err, ErrInvalidID) {
			t.Errorf("an ID of tick %d, past now: Check = %v, want ErrInvalidID", ticks, err)
		}
	}
	if err := l.Check(l.Compose(now, 1, 1), now); err != nil {
		t.Errorf("an ID of now: %v", err)
	}
	if got := l.TimeOf(1<<40 - 1); !got.After(now.AddDate(1000, 0, 0)) {
		t.Errorf("TimeOf the last tick = %s, want far in the future", got)
	}
}

// TestLayoutCheckSaysHowFarAheadAnIDMayBe: an ID timed two days ahead is
// refused with the day of slack in the error, not as merely "after now",
// which an ID an hour ahead (accepted) also is.
func TestLayoutCheckSaysHowFarAheadAnIDMayBe(t *testing.T) {
	l := Layout{}
	if err := l.Check(l.Compose(now.Add(time.Hour), 1, 1), now); err != nil {
		t.Errorf("an ID an hour ahead: %v", err)
	}
	err := l.Check(l.Compose(now.Add(48*time.Hour), 1, 1), now)
	if !errors.Is(err, ErrInvalidID) || !strings.Contains(err.Error(), "more than 24h0m0s after now") {
		t.Errorf("an ID two days ahead: %v, want ErrInvalidID saying more than 24h0m0s after now", err)
	}
}

// TestLayoutComposeOutsideTheTimeFieldGivesZero: a time before the epoch,
// or past the field's end, would wrap into an ID of another time; Compose
// gives 0 instead, which Check refuses.
func TestLayoutComposeOutsideTheTimeFieldGivesZero(t *testing.T) {
	l := Layout{}
	for _, at := range []time.Time{DefaultEpoch.Add(-time.Millisecond), l.RunsOut(), l.RunsOut().Add(time.Duration(1<<40) * time.Millisecond)} {
		if id := l.Compose(at, 1, 1); id != 0 || l.Check(id, now) == nil {
			t.Errorf("Compose(%s) = %d, want 0, which Check refuses", at, id)
		}
	}
	if id := l.Compose(l.RunsOut().Add(-time.Millisecond), 1, 1); id <= 0 {
		t.Errorf("Compose of the last millisecond = %d, want an ID", id)
	}
}

// TestLayoutHelpersDoNotPanicOnLayoutsValidateRefuses: Validate is where a
// layout's errors are told; its helpers, called on a bad layout, answer
// without a panic.
func TestLayoutHelpersDoNotPanicOnLayoutsValidateRefuses(t *testing.T) {
	for _, l := range []Layout{
		{TimeBits: -1, ShardBits: 54, SequenceBits: 10},
		{TimeBits: 40, ShardBits: -3, SequenceBits: 26},
		{TimeBits: 40, ShardBits: 30, SequenceBits: -7},
		{WorkerBits: -5},
		{WorkerBits: 12},
		{TimeBits: 63, ShardBits: 70, SequenceBits: 64},
		{TimeUnit: time.Microsecond},
		{TimeUnit: -time.Hour},
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%+v: a helper panics: %v", l, r)
				}
			}()
			if l.Validate(now) == nil {
				t.Errorf("%+v: Validate accepts it", l)
			}
			id := l.Compose(now, 1, 1)
			_ = l.Check(id, now)
			_ = l.Check(1<<62|12345, now)
			_ = l.Decode(1<<62 | 12345)
			_, _, _, _ = l.ShardCount(), l.WorkerCount(), l.IDsPerTick(), l.WorkerIDsPerTick()
			_, _, _ = l.RunsOut(), l.Shard(1<<62|12345), l.TimeOf(1<<50)
		}()
	}
}
