package integration

import (
	"errors"
	"strings"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// rawLookup is an unsharded model with an index, for GORM's own migrator SQL.
type rawLookup struct {
	ID   int64
	Code string `gorm:"index;size:32"`
	Note string `gorm:"size:64"`
}

// hiddenSharded returns SQL that names the sharded table authors behind a
// comment, a quote, a schema or a statement form, in b's dialect, each of
// which would delete, change or lock rows, or alter the table.
func hiddenSharded(b backend) []string {
	quoted := `"authors"`
	qualified := `"public"."authors"`
	switch b.name {
	case "mariadb":
		quoted, qualified = "`authors`", "`app`.`authors`"
	case "sqlite":
		qualified = `"main"."authors"`
	}
	list := []string{
		"DELETE FROM /* a comment */ authors",
		"DELETE FROM -- a comment\nauthors",
		"DELETE FROM " + quoted,
		"DELETE FROM " + qualified,
		"DELETE FROM AUTHORS",
		"UPDATE " + qualified + " SET name = 'z'",
		"UPDATE settings SET value = 'authors'; DELETE FROM authors",
		"DELETE FROM settings WHERE id IN (SELECT id FROM " + quoted + ")",
		"TRUNCATE authors",
		"TRUNCATE TABLE " + qualified,
		"CREATE INDEX idx_raw_hidden ON " + quoted + " (name)",
		"ALTER TABLE " + qualified + " ADD COLUMN age integer",
		"DROP TABLE " + quoted,
	}
	switch b.name {
	case "mariadb":
		list = append(list,
			"DELETE FROM # a comment\nauthors",
			"DELETE /*!50001 FROM authors */",
			"DELETE FROM app.authors",
			`DELETE FROM "authors"`, // a string, or under ANSI_QUOTES a table
			"DELETE t FROM authors t JOIN settings s ON s.id = t.id",
			"LOCK TABLES authors WRITE",
		)
	case "postgres":
		list = append(list,
			"DELETE FROM authors WHERE name <> $$ it's $$",
			"DO $$ BEGIN DELETE FROM authors; END $$", // not read, and names it
			"COPY authors FROM STDIN",
			"DELETE FROM settings USING authors WHERE settings.id = authors.id",
		)
	case "sqlite":
		list = append(list, "DELETE FROM [authors]", "DELETE FROM `authors`")
	}
	return list
}

func TestRawSQLHidingAShardedTableIsRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		all, _, _ := r.spreadAuthors(t, func() author { return author{Name: "kept"} })
		// A copy of the sharded table on the plugin's database, as a plain
		// db.AutoMigrate makes: the SQL must not reach it either.
		main, err := r.db.DB()
		if err != nil {
			t.Fatal(err)
		}
		_, _ = main.Exec("DROP TABLE IF EXISTS authors") // left by an interrupted run
		if _, err := main.Exec("CREATE TABLE authors (id bigint PRIMARY KEY, name varchar(64))"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = main.Exec("DROP TABLE authors") })
		if _, err := main.Exec("INSERT INTO authors (id, name) VALUES (1, 'decoy')"); err != nil {
			t.Fatal(err)
		}
		for _, sql := range hiddenSharded(b) {
			err := r.db.Exec(sql).Error
			if !errors.Is(err, shardid.ErrNoShard) {
				t.Errorf("%q: got %v, want ErrNoShard", sql, err)
			}
		}
		var decoys int
		if err := main.QueryRow("SELECT count(*) FROM authors WHERE name = 'decoy'").Scan(&decoys); err != nil || decoys != 1 {
			t.Errorf("the plugin's database: %d decoy rows (%v)", decoys, err)
		}
		if _, err := main.Exec("SELECT age FROM authors"); err == nil {
			t.Error("the plugin's database: authors was altered")
		}
		if _, err := main.Exec("CREATE INDEX idx_raw_hidden ON authors (name)"); err != nil {
			t.Errorf("the plugin's database: the index was made: %v", err)
		}
		// Nothing changed on any physical database.
		for _, a := range all {
			r.mustBeOnItsShard(t, &author{}, a.ID)
		}
		for i, db := range r.direct {
			var renamed int64
			if err := db.Model(&author{}).Where("name <> ?", "kept").Count(&renamed).Error; err != nil || renamed != 0 {
				t.Errorf("physical %d: %d authors renamed (%v)", i, renamed, err)
			}
			if db.Migrator().HasColumn(&author{}, "age") || db.Migrator().HasIndex(&author{}, "idx_raw_hidden") {
				t.Errorf("physical %d: authors was altered", i)
			}
		}
	})
}

