package integration

import (
	"errors"
	"testing"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// A model with no hooks and no relations, whose writes an application's
// callback follows with statements of its own inside GORM's transaction: an
// outbox row beside the written row, an audit row on the plugin's database.
type (
	TxOrder struct {
		ID    int64 `shardid:""`
		Total int64
	}
	TxOutbox struct {
		ID      int64 `shardid:"colocate:OrderID"`
		OrderID int64
		Event   string
	}
	TxAudit struct { // unsharded
		ID    uint
		Event string
	}
)

// TestStatementsInGORMsTransactionKnowItsDatabase: a callback registered
// after gorm:create writes in the transaction GORM began for a row of a
// model without hooks: the colocated outbox row goes into it, on the row's
// database; the unsharded audit row is refused, not written into a copy of
// its table on that shard; raw SQL naming a sharded table needs a shard
// clause of its own.
func TestStatementsInGORMsTransactionKnowItsDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		db := open(t, b, dir, shardid.Config{Shards: shards(t, b, dir)})
		fresh(t, db, &TxOrder{}, &TxOutbox{})
		must(t, db.Migrator().DropTable(&TxAudit{}))
		must(t, db.AutoMigrate(&TxAudit{}))
		for _, d := range direct(t, b, dir) {
			must(t, d.Migrator().DropTable(&TxAudit{}))
			must(t, d.AutoMigrate(&TxAudit{})) // a copy on each shard, where a misrouted row would land
		}
		var follow func(tx *gorm.DB) error
		var errs []error
		must(t, db.Callback().Create().After("gorm:create").Before("gorm:commit_or_rollback_transaction").Register("test:follow", func(tx *gorm.DB) {
			if _, ok := tx.Statement.Dest.(*TxOrder); ok && tx.Error == nil && follow != nil {
				errs = append(errs, follow(tx.Session(&gorm.Session{NewDB: true})))
			}
		}))
		order := &TxOrder{Total: 5}
		follow = func(tx *gorm.DB) error {
			return tx.Create(&TxOutbox{OrderID: order.ID, Event: "created"}).Error
		}
		errs = nil
		must(t, db.Create(order).Error)
		if len(errs) != 1 || errs[0] != nil {
			t.Fatalf("the outbox row in GORM's transaction: %v", errs)
		}
		phys := direct(t, b, dir)
		p := db.Config.Plugins[(&shardid.Plugin{}).Name()].(*shardid.Plugin)
		k := p.ShardMap().Physical(p.Layout().Shard(order.ID))
		var outbox []TxOutbox
		must(t, phys[k].Find(&outbox, "order_id = ?", order.ID).Error)
		if len(outbox) != 1 {
			t.Fatalf("the outbox row is not beside its order on %d: %v", k, outbox)
		}

		follow = func(tx *gorm.DB) error { return tx.Create(&TxAudit{Event: "created"}).Error }
		errs = nil
		err := db.Create(&TxOrder{Total: 6}).Error
		if len(errs) != 1 || !errors.Is(errs[0], shardid.ErrCrossShard) {
			t.Errorf("the unsharded audit row in a shard's transaction: %v (statement: %v); want ErrCrossShard", errs, err)
		}
		for i, d := range phys {
			var n int64
			must(t, d.Model(&TxAudit{}).Count(&n).Error)
			if n != 0 {
				t.Errorf("physical %d holds %d audit rows", i, n)
			}
		}

		follow = func(tx *gorm.DB) error {
			return tx.Exec("UPDATE tx_outboxes SET event = 'raw' WHERE order_id = ?", order.ID).Error
		}
		errs = nil
		_ = db.Create(&TxOrder{Total: 7}).Error
		if len(errs) != 1 || !errors.Is(errs[0], shardid.ErrNoShard) {
			t.Errorf("raw SQL on a sharded table in GORM's transaction: %v; want ErrNoShard (a statement of its own)", errs)
		}
		follow = nil
	})
}

// TestHookWritesAnUnshardedRowInATransactionAcrossShards: where a hook's
// unsharded write cannot join GORM's transaction on a shard (above), it
// joins a transaction across shards: the audit row is written on the
// plugin's database when the transaction commits, and not when it rolls back.
func TestHookWritesAnUnshardedRowInATransactionAcrossShards(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		db := open(t, b, dir, shardid.Config{Shards: shards(t, b, dir)})
		fresh(t, db, &TxOrder{})
		must(t, db.Migrator().DropTable(&TxAudit{}))
		must(t, db.AutoMigrate(&TxAudit{}))
		must(t, db.Callback().Create().After("gorm:create").Register("test:audit", func(tx *gorm.DB) {
			if _, ok := tx.Statement.Dest.(*TxOrder); ok && tx.Error == nil {
				tx.AddError(tx.Session(&gorm.Session{NewDB: true}).Create(&TxAudit{Event: "created"}).Error)
			}
		}))
		audits := func() (n int64) {
			must(t, db.Model(&TxAudit{}).Count(&n).Error)
			return n
		}
		must(t, db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			return tx.Create(&TxOrder{Total: 1}).Error
		}))
		if n := audits(); n != 1 {
			t.Fatalf("%d audit rows after the commit, want 1", n)
		}
		err := db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			must(t, tx.Create(&TxOrder{Total: 2}).Error)
			return errors.New("changed my mind")
		})
		if err == nil || audits() != 1 {
			t.Fatalf("a rolled back transaction: %v, %d audit rows, want an error and still 1", err, audits())
		}
	})
}
