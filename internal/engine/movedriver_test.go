package engine

import (
	"errors"
	"testing"

	"github.com/shardid/shardid/internal/mover"
)

// TestHashShardOfStoredValuesIsTheShardOfTheKey: the mover's check hashes a
// hash column's value as the database driver reads it (text or bytes, an
// integer or its text, a UUID's 16 bytes or its text) to the logical shard
// the plugin places the Go key on, and refuses a value it cannot read.
func TestHashShardOfStoredValuesIsTheShardOfTheKey(t *testing.T) {
	d := moverDriver{p: &Engine{}}
	count := uint64(d.p.layout.ShardCount())
	want := func(key any) int {
		h, err := HashKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return int(h % count)
	}
	uuid := [16]byte{0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00}
	cases := []struct {
		table mover.Table
		value any
		want  int
	}{
		{mover.Table{HashKey: hashKeyText}, "dan@x.io", want("dan@x.io")},
		{mover.Table{HashKey: hashKeyText}, []byte("dan@x.io"), want("dan@x.io")},
		{mover.Table{HashKey: hashKeyText, HashLoose: true}, "DAN@X.io ", want(LooseKey("dan@x.io"))},
		{mover.Table{HashKey: hashKeyInt}, int64(-42), want(int64(-42))},
		{mover.Table{HashKey: hashKeyInt}, []byte("-42"), want(int64(-42))},
		{mover.Table{HashKey: hashKeyInt}, []byte("18446744073709551615"), want(uint64(18446744073709551615))},
		{mover.Table{HashKey: hashKeyBytes16}, uuid[:], want(uuid)},
		{mover.Table{HashKey: hashKeyBytes16}, "123e4567-e89b-12d3-a456-426614174000", want(uuid)},
	}
	for _, c := range cases {
		shardOf, err := d.HashShard(c.table)
		if err != nil || shardOf == nil {
			t.Fatalf("%+v: %v", c.table, err)
		}
		if got, err := shardOf(c.value); err != nil || got != c.want {
			t.Errorf("%s %v: shard %d %v, want %d", c.table.HashKey, c.value, got, err, c.want)
		}
	}
	shardOf, _ := d.HashShard(mover.Table{HashKey: hashKeyInt})
	if _, err := shardOf([]byte("x")); !errors.Is(err, mover.ErrInvalid) {
		t.Errorf("an integer key stored as x: %v, want mover.ErrInvalid", err)
	}
	if shardOf, err := d.HashShard(mover.Table{}); shardOf != nil || err != nil {
		t.Errorf("a table whose record does not say how its key is hashed: %v, want no check", err)
	}
}