func TestRawSQLWithoutAShardedTableRunsAsWithoutThePlugin(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		if err := r.db.Create(&setting{Value: "v"}).Error; err != nil {
			t.Fatal(err)
		}
		queries := []string{
			"SELECT 1",
			"SELECT value AS authors FROM settings WHERE value <> 'FROM authors' /* FROM authors */",
		}
		switch b.name {
		case "mariadb":
			queries = append(queries, "SELECT 1 FROM DUAL", "SHOW TABLES", "SELECT value FROM settings # FROM authors")
		case "postgres":
			queries = append(queries, "SELECT $$FROM authors$$", "SHOW search_path", "SELECT count(*) FROM pg_catalog.pg_tables WHERE tablename = 'authors'")
		case "sqlite":
			queries = append(queries, "PRAGMA foreign_keys", "SELECT count(*) FROM sqlite_master WHERE name = 'authors'")
		}
		for _, sql := range queries {
			var rows []map[string]any
			if err := r.db.Raw(sql).Scan(&rows).Error; err != nil {
				t.Errorf("%q: %v", sql, err)
			}
		}

		// GORM's migrator SQL on an unsharded model, through the plugin's database.
		m := r.db.Migrator()
		steps := []struct {
			name string
			run  func() error
		}{
			{"DropTable", func() error { return m.DropTable(&rawLookup{}) }},
			{"CreateTable", func() error { return m.CreateTable(&rawLookup{}) }},
			{"AutoMigrate", func() error { return r.db.AutoMigrate(&rawLookup{}) }},
			{"HasTable", func() error { return must2(m.HasTable(&rawLookup{}), "HasTable") }},
			{"HasColumn", func() error { return must2(m.HasColumn(&rawLookup{}, "code"), "HasColumn") }},
			{"HasIndex", func() error { return must2(m.HasIndex(&rawLookup{}, "Code"), "HasIndex") }},
			{"DropIndex", func() error { return m.DropIndex(&rawLookup{}, "Code") }},
			{"CreateIndex", func() error { return m.CreateIndex(&rawLookup{}, "Code") }},
			{"AlterColumn", func() error { return m.AlterColumn(&rawLookup{}, "Note") }},
			{"RenameColumn", func() error { return m.RenameColumn(&rawLookup{}, "note", "remark") }},
			{"RenameColumn back", func() error { return m.RenameColumn(&rawLookup{}, "remark", "note") }},
			{"DropColumn", func() error { return m.DropColumn(&rawLookup{}, "Note") }},
			{"AddColumn", func() error { return m.AddColumn(&rawLookup{}, "Note") }},
			{"ColumnTypes", func() error { _, err := m.ColumnTypes(&rawLookup{}); return err }},
			{"GetIndexes", func() error { _, err := m.GetIndexes(&rawLookup{}); return err }},
			{"GetTables", func() error { _, err := m.GetTables(); return err }},
			{"HasTable of a sharded model", func() error { m.HasTable(&author{}); return r.db.Error }},
			{"DropTable", func() error { return m.DropTable(&rawLookup{}) }},
		}
		t.Run("migrator", func(t *testing.T) {
			for _, step := range steps {
				if err := step.run(); err != nil {
					t.Errorf("migrator %s: %v", step.name, err)
				}
			}
		})

		// GORM's savepoints: the nested transaction's rollback keeps the outer row only.
		err := r.db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(&setting{Value: "outer"}).Error; err != nil {
				return err
			}
			_ = tx.Transaction(func(inner *gorm.DB) error {
				if err := inner.Create(&setting{Value: "inner"}).Error; err != nil {
					t.Error(err)
				}
				return errors.New("roll back to the savepoint")
			})
			return nil
		})
		var values []string
		r.db.Model(&setting{}).Order("value").Pluck("value", &values)
		if err != nil || strings.Join(values, ",") != "outer,v" {
			t.Errorf("nested transaction: %v, rows %q", err, values)
		}
	})
}

func must2(ok bool, what string) error {
	if !ok {
		return errors.New(what + " is false")
	}
	return nil
}

// rawHooked is a sharded model whose hook writes the unsharded settings
// table with raw SQL, on the connection of the hook's own statement.
type rawHooked struct {
	ID   int64 `shardid:""`
	Name string
}

func (h *rawHooked) AfterCreate(tx *gorm.DB) error {
	return tx.Exec("UPDATE settings SET value = ?", h.Name).Error
}

