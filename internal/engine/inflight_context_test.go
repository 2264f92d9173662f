package engine

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"
)

// contextReplacer is a sharded model whose AfterFind hook replaces the
// statement's context with one it did not derive from it (a request's
// context kept aside, say).
type contextReplacer struct {
	ID   int64 `shardid:""`
	Name string
}

var replacingContext context.Context

func (*contextReplacer) AfterFind(tx *gorm.DB) error {
	if replacingContext != nil {
		tx.Statement.Context = replacingContext
	}
	return nil
}

// TestAStatementWhoseHookReplacesItsContextGivesItsCountBack: a statement
// whose hook replaces tx.Statement.Context (a request's context kept aside)
// is uncounted when it ends, so that the process leaves its map version and a
// move's cleanup does not wait for it forever.
func TestAStatementWhoseHookReplacesItsContextGivesItsCountBack(t *testing.T) {
	db, e := openEngine(t, Config{}, true)
	must(t, e.Migrator(db).AutoMigrate(&contextReplacer{}))
	row := contextReplacer{Name: "r"}
	must(t, db.Create(&row).Error)
	old := e.inflight.current.Load().version

	replacingContext = context.Background()
	t.Cleanup(func() { replacingContext = nil })
	var got contextReplacer
	must(t, db.First(&got, row.ID).Error) // the statement has ended
	replacingContext = nil

	e.routeBy(old + 1)
	if v := e.oldestRouted(old + 1); v != old+1 {
		t.Errorf("no statement runs, yet the process follows version %d, want %d: the count of a statement whose hook replaced its context is never given back", v, old+1)
	}
}

// TestAStatementUnderAPluginThatRestoresItsContextGivesItsCountBack: another
// plugin, registered before shardid, that wraps the statement's context
// before the query (a deadline) and puts back the one it saved after it, as
// such plugins do, leaves the statement's count to be given back when it ends.
func TestAStatementUnderAPluginThatRestoresItsContextGivesItsCountBack(t *testing.T) {
	type saved struct {
		ctx    context.Context
		cancel context.CancelFunc
	}
	db, e := openEngine(t, Config{}, true, func(db *gorm.DB) {
		must(t, db.Callback().Query().Before("gorm:query").Register("other:deadline_before", func(tx *gorm.DB) {
			ctx, cancel := context.WithTimeout(tx.Statement.Context, time.Minute)
			tx.InstanceSet("other:saved", saved{tx.Statement.Context, cancel})
			tx.Statement.Context = ctx
		}))
		must(t, db.Callback().Query().After("gorm:query").Register("other:deadline_after", func(tx *gorm.DB) {
			if v, ok := tx.InstanceGet("other:saved"); ok {
				v.(saved).cancel()
				tx.Statement.Context = v.(saved).ctx
			}
		}))
	})
	must(t, e.Migrator(db).AutoMigrate(&heldReader{}))
	row := heldReader{Name: "r"}
	must(t, db.Create(&row).Error)
	old := e.inflight.current.Load().version

	var got heldReader
	must(t, db.First(&got, row.ID).Error) // the statement has ended

	e.routeBy(old + 1)
	if v := e.oldestRouted(old + 1); v != old+1 {
		t.Errorf("no statement runs, yet the process follows version %d, want %d: a plugin that put back the context it saved took the count with it", v, old+1)
	}
}

// createContextReplacer is a sharded model whose BeforeCreate hook replaces
// the statement's context with one it did not derive from it.
type createContextReplacer struct {
	ID   int64 `shardid:""`
	Name string
}

func (*createContextReplacer) BeforeCreate(tx *gorm.DB) error {
	tx.Statement.Context = context.Background()
	return nil
}

// TestACreateWhoseHookReplacesItsContextGivesItsCountBack: a Create whose
// BeforeCreate hook replaces tx.Statement.Context is uncounted when it ends,
// in GORM's transaction or without one, so that the process leaves its map
// version.
func TestACreateWhoseHookReplacesItsContextGivesItsCountBack(t *testing.T) {
	for _, skip := range []bool{false, true} {
		db, e := openEngine(t, Config{}, true)
		must(t, e.Migrator(db).AutoMigrate(&createContextReplacer{}))
		db = db.Session(&gorm.Session{SkipDefaultTransaction: skip})
		old := e.inflight.current.Load().version
		must(t, db.Create(&createContextReplacer{Name: "r"}).Error)
		e.routeBy(old + 1)
		if v := e.oldestRouted(old + 1); v != old+1 {
			t.Errorf("SkipDefaultTransaction %v: no statement runs, yet the process follows version %d, want %d", skip, v, old+1)
		}
	}
}
