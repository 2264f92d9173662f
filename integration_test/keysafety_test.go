package integration

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// Models of the key-safety suite: their hooks change what places a row.
type (
	// normalTenant lower-cases its hash key in BeforeCreate, after the plugin
	// chose its shard from the key as given.
	normalTenant struct {
		ID   int64 `shardid:"hash:Code"`
		Code string
	}
	// movingBook moves itself to another author in BeforeUpdate.
	movingBook struct {
		ID       int64 `shardid:"colocate:AuthorID"`
		AuthorID int64
		Title    string
		moveTo   int64
		setTo    int64
	}
	// seat has a unique column besides its key: an upsert may conflict on it.
	seat struct {
		ID       int64 `shardid:"colocate:AuthorID"`
		AuthorID int64
		Code     string `gorm:"uniqueIndex;size:64"`
	}
	// coach has enrollments, unique per coach and course: the index holds the
	// colocate column that GORM's association save upserts.
	coach struct {
		ID          int64 `shardid:""`
		Enrollments []enrollment
	}
	enrollment struct {
		ID      int64  `shardid:"colocate:CoachID"`
		CoachID int64  `gorm:"uniqueIndex:coach_course"`
		Course  string `gorm:"uniqueIndex:coach_course;size:64"`
	}
)

func (t *normalTenant) BeforeCreate(*gorm.DB) error {
	t.Code = strings.ToLower(t.Code)
	return nil
}

func (b *movingBook) BeforeUpdate(tx *gorm.DB) error {
	if b.moveTo != 0 {
		b.AuthorID = b.moveTo
	}
	if b.setTo != 0 {
		tx.Statement.SetColumn("AuthorID", b.setTo)
	}
	return nil
}

// keys is a routing setup that can also read the plugin's own database
// directly.
type keys struct {
	*routing
	main *gorm.DB // the plugin's database, without the plugin
}

