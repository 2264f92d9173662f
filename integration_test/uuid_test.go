package integration

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/strategies"
)

// Models keyed by UUIDs that carry their logical shard.
type (
	document struct {
		ID    string `gorm:"size:36" shardid:"strategy:uuidv7"`
		Title string
		Notes []note
	}
	note struct {
		ID         uuid.UUID `gorm:"type:varchar(36)" shardid:"strategy:uuidv4;colocate:DocumentID"`
		DocumentID string    `gorm:"size:36"`
		Text       string
	}
)

// Rows keyed by UUIDs land on their shard's database and are read, updated
// and deleted by UUID like rows keyed by int64 IDs.
func TestUUIDKeysRouteLikeIDs(t *testing.T) {
	uuids, _ := strategies.NewUUIDs(strategies.Layout{})
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			r := newRouting(t, b)
			fresh(t, r.db, &document{}, &note{})
			physicalOf := func(id uuid.UUID) int {
				return uuids.Shard(id) * physicalShards / r.plugin.Layout().ShardCount()
			}
			onlyOn := func(model any, id uuid.UUID) {
				t.Helper()
				for i, db := range r.direct {
					var n int64
					must(t, db.Model(model).Where("id = ?", id.String()).Count(&n).Error)
					if want := int64(0); i == physicalOf(id) {
						want = 1
						if n != want {
							t.Fatalf("%T %s is not on physical %d, its shard's", model, id, i)
						}
					} else if n != want {
						t.Fatalf("%T %s is also on physical %d", model, id, i)
					}
				}
			}
			docs := make([]document, 24)
			for i := range docs {
				docs[i] = document{Title: "d", Notes: []note{{Text: "a"}, {Text: "b"}}}
			}
			must(t, r.db.Create(&docs).Error)
			spread := map[int]bool{}
			for _, d := range docs {
				id := uuid.MustParse(d.ID)
				if id.Version() != 7 {
					t.Fatalf("document ID %s is not a v7 UUID", d.ID)
				}
				spread[physicalOf(id)] = true
				onlyOn(&document{}, id)
				for _, n := range d.Notes {
					if n.ID.Version() != 4 || uuids.Shard(n.ID) != uuids.Shard(id) || n.DocumentID != d.ID {
						t.Fatalf("note %s of %s: not a v4 UUID in its document's shard", n.ID, d.ID)
					}
					onlyOn(&note{}, n.ID)
				}
			}
			if len(spread) < 2 {
				t.Fatal("24 documents all landed on one physical database")
			}
			if s := r.plugin.Stats(); s[strategies.NameUUIDv7].Issued != 24 || s[strategies.NameUUIDv4].Issued != 48 {
				t.Fatalf("UUIDs issued: v7 %d, v4 %d; want 24 and 48", s[strategies.NameUUIDv7].Issued, s[strategies.NameUUIDv4].Issued)
			}

			var got document
			must(t, r.db.Preload("Notes").First(&got, "id = ?", docs[5].ID).Error)
			if got.Title != "d" || len(got.Notes) != 2 {
				t.Fatalf("read back %+v", got)
			}
			var n note
			must(t, r.db.First(&n, "id = ?", docs[7].Notes[1].ID).Error) // a uuid.UUID condition
			if n.Text != "b" {
				t.Fatalf("note read back as %+v", n)
			}
			var some []document
			ids := []string{docs[0].ID, docs[1].ID, docs[2].ID, docs[3].ID}
			must(t, r.db.Where("id IN ?", ids).Find(&some).Error)
			if len(some) != 4 {
				t.Fatalf("IN over 4 UUIDs found %d rows", len(some))
			}
			must(t, r.db.Model(&document{ID: docs[9].ID}).Update("title", "renamed").Error)
			var renamed document
			must(t, r.db.First(&renamed, "id = ?", docs[9].ID).Error)
			if renamed.Title != "renamed" {
				t.Fatalf("update by UUID: title %q", renamed.Title)
			}
			must(t, r.db.Delete(&document{ID: docs[10].ID}).Error)
			if err := r.db.First(&document{}, "id = ?", docs[10].ID).Error; !errors.Is(err, gorm.ErrRecordNotFound) {
				t.Fatalf("after delete by UUID: %v", err)
			}

			// v7 UUIDs ascend in the order they were made: the merged order is the creation order.
			var ordered []document
			must(t, r.db.Clauses(shardid.AllShards()).Order("id").Find(&ordered).Error)
			want := slices.DeleteFunc(slices.Clone(docs), func(d document) bool { return d.ID == docs[10].ID })
			if len(ordered) != len(want) {
				t.Fatalf("AllShards found %d documents, want %d", len(ordered), len(want))
			}
			for i := range want {
				if ordered[i].ID != want[i].ID {
					t.Fatalf("merged order differs at %d: %s, want %s", i, ordered[i].ID, want[i].ID)
				}
			}
			if err := r.db.Find(&some).Error; !errors.Is(err, shardid.ErrNoShard) {
				t.Fatalf("a query with no UUID: %v, want ErrNoShard", err)
			}
			if err := r.db.First(&document{}, "id = ?", "not-a-uuid").Error; !errors.Is(err, shardid.ErrNoShard) {
				t.Fatalf("a query by a malformed UUID: %v, want ErrNoShard", err)
			}
		})
	}
}

