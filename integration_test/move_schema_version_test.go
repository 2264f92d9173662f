package integration

import (
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// MvWide's column body is widened by a new version, MvWideV2, while a
// process of the old version moves a range with its models.
type (
	MvWide struct {
		ID   int64  `shardid:""`
		Body string `gorm:"size:32"`
	}
	MvWideV2 struct {
		ID   int64  `shardid:""`
		Body string `gorm:"size:64"`
	}
)

func (MvWideV2) TableName() string { return "mv_wides" }

// TestAMoveWithAnOlderModelChangesNoTableThere: a move given the models of
// an older version than the running application's (an operator's tool in a
// rolling deploy), whose target has the tables already, changes no column
// of them: the application's writes of the widened column succeed after
// it, on the target and on the source alike.
func TestAMoveWithAnOlderModelChangesNoTableThere(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		for _, db := range direct(t, b, dir) {
			must(t, db.Migrator().DropTable("mv_wides"))
		}
		r := newMoveRig(t, b, dir)
		t.Cleanup(func() {
			for _, db := range []*gorm.DB{r.source, r.target} {
				_ = db.Migrator().DropTable("mv_wides")
			}
		})
		must(t, r.p.AutoMigrate(r.db, &MvWide{}))
		must(t, r.p.AutoMigrate(r.db, &MvWideV2{})) // the new version's pods start
		must(t, r.db.Clauses(shardid.OnShard(movingRange.From)).Create(&MvWideV2{Body: "short"}).Error)
		r.move(t, shardid.Move{Models: append(append([]any{}, moveModels...), &MvWide{})})
		long := strings.Repeat("w", 48)
		for _, shard := range []int{movingRange.From + 1, 0} { // the target's range, the source's
			if err := r.db.Clauses(shardid.OnShard(shard)).Create(&MvWideV2{Body: long}).Error; err != nil {
				t.Errorf("a write of 48 characters on shard %d after the move: %v; want the column as the application migrated it", shard, err)
			}
		}
	})
}