func newKeys(t *testing.T, b backend) *keys {
	t.Helper()
	dir := t.TempDir()
	mainDB, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	p := shardid.New(shardid.Config{Shards: shards(t, b, dir), Atomic: b.atomicity()})
	firstStart(t, mainDB)
	if err := mainDB.Use(p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	plain, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := plain.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	k := &keys{routing: &routing{b: b, db: mainDB, direct: direct(t, b, dir), plugin: p}, main: plain}
	fresh(t, mainDB, &author{}, &book{}, &tenant{}, &setting{})
	return k
}

// snapshot returns every row of the tables of models on every database, the
// plugin's own one first, to compare before and after a refused statement.
func (k *keys) snapshot(t *testing.T, models ...any) string {
	t.Helper()
	var out strings.Builder
	for i, db := range append([]*gorm.DB{k.main}, k.direct...) {
		for _, model := range models {
			if !db.Migrator().HasTable(model) {
				continue
			}
			var rows []map[string]any
			if err := db.Model(model).Order("id").Find(&rows).Error; err != nil {
				t.Fatalf("snapshot of %T on database %d: %v", model, i, err)
			}
			fmt.Fprintf(&out, "%d %T %v\n", i, model, rows)
		}
	}
	return out.String()
}

// refused runs each statement and fails unless it returned want and changed
// no row of models on any database.
func (k *keys) refused(t *testing.T, want error, models []any, statements map[string]func() error) {
	t.Helper()
	names := make([]string, 0, len(statements))
	for name := range statements {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		before := k.snapshot(t, models...)
		if err := statements[name](); !errors.Is(err, want) {
			t.Errorf("%s: got %v, want %v", name, err, want)
		}
		if after := k.snapshot(t, models...); after != before {
			t.Errorf("%s was refused but changed rows:\nbefore %s\nafter  %s", name, before, after)
		}
	}
}

// idOfShardOf returns another valid ID on the shard of id: made now, with a
// sequence no strategy has used yet.
func (r *routing) idOfShardOf(id int64) int64 {
	l := r.plugin.Layout()
	return l.Compose(time.Now().Add(-time.Second), l.Shard(id), l.IDsPerTick()-1)
}

func TestKeySafetyUpdates(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		k := newKeys(t, b)
		fresh(t, k.db, &movingBook{})
		_, x, y := k.spreadAuthors(t, func() author { return author{Name: "a"} })
		bk := book{AuthorID: x.ID, Title: "t"}
		mb := movingBook{AuthorID: x.ID, Title: "m"}
		must(t, k.db.Create(&bk).Error)
		must(t, k.db.Create(&mb).Error)
		ofY := book{AuthorID: y.ID, Title: "of y"}
		must(t, k.db.Create(&ofY).Error)
		tn := tenant{Code: "tenant"}
		must(t, k.db.Create(&tn).Error)
		count := k.plugin.Layout().ShardCount()
		newCode := ""
		for i := 0; newCode == ""; i++ { // a key of another shard than the tenant's
			h, err := shardid.HashKey(fmt.Sprintf("moved-%d", i))
			must(t, err)
			if int(h%uint64(count)) != k.plugin.Layout().Shard(tn.ID) {
				newCode = fmt.Sprintf("moved-%d", i)
			}
		}
		models := []any{&author{}, &book{}, &movingBook{}, &tenant{}}
		copyOf := func(a author) *author { return &a }
		k.refused(t, shardid.ErrCrossShard, models, map[string]func() error{
			"Updates(&map) of the key": func() error {
				return k.db.Model(copyOf(x)).Updates(&map[string]any{"id": y.ID}).Error
			},
			"Update of the quoted key": func() error {
				return k.db.Model(&author{}).Where("id = ?", x.ID).Update(quoted(b, "id"), x.ID+1).Error
			},
			`Select("*").Updates(T{Name}) writes id = 0`: func() error {
				return k.db.Model(copyOf(x)).Select("*").Updates(author{Name: "x"}).Error
			},
			"UpdateColumn of the colocate column": func() error {
				return k.db.Model(&book{ID: bk.ID}).UpdateColumn("author_id", y.ID).Error
			},
			"UpdateColumns(map) of the colocate column": func() error {
				return k.db.Model(&book{ID: bk.ID}).UpdateColumns(map[string]any{"author_id": y.ID}).Error
			},
			"UpdateColumns(struct) of the colocate column": func() error {
				return k.db.Model(&book{ID: bk.ID}).UpdateColumns(book{AuthorID: y.ID}).Error
			},
			"gorm.Expr for the colocate column": func() error {
				return k.db.Model(&book{ID: bk.ID}).Update("author_id", gorm.Expr("author_id + 1")).Error
			},
			"clause.Set of the colocate column": func() error {
				return k.db.Model(&book{ID: bk.ID}).Clauses(clause.Set{{Column: clause.Column{Name: "author_id"}, Value: y.ID}}).Updates(map[string]any{"title": "s"}).Error
			},
			"Save of a moved row": func() error {
				moved := bk
				moved.AuthorID = y.ID
				return k.db.Save(&moved).Error
			},
			"Save with a new hash key": func() error {
				moved := tn
				moved.Code = newCode
				return k.db.Save(&moved).Error
			},
			"Update of the hash column": func() error { return k.db.Model(&tenant{ID: tn.ID}).Update("code", newCode).Error },
			"Session(SkipHooks).Save of a moved row": func() error {
				moved := bk
				moved.AuthorID = y.ID
				return k.db.Session(&gorm.Session{SkipHooks: true}).Save(&moved).Error
			},
			"Session(FullSaveAssociations) of an author given a book of another shard": func() error {
				owner := x
				owner.Books = []book{ofY}
				return k.db.Session(&gorm.Session{FullSaveAssociations: true}).Save(&owner).Error
			},
			"a BeforeUpdate hook that moves the row (Save)": func() error {
				moved := mb
				moved.moveTo = y.ID
				return k.db.Save(&moved).Error
			},
			"a BeforeUpdate hook that sets the colocate column (SetColumn)": func() error {
				moved := mb
				moved.setTo = y.ID
				return k.db.Model(&moved).Update("title", "hooked").Error
			},
			"a BeforeUpdate hook that moves the row (Updates)": func() error {
				moved := mb
				moved.moveTo = y.ID
				return k.db.Model(&moved).Select("*").Updates(&moved).Error
			},
		})
		var back author
		must(t, k.db.First(&back, x.ID).Error)
		if back.Name != "a" {
			t.Fatalf("a refused update wrote %q", back.Name)
		}

		// What keeps the row on its shard still runs.
		sameShard := bk
		sameShard.AuthorID = k.idOfShardOf(x.ID)
		must(t, k.db.Save(&sameShard).Error)
		must(t, k.db.Model(&book{ID: bk.ID}).UpdateColumn("author_id", x.ID).Error)
		must(t, k.db.Model(copyOf(x)).Updates(map[string]any{"id": x.ID, "name": "same key"}).Error)
		must(t, k.db.Save(&[]book{{ID: bk.ID, AuthorID: x.ID, Title: "saved slice"}}).Error)
		k.mustBeOnItsShard(t, &book{}, int64(bk.ID))
		var got book
		must(t, k.db.First(&got, bk.ID).Error)
		if got.Title != "saved slice" || got.AuthorID != x.ID {
			t.Fatalf("after the allowed updates: %+v", got)
		}
	})
}