// ByID takes a UUID, as text, as uuid.UUID or as [16]byte, and names its
// shard: a transaction begun with it is on the row's database.
func TestByIDTakesAUUID(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &document{}, &note{})
		docs := make([]document, 12)
		for i := range docs {
			docs[i].Title = "d"
		}
		must(t, r.db.Create(&docs).Error)
		for _, d := range docs {
			id := uuid.MustParse(d.ID)
			for _, clause := range []shardid.Clause{shardid.ByID(d.ID), shardid.ByID(id), shardid.ByID([16]byte(id))} {
				err := r.db.Clauses(clause).Transaction(func(tx *gorm.DB) error {
					n := note{DocumentID: d.ID, Text: "in the document's transaction"}
					if err := tx.Create(&n).Error; err != nil {
						return err
					}
					var got []document
					if err := tx.Raw("SELECT id, title FROM documents WHERE id = ?", d.ID).Scan(&got).Error; err != nil || len(got) != 1 {
						return errors.Join(err, errors.New("the document is not in the transaction's database"))
					}
					return nil
				})
				must(t, err)
			}
		}
		if err := r.db.Clauses(shardid.ByID("not a uuid")).First(&document{}).Error; !errors.Is(err, shardid.ErrNoShard) {
			t.Fatalf("ByID of text that is no UUID: %v, want ErrNoShard", err)
		}
	})
}

type typedUUIDRow struct {
	ID uuid.UUID `gorm:"type:uuid" shardid:"strategy:uuidv4"`
	G  int64     `gorm:"not null"`
}

// TestMariaDBsUUIDTypeMergesInItsOwnOrder: MariaDB's UUID type orders a v4
// UUID by its segments from last to first: merged over four databases, the
// rows ordered by the key, the first and last of them, and FindInBatches
// (which pages by id > the last one read, as the server compares it) equal
// one database's, even where each part holds a single row.
func TestMariaDBsUUIDTypeMergesInItsOwnOrder(t *testing.T) {
	b := backends[1]
	if b.name != "mariadb" {
		t.Fatalf("backends[1] is %s", b.name)
	}
	requireDSN(t, mysqlDSNVar)
	entries := func() any { return &[]typedUUIDRow{} }
	one := func() any { return &typedUUIDRow{} }
	few := newTwin(t, b, &typedUUIDRow{}, nil, []typedUUIDRow{{G: 1}, {G: 2}, {G: 3}, {G: 4}}, []int{0, 1, 2, 3})
	few.same(t, "rows ordered by the key, one per database", func(db *gorm.DB, into any) *gorm.DB { return db.Order("id").Find(into) }, entries)
	var rows []typedUUIDRow
	for i := range 24 {
		rows = append(rows, typedUUIDRow{G: int64(i % 3)})
	}
	tw := newTwin(t, b, &typedUUIDRow{}, nil, rows, []int{0, 1, 2, 3})
	tw.same(t, "rows ordered by the key", func(db *gorm.DB, into any) *gorm.DB { return db.Order("id").Find(into) }, entries)
	tw.same(t, "rows ordered by g, then the key", func(db *gorm.DB, into any) *gorm.DB { return db.Order("g desc, id").Limit(9).Find(into) }, entries)
	tw.same(t, "First", func(db *gorm.DB, into any) *gorm.DB { return db.First(into) }, one)
	tw.same(t, "Last", func(db *gorm.DB, into any) *gorm.DB { return db.Last(into) }, one)
	for _, size := range []int{1, 5} {
		read := func(db *gorm.DB) []uuid.UUID {
			var batch []typedUUIDRow
			var ids []uuid.UUID
			must(t, db.Model(&typedUUIDRow{}).FindInBatches(&batch, size, func(*gorm.DB, int) error {
				for _, r := range batch {
					ids = append(ids, r.ID)
				}
				return nil
			}).Error)
			return ids
		}
		if want, got := read(tw.one), read(tw.sharded); !slices.Equal(want, got) {
			t.Errorf("FindInBatches of %d: one database reads %d rows, four %d:\n%v\n%v", size, len(want), len(got), want, got)
		}
	}
}
