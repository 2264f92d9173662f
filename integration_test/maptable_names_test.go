package integration

import (
	"context"
	"strings"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// TestAMapTableNamedByAReservedWordHoldsTheMapAndItsMoves: Config.MapTable
// "order" (reserved in every dialect) or "user" (in PostgreSQL) is a plain
// identifier the config takes; the plugin keeps the map, its tables and its
// moves there, and a move and its cleanup run by it. "AppMap" is the table
// earlier versions made by that name unquoted (PostgreSQL's appmap).
func TestAMapTableNamedByAReservedWordHoldsTheMapAndItsMoves(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		for _, table := range []string{"order", "user", "AppMap"} {
			t.Run(table, func(t *testing.T) {
				r := newMoveRig(t, b, t.TempDir())
				drop := func() {
					main, err := gorm.Open(b.dialector(t, r.dir), &gorm.Config{Logger: logger.Discard})
					must(t, err)
					held := table
					if b.name == "postgres" { // as it folds the name written unquoted
						held = strings.ToLower(table)
					}
					must(t, main.Migrator().DropTable(held, held+"_moves", held+"_tables", held+"_databases"))
					if sqlDB, err := main.DB(); err == nil {
						_ = sqlDB.Close()
					}
				}
				drop()
				t.Cleanup(drop)
				db, p := r.open(t, shardid.Config{MapTable: table})
				must(t, p.AutoMigrate(db, moveModels...))
				must(t, db.Clauses(shardid.OnShard(movingRange.From)).Create(&MvUser{Name: "ada"}).Error)
				ctx := context.Background()
				if _, err := p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target"}); err != nil {
					t.Fatalf("a move by MapTable %q: %v", table, err)
				}
				must(t, p.CleanupMove(ctx, movingRange))
				if moves, err := p.Moves(ctx); err != nil || len(moves) != 1 || moves[0].Phase != shardid.PhaseCleaned {
					t.Errorf("the moves by MapTable %q: %+v, %v; want the one cleaned up", table, moves, err)
				}
				var versions int64
				main, err := gorm.Open(b.dialector(t, r.dir), &gorm.Config{Logger: logger.Discard})
				must(t, err)
				if table == "AppMap" {
					if err := main.Raw("SELECT COUNT(*) FROM AppMap").Scan(&versions).Error; err != nil || versions == 0 {
						t.Errorf("the map of MapTable AppMap read unquoted: %d versions, %v; want the table earlier versions made", versions, err)
					}
				}
				if sqlDB, err := main.DB(); err == nil {
					_ = sqlDB.Close()
				}
				var users []MvUser
				must(t, db.Clauses(shardid.OnShard(movingRange.From)).Find(&users).Error)
				if len(users) != 1 {
					t.Errorf("the moved range holds %d users, want 1", len(users))
				}
			})
		}
	})
}
