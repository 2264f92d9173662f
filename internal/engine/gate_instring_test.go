package engine

import (
	"errors"
	"testing"
)

type rgTok struct {
	ID int64 `shardid:""`
}

// SQLite reads `x IN 'name'` (a string where a name stands) as the table
// name: the gate must see the sharded table as it does `x IN "name"`.
func TestSQLitesInAStringTableIsReadAsTheTable(t *testing.T) {
	db, e, ua, _ := rgSetup(t)
	must(t, e.Migrator(db).AutoMigrate(&rgTok{}))
	must(t, db.Clauses(hinted{OnShard(1)}).Create(&rgTok{}).Error)
	must(t, db.Create(&rgOrder{UserID: ua.ID, Note: "o"}).Error)
	var orders []rgOrder
	err := db.Where("user_id = ? AND user_id NOT IN \"rg_toks\"", ua.ID).Find(&orders).Error
	if !errors.Is(err, ErrCrossShard) {
		t.Fatalf("IN \"rg_toks\" on the colocated shard: %v; want ErrCrossShard", err)
	}
	err = db.Where("user_id = ? AND user_id NOT IN 'rg_toks'", ua.ID).Find(&orders).Error
	if !errors.Is(err, ErrCrossShard) {
		t.Errorf("IN 'rg_toks' on the colocated shard: err = %v, %d rows; want ErrCrossShard (reads rg_toks of one database only)", err, len(orders))
	}
	var plains []rgPlain
	err = db.Where("id IN 'rg_toks'").Find(&plains).Error
	if !errors.Is(err, ErrNoShard) {
		t.Errorf("an unsharded model's IN 'rg_toks' on the plugin's database: %v; want ErrNoShard", err)
	}
}