// quoted quotes a column the way the backend does.
func quoted(b backend, column string) string {
	if b.name == "mariadb" {
		return "`" + column + "`"
	}
	return `"` + column + `"`
}

func TestKeySafetyCreates(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		k := newKeys(t, b)
		fresh(t, k.db, &normalTenant{}, &seat{})
		_, x, y := k.spreadAuthors(t, func() author { return author{Name: "a"} })
		x2 := author{Name: "a"} // on x's database, on another logical shard (databases hold aligned ranges)
		must(t, k.db.Clauses(shardid.OnShard(k.plugin.Layout().Shard(x.ID)^1)).Create(&x2).Error)
		if k.physicalOf(x2.ID) != k.physicalOf(x.ID) || x2.ID == x.ID {
			t.Fatalf("author %d is not another on the database of %d", x2.ID, x.ID)
		}
		count := k.plugin.Layout().ShardCount()
		shardOfKey := func(key string) int {
			h, err := shardid.HashKey(key)
			must(t, err)
			return int(h % uint64(count))
		}
		// A key whose lower case hashes to a shard on another physical database.
		code := ""
		for i := 0; code == ""; i++ {
			c := fmt.Sprintf("MiXeD-%d", i)
			if k.physicalOfShard(shardOfKey(c)) != k.physicalOfShard(shardOfKey(strings.ToLower(c))) {
				code = c
			}
		}
		tn := tenant{Code: "t"}
		must(t, k.db.Create(&tn).Error)
		st := seat{AuthorID: x.ID, Code: "s1"}
		must(t, k.db.Create(&st).Error)
		models := []any{&author{}, &book{}, &tenant{}, &normalTenant{}, &seat{}}
		k.refused(t, shardid.ErrCrossShard, models, map[string]func() error{
			"a preset ID that disagrees with its colocate value": func() error {
				return k.db.Create(&book{ID: shardid.ID(k.idOfShardOf(y.ID)), AuthorID: x.ID}).Error
			},
			"a preset ID that disagrees with its hash value": func() error {
				return k.db.Create(&tenant{ID: k.idOfShardOf(y.ID), Code: "preset"}).Error
			},
			"a BeforeCreate hook that normalises the hash key": func() error {
				return k.db.Create(&normalTenant{Code: code}).Error
			},
			"upsert that rewrites the colocate column": func() error {
				return k.db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, DoUpdates: clause.Assignments(map[string]any{"author_id": y.ID})}).
					Create(&seat{ID: st.ID, AuthorID: x.ID, Code: "s1"}).Error
			},
			"upsert of the colocate column from the inserted row, conflicting on another key": func() error {
				return k.db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "code"}}, DoUpdates: clause.AssignmentColumns([]string{"author_id"})}).
					Create(&seat{AuthorID: x2.ID, Code: "s1"}).Error
			},
		})
		// MySQL's ON DUPLICATE KEY fires on any unique key: the plugin refuses
		// it; elsewhere GORM targets the primary key, and the database
		// refuses the other key's duplicate.
		before := k.snapshot(t, models...)
		err := k.db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&seat{AuthorID: x2.ID, Code: "s1"}).Error
		if errors.Is(err, shardid.ErrCrossShard) != (b.name == "mariadb") || err == nil {
			t.Errorf("UpdateAll upsert over another author's row by another unique key: %v", err)
		}
		if after := k.snapshot(t, models...); after != before {
			t.Errorf("the UpdateAll upsert by another unique key changed rows:\nbefore %s\nafter  %s", before, after)
		}
		k.refused(t, shardid.ErrCrossShard, models, map[string]func() error{
			"Table().Create(map) of an ID of another database": func() error {
				return k.db.Clauses(shardid.ByID(x.ID)).Table("authors").Create(map[string]any{"id": k.idOfShardOf(y.ID), "name": "m"}).Error
			},
			"Table().Create(map) whose colocate value disagrees": func() error {
				return k.db.Clauses(shardid.ByID(x.ID)).Table("books").Create(map[string]any{"id": k.idOfShardOf(x.ID), "author_id": y.ID}).Error
			},
			"Table().Update of the key": func() error {
				return k.db.Clauses(shardid.ByID(x.ID)).Table("authors").Where("id = ?", x.ID).Update("id", y.ID).Error
			},
		})
		k.refused(t, shardid.ErrNoShard, models, map[string]func() error{
			"Omit of the ID": func() error { return k.db.Omit("id").Create(&author{Name: "o"}).Error },
			"Table().Create(map) without an ID": func() error {
				return k.db.Clauses(shardid.ByID(x.ID)).Table("authors").Create(map[string]any{"name": "m"}).Error
			},
		})
		// GORM's "create with selected fields": the ID the plugin made goes in with them.
		selected := author{Name: "s"}
		must(t, k.db.Select("name").Create(&selected).Error)
		k.mustBeOnItsShard(t, &author{}, int64(selected.ID))
		mapped := k.idOfShardOf(x.ID)
		must(t, k.db.Clauses(shardid.ByID(x.ID)).Table("authors").Create(map[string]any{"id": mapped, "name": "mapped"}).Error)
		k.mustBeOnItsShard(t, &author{}, mapped)
		// A preset ID that agrees, and an upsert on the key alone, run.
		ok := book{ID: shardid.ID(k.idOfShardOf(x.ID)), AuthorID: x.ID, Title: "preset"}
		must(t, k.db.Create(&ok).Error)
		k.mustBeOnItsShard(t, &book{}, int64(ok.ID))
		ok.Title = "upserted"
		must(t, k.db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&ok).Error)
		var got book
		must(t, k.db.First(&got, ok.ID).Error)
		if got.Title != "upserted" {
			t.Fatalf("the upsert on the key wrote %q", got.Title)
		}
		lower := normalTenant{Code: strings.ToLower(code)}
		must(t, k.db.Create(&lower).Error)
		if where := k.where(t, &normalTenant{}, lower.ID); !slices.Equal(where, []int{k.physicalOfShard(shardOfKey(lower.Code))}) {
			t.Fatalf("the tenant is on %v", where)
		}
	})
}

func TestAssociationUpsertOnAUniqueKeyHoldingTheColocateColumn(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		k := newKeys(t, b)
		fresh(t, k.db, &coach{}, &enrollment{})
		for i := range 8 { // coaches over both databases
			c := coach{Enrollments: []enrollment{{Course: "go"}, {Course: "sql"}}}
			must(t, k.db.Create(&c).Error)
			var got coach
			must(t, k.db.Preload("Enrollments").First(&got, c.ID).Error)
			if len(got.Enrollments) != 2 {
				t.Fatalf("coach %d: %d enrollments", i, len(got.Enrollments))
			}
			for _, e := range c.Enrollments {
				k.mustBeOnItsShard(t, &enrollment{}, e.ID)
			}
			// Saving the coach again upserts the enrollments by their keys.
			must(t, k.db.Save(&c).Error)
		}
	})
}

// physicalOfShard is where logical shard s lives (see physicalOf).
func (r *routing) physicalOfShard(s int) int {
	return s * physicalShards / r.plugin.Layout().ShardCount()
}
