package shardid

import (
	"errors"
	"testing"
)

var renamingTable = "renaming_before" // what renamingModel.TableName says

type renamingModel struct {
	ID   int64 `shardid:""`
	Name string
}

func (renamingModel) TableName() string { return renamingTable }

// TestAutoMigrateRefusesATableNameThatChangedAfterItsFirstUse: GORM keeps
// the first answer of a model's TableName() in each handle; the plugin's
// statements use its database's, so the physical databases, parsing the
// model later, must not make the table under the later answer, which no
// statement reads.
func TestAutoMigrateRefusesATableNameThatChangedAfterItsFirstUse(t *testing.T) {
	db, p, direct := twoSQLiteShards(t)
	var n int64
	_ = db.Clauses(AllShards()).Model(&renamingModel{}).Count(&n).Error // the plugin's database parses it now: no table yet
	renamingTable = "renaming_after"
	t.Cleanup(func() { renamingTable = "renaming_before" })
	err := p.AutoMigrate(db, &renamingModel{})
	if !errors.Is(err, ErrShardsDisagree) {
		t.Errorf("AutoMigrate: %v, want ErrShardsDisagree", err)
	}
	for i, d := range direct {
		for _, table := range []string{"renaming_before", "renaming_after"} {
			if d.Migrator().HasTable(table) {
				t.Errorf("s%d has %s, which the refused migration made", i, table)
			}
		}
	}
	if err := p.Migrator(db).AddColumn(&renamingModel{}, "Name"); !errors.Is(err, ErrShardsDisagree) {
		t.Errorf("AddColumn: %v, want ErrShardsDisagree", err)
	}
}
