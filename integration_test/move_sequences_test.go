package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// SqItem has a column a sequence fills beside its key: a serial (an
// AUTO_INCREMENT on MariaDB) with a unique index.
type SqItem struct {
	ID   int64 `shardid:"strategy:snowflake"`
	Seq  int64 `gorm:"autoIncrement;uniqueIndex"`
	Name string
}

// SqIdentity has a PostgreSQL identity column GENERATED ALWAYS, made below.
type SqIdentity struct {
	ID   int64 `shardid:"strategy:snowflake"`
	Num  int64 `gorm:"->;-:migration"`
	Name string
}

// TestMoveLeavesTheTargetsSequencesPastTheCopiedValues: a move copies the
// values of columns a sequence fills (serial, identity, AUTO_INCREMENT),
// GENERATED ALWAYS ones among them, updated during the copy, and leaves the
// target's sequences past them: rows created there after the move take new
// values, as on one database, not the copied rows' again; so do those of a
// sequence a column's default names (not owned by the column; a MariaDB
// SEQUENCE).
func TestMoveLeavesTheTargetsSequencesPastTheCopiedValues(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		for _, db := range direct(t, b, dir)[moveSource : moveTarget+1] {
			_ = db.Migrator().DropTable(&SqItem{}, &SqIdentity{})
			must(t, db.Exec("DROP SEQUENCE IF EXISTS sq_refs").Error)
		}
		r := newFidelityRig(t, b, &SqItem{}, &SqIdentity{})
		if b.name == "mariadb" { // a SEQUENCE a column's default takes its next value of
			for _, db := range []*gorm.DB{r.source, r.target} {
				must(t, db.Exec("CREATE SEQUENCE sq_refs").Error)
				must(t, db.Exec("ALTER TABLE sq_identities ADD COLUMN ref bigint DEFAULT NEXT VALUE FOR sq_refs").Error)
			}
		}
		if b.name == "postgres" {
			for _, db := range []*gorm.DB{r.source, r.target} {
				must(t, db.Exec("ALTER TABLE sq_identities ADD COLUMN num bigint GENERATED ALWAYS AS IDENTITY").Error)
				// a sequence of its own, not owned by the column, and text a sequence numbers
				must(t, db.Exec("CREATE SEQUENCE IF NOT EXISTS sq_refs").Error)
				must(t, db.Exec("ALTER TABLE sq_identities ADD COLUMN ref bigint DEFAULT nextval('sq_refs'), ADD COLUMN code text DEFAULT 'c-' || nextval('sq_refs')").Error)
			}
		}
		var ids []int64
		for i := 0; i < 5; i++ {
			it := SqItem{Name: fmt.Sprint(i)}
			must(t, r.db.Clauses(shardid.OnShard(movingRange.From+i)).Create(&it).Error)
			ids = append(ids, it.ID)
			must(t, r.db.Clauses(shardid.OnShard(movingRange.From+i)).Create(&SqIdentity{Name: fmt.Sprint(i)}).Error)
		}
		wrote := false
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 2,
			Models: append(append([]any{&SqItem{}, &SqIdentity{}}, moveModels...), fpModels...), Progress: func(p shardid.MoveProgress) {
				if p.Phase != shardid.PhaseCatchUp || wrote {
					return
				}
				wrote = true // rows already copied, written again by the catch-up
				concat := map[string]string{"mariadb": "CONCAT(name, ?)", "postgres": "name || ?::text"}[b.name]
				must(t, r.db.Model(&SqItem{}).Where("id IN ?", ids).Update("name", gorm.Expr(concat, "!")).Error)
				must(t, r.db.Model(&SqIdentity{}).Clauses(shardid.AllShards()).Where("1 = 1").Update("name", "upd").Error)
			}})
		must(t, err)
		if !wrote {
			t.Fatal("no writes during the catch-up")
		}
		compareSides(t, r, []fpTable{{"sq_items", "id"}, {"sq_identities", "id"}})
		seen := map[int64]bool{}
		var moved []SqItem
		must(t, r.db.Find(&moved, ids).Error)
		for _, it := range moved {
			seen[it.Seq] = true
		}
		for i := 0; i < 3; i++ {
			it := SqItem{Name: fmt.Sprint("after", i)}
			if err := r.db.Clauses(shardid.OnShard(movingRange.From + i)).Create(&it).Error; err != nil {
				t.Fatalf("a row created on the target after the move: %v", err)
			}
			if seen[it.Seq] {
				t.Errorf("a row created after the move took seq %d, a moved row's", it.Seq)
			}
			seen[it.Seq] = true
			id := SqIdentity{Name: "after"}
			must(t, r.db.Clauses(shardid.OnShard(movingRange.From+i)).Create(&id).Error)
		}
		var dups int64
		must(t, r.target.Raw("SELECT count(*) - count(DISTINCT ref) FROM sq_identities").Scan(&dups).Error)
		if dups != 0 {
			t.Errorf("%d values of a sequence taken twice on the target", dups)
		}
		if b.name == "postgres" {
			must(t, r.target.Raw("SELECT count(*) - count(DISTINCT num) FROM sq_identities").Scan(&dups).Error)
			if dups != 0 {
				t.Errorf("%d sequence values taken twice on the target", dups)
			}
		}
	})
}