// TestRawSQLOnAnUnshardedTableFromAShardIsRefused: raw SQL naming an
// unsharded table, in a shard's transaction or given a shard clause, is
// refused; a hook's outside any transaction runs where the table is.
func TestRawSQLOnAnUnshardedTableFromAShardIsRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		if err := r.db.Create(&setting{Value: "before"}).Error; err != nil {
			t.Fatal(err)
		}
		for _, db := range r.direct { // the sharded table, on each physical database
			if err := db.Migrator().DropTable(&rawHooked{}); err != nil {
				t.Fatal(err)
			}
			if err := db.AutoMigrate(&rawHooked{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.db.Create(&rawHooked{Name: "hook"}).Error; !errors.Is(err, shardid.ErrCrossShard) {
			t.Errorf("raw SQL on an unsharded table in a hook: got %v, want ErrCrossShard", err)
		}
		for i, db := range r.direct {
			var n int64
			if err := db.Model(&rawHooked{}).Count(&n).Error; err != nil || n != 0 {
				t.Errorf("physical %d: %d rows kept of a refused create (%v)", i, n, err)
			}
		}
		// Without GORM's transaction the hook's statement inherits the shard's
		// pool, and leaves it for the plugin's database, where the table is.
		noTx := r.db.Session(&gorm.Session{SkipDefaultTransaction: true})
		hooked := rawHooked{Name: "hook"}
		if err := noTx.Create(&hooked).Error; err != nil {
			t.Errorf("raw SQL on an unsharded table in a hook, without a transaction: %v", err)
		}
		var s setting
		if err := r.db.First(&s).Error; err != nil || s.Value != "hook" {
			t.Errorf("the hook's update of the unsharded row: %v, %q", err, s.Value)
		}
		r.mustBeOnItsShard(t, &rawHooked{}, hooked.ID)
		must(t, r.db.Model(&setting{}).Where("id = ?", s.ID).Update("value", "before").Error)
		a := author{Name: "a"}
		if err := r.db.Create(&a).Error; err != nil {
			t.Fatal(err)
		}
		if err := r.db.Clauses(shardid.ByID(a.ID)).Exec("UPDATE settings SET value = 'x'").Error; !errors.Is(err, shardid.ErrCrossShard) {
			t.Errorf("with a shard clause: got %v, want ErrCrossShard", err)
		}
		err := r.db.Clauses(shardid.ByID(a.ID)).Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("UPDATE authors SET name = 'renamed' WHERE id = ?", a.ID).Error; err != nil {
				return err // the shard's own table is fine in its transaction
			}
			return tx.Exec("UPDATE /* c */ settings SET value = 'x'").Error
		})
		if !errors.Is(err, shardid.ErrCrossShard) {
			t.Errorf("in a shard's transaction: got %v, want ErrCrossShard", err)
		}
		if err := r.db.First(&s).Error; err != nil || s.Value != "before" {
			t.Errorf("the unsharded row: %v, %q", err, s.Value)
		}
		var got author
		if err := r.db.Where("id = ?", a.ID).First(&got).Error; err != nil || got.Name != "a" {
			t.Errorf("the transaction was not rolled back: %v, %q", err, got.Name)
		}
	})
}

type revRawItem struct {
	ID   int64 `shardid:""`
	Name string
}

// MySQL reads ".1FROM t" as the number .1 and FROM t; a tokenizer taking the
// dot after SELECT for a qualifier's and "1FROM" for an identifier would find
// no table and run the raw SQL on the plugin's database: it is refused.
func TestRawNumberBeforeFromDoesNotHideTheTable(t *testing.T) {
	b := backends[1] // mariadb
	dir := t.TempDir()
	db := open(t, b, dir, shardid.Config{Shards: shards(t, b, dir)})
	fresh(t, db, &revRawItem{})
	// A copy of the table on the plugin's own database, as plain db.AutoMigrate leaves it.
	plain, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Exec("CREATE TABLE IF NOT EXISTS rev_raw_items (id bigint primary key, name text)").Error; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Exec("DROP TABLE rev_raw_items") })
	for _, sql := range []string{"SELECT name FROM rev_raw_items", "SELECT .1FROM rev_raw_items"} {
		var out []map[string]any
		err := db.Raw(sql).Scan(&out).Error
		if !errors.Is(err, shardid.ErrNoShard) {
			t.Errorf("%s: got %v (%d rows), want ErrNoShard", sql, err, len(out))
		}
	}
}
