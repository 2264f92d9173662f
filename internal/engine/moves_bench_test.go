package engine

import (
	"context"
	"fmt"
	"testing"
)

type benchNote struct {
	ID   int64 `shardid:""`
	Name string
}

// BenchmarkFanOutKeptToRanges prices the condition on the key's shard bits
// that keeps each part of a statement over every shard to its database's
// ranges (invariant 1 of docs/moves.md): a Find and a Count over two SQLite
// databases of 1000 rows each, with and without it, interleaved by -count.
func BenchmarkFanOutKeptToRanges(b *testing.B) {
	db, e := openEngine(b, Config{}, true)
	must(b, e.Migrator(db).AutoMigrate(&benchNote{}))
	half := e.Layout().ShardCount() / 2
	for _, shard := range []int{0, half} {
		notes := make([]benchNote, 1000)
		for i := range notes {
			notes[i].Name = fmt.Sprint("n", i)
		}
		must(b, db.Clauses(hinted{OnShard(shard)}).CreateInBatches(&notes, 500).Error)
	}
	for _, kept := range []bool{true, false} {
		name := map[bool]string{true: "kept", false: "unrestricted"}[kept]
		b.Run("Find/"+name, func(b *testing.B) {
			keepToRanges = kept
			defer func() { keepToRanges = true }()
			for b.Loop() {
				var notes []benchNote
				must(b, db.Clauses(hinted{AllShards()}).Where("name = ?", "n7").Find(&notes).Error)
			}
		})
		b.Run("Count/"+name, func(b *testing.B) {
			keepToRanges = kept
			defer func() { keepToRanges = true }()
			for b.Loop() {
				var n int64
				must(b, db.Model(&benchNote{}).Clauses(hinted{AllShards()}).Count(&n).Error)
			}
		})
	}
	// The floor of a Count kept by any condition on each row's key: SQLite
	// counts a whole table from its b-tree, and any condition makes it read
	// every row.
	b.Run("Count/any-condition", func(b *testing.B) {
		keepToRanges = false
		defer func() { keepToRanges = true }()
		for b.Loop() {
			var n int64
			must(b, db.Model(&benchNote{}).Clauses(hinted{AllShards()}).Where("id + 0 <> 0").Count(&n).Error)
		}
	})
}

// BenchmarkZeroRowWriteCheck prices the read of the source's fence after an
// update that found no row (invariant 2 of docs/moves.md): an update that
// found its row reads nothing more; one that found none costs about one
// indexed read (the third benchmark) more.
func BenchmarkZeroRowWriteCheck(b *testing.B) {
	db, e := openEngine(b, Config{}, true)
	must(b, e.Migrator(db).AutoMigrate(&benchNote{}))
	note := benchNote{Name: "found"}
	must(b, db.Clauses(hinted{OnShard(1)}).Create(&note).Error)
	f := e.fence()
	pool, err := e.pool(context.Background(), 0)
	must(b, err)
	opened, err := e.physical[0].open(context.Background())
	must(b, err)
	must(b, f.Prepare(context.Background(), opened.sqlDB)) // a database a move fenced once: the read finds the table
	missing := note.ID + 1                                 // same shard, no row
	b.Run("found", func(b *testing.B) {
		for b.Loop() {
			must(b, db.Model(&benchNote{ID: note.ID}).Update("name", "found").Error)
		}
	})
	b.Run("not-found", func(b *testing.B) {
		for b.Loop() {
			must(b, db.Model(&benchNote{ID: missing}).Update("name", "missing").Error)
		}
	})
	b.Run("one-indexed-read", func(b *testing.B) {
		for b.Loop() {
			_, err := f.Sealed(context.Background(), pool)
			must(b, err)
		}
	})
}
