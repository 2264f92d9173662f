package engine

import (
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid/internal/errs"
)

// registerCallbacks adds the plugin's hooks. IDs are assigned, and every
// statement on a sharded model is routed, before gorm:begin_transaction (or
// before the query runs): the model's BeforeCreate sees the ID, and GORM's
// own transaction begins on the statement's physical database.
func (e *Engine) registerCallbacks(db *gorm.DB) error {
	cb := db.Callback()
	// GORM leaves gorm:begin_transaction out when the config skips the
	// default transaction, and a callback placed before a missing one would
	// run last: the first callback of each chain then is its anchor.
	createFirst, updateFirst, deleteFirst := "gorm:begin_transaction", "gorm:begin_transaction", "gorm:begin_transaction"
	if db.Config.SkipDefaultTransaction {
		createFirst, updateFirst, deleteFirst = "gorm:before_create", "gorm:setup_reflect_value", "gorm:before_delete"
	}
	type hook struct {
		register func(name string, fn func(*gorm.DB)) error
		name     string
		fn       func(*gorm.DB)
	}
	list := []hook{
		{cb.Create().Before(createFirst).Register, "shardid:assign_ids", e.assignIDs},
		{cb.Create().After("gorm:begin_transaction").Before("gorm:before_create").Register, "shardid:remember_tx", e.rememberTransaction},
		{cb.Create().After("gorm:create").Before("gorm:save_after_associations").Register, "shardid:moved", e.retryMoved(kindCreate, "gorm:create")},
		{cb.Create().After("gorm:save_after_associations").Before("gorm:after_create").Register, "shardid:written", e.atGate(gateWritten)},
		{cb.Create().After("gorm:after_create").Before("gorm:commit_or_rollback_transaction").Register, "shardid:after_hooks", e.writeBeforeCommit()},
		{cb.Create().After("gorm:commit_or_rollback_transaction").Register, "shardid:finish", e.finish(kindCreate)},
		{cb.Update().Before(updateFirst).Register, "shardid:route", e.route(kindUpdate)},
		{cb.Update().After("gorm:begin_transaction").Before("gorm:setup_reflect_value").Register, "shardid:remember_tx", e.rememberTransaction},
		{cb.Update().After("gorm:update").Before("gorm:save_after_associations").Register, "shardid:moved", e.retryMoved(kindUpdate, "gorm:update")},
		{cb.Update().After("gorm:save_after_associations").Before("gorm:after_update").Register, "shardid:written", e.atGate(gateWritten)},
		{cb.Update().After("gorm:after_update").Before("gorm:commit_or_rollback_transaction").Register, "shardid:after_hooks", e.writeBeforeCommit()},
		{cb.Update().After("gorm:commit_or_rollback_transaction").Register, "shardid:finish", e.finish(kindUpdate)},
		{cb.Delete().Before(deleteFirst).Register, "shardid:route", e.route(kindDelete)},
		{cb.Delete().After("gorm:begin_transaction").Before("gorm:before_delete").Register, "shardid:remember_tx", e.rememberTransaction},
		{cb.Delete().After("gorm:delete").Before("gorm:after_delete").Register, "shardid:moved", e.retryMoved(kindDelete, "gorm:delete")},
		{cb.Delete().After("shardid:moved").Before("gorm:after_delete").Register, "shardid:written", e.atGate(gateWritten)},
		{cb.Delete().After("gorm:after_delete").Before("gorm:commit_or_rollback_transaction").Register, "shardid:after_hooks", e.writeBeforeCommit()},
		{cb.Delete().After("gorm:commit_or_rollback_transaction").Register, "shardid:finish", e.finish(kindDelete)},
		{cb.Query().After("gorm:after_query").Register, "shardid:finish", e.finish(kindQuery)},
		{cb.Row().After("gorm:row").Register, "shardid:finish", e.finish(kindRow)},
		{cb.Raw().After("gorm:raw").Register, "shardid:moved", e.clauseWriteOnStaleMap},
		{cb.Raw().After("shardid:moved").Register, "shardid:savepoints", e.followSavepoint},
		{cb.Raw().After("shardid:savepoints").Register, "shardid:finish", e.finish(kindRaw)},
	}
	// The clock of a statement starts before, and stops after, every other
	// callback but another plugin's own Before("*") or After("*") registered
	// later: other plugins wrap the statement's context inside it, and unwrap
	// theirs before it stops (logs.go, metrics.go).
	list = append(list,
		hook{cb.Create().Before("*").Register, "shardid:start_clock", e.startClock(kindCreate)},
		hook{cb.Create().After("*").Register, "shardid:stop_clock", e.stopClock(kindCreate)},
		hook{cb.Query().Before("*").Register, "shardid:start_clock", e.startClock(kindQuery)},
		hook{cb.Query().After("*").Register, "shardid:stop_clock", e.stopClock(kindQuery)},
		hook{cb.Update().Before("*").Register, "shardid:start_clock", e.startClock(kindUpdate)},
		hook{cb.Update().After("*").Register, "shardid:stop_clock", e.stopClock(kindUpdate)},
		hook{cb.Delete().Before("*").Register, "shardid:start_clock", e.startClock(kindDelete)},
		hook{cb.Delete().After("*").Register, "shardid:stop_clock", e.stopClock(kindDelete)},
		hook{cb.Row().Before("*").Register, "shardid:start_clock", e.startClock(kindRow)},
		hook{cb.Row().After("*").Register, "shardid:stop_clock", e.stopClock(kindRow)},
		hook{cb.Raw().Before("*").Register, "shardid:start_clock", e.startClock(kindRaw)},
		hook{cb.Raw().After("*").Register, "shardid:stop_clock", e.stopClock(kindRaw)})
	for _, h := range list {
		if err := h.register(h.name, e.keepingFirst(h.fn)); err != nil {
			return errs.Wrap(err, "registering %s", h.name)
		}
	}
	// The last of GORM's own callbacks of each chain, wrapped: a replacement
	// keeps its place. GORM notes a replacement in its logger, which carries
	// statements only (operations.md).
	statements := db.Config.Logger
	db.Config.Logger = logger.Discard
	defer func() { db.Config.Logger = statements }()
	lastOfGORM := []struct {
		chain gormChain
		names []string // the first that is registered
	}{
		{cb.Create(), []string{"gorm:commit_or_rollback_transaction", "gorm:after_create"}},
		{cb.Query(), []string{"gorm:after_query"}},
		{cb.Update(), []string{"gorm:commit_or_rollback_transaction", "gorm:after_update"}},
		{cb.Delete(), []string{"gorm:commit_or_rollback_transaction", "gorm:after_delete"}},
		{cb.Row(), []string{"gorm:row"}},
	}
	// GORM's executors, wrapped: what is checked, routed and built right
	// before them runs after every callback placed before them, whenever it
	// was registered (a tenant scope's condition, a field a callback sets).
	executors := []struct {
		chain  gormChain
		name   string
		before []func(*gorm.DB)
	}{
		{cb.Create(), "gorm:create", []func(*gorm.DB){e.checkCreate, e.gate(kindCreate), e.atGate(gatePlanned)}},
		{cb.Update(), "gorm:update", []func(*gorm.DB){e.writeStillRouted(kindUpdate), e.checkUpdate, e.gate(kindUpdate), e.atGate(gatePlanned)}},
		{cb.Delete(), "gorm:delete", []func(*gorm.DB){e.writeStillRouted(kindDelete), e.gate(kindDelete), e.atGate(gatePlanned)}},
		{cb.Query(), "gorm:query", []func(*gorm.DB){e.route(kindQuery), e.gate(kindQuery)}},
		{cb.Row(), "gorm:row", []func(*gorm.DB){e.route(kindRow), e.gate(kindRow)}},
		{cb.Raw(), "gorm:raw", []func(*gorm.DB){e.route(kindRaw)}},
	}
	for _, x := range executors {
		gormOwn := x.chain.Get(x.name)
		if gormOwn == nil {
			return fmt.Errorf("shardid: GORM's callback %s is not registered: the plugin routes statements right before it", x.name)
		}
		before := x.before
		if err := x.chain.Replace(x.name, e.keepingFirst(func(db *gorm.DB) {
			for _, fn := range before {
				fn(db)
			}
			if db.Error == nil {
				e.sending(db.Statement)
			}
			gormOwn(db)
		})); err != nil {
			return errs.Wrap(err, "wrapping %s", x.name)
		}
	}
	for _, last := range lastOfGORM {
		for _, name := range last.names {
			if gormOwn := last.chain.Get(name); gormOwn != nil {
				gormOwn = e.keepingFirst(gormOwn) // GORM's rollback of a failed statement
				if err := last.chain.Replace(name, func(db *gorm.DB) { gormOwn(db); endRouted(db) }); err != nil {
					return errs.Wrap(err, "wrapping %s", name)
				}
				break
			}
		}
	}
	return nil
}

// gormChain is what the plugin uses of one of GORM's callback processors.
type gormChain interface {
	Get(name string) func(*gorm.DB)
	Replace(name string, fn func(*gorm.DB)) error
}

// endRouted ends, right after GORM's own callbacks, a statement the plugin
// ran part by part: errRouted kept GORM's executor, hooks and preloads from
// running it again, and the callbacks of plugins registered before this one,
// which GORM runs after its own (gorm.io/plugin/opentelemetry's, ending the
// statement's span), see it succeed, or fail with its own error, with its
// first part's SQL.
func endRouted(db *gorm.DB) {
	if db.Error == errRouted {
		db.Error = nil
		keepResult(db)
	}
	if db.Statement.SQL.Len() == 0 && fanLogsOpen.Load() > 0 { // a statement over several databases, failed or not
		if v, ok := loadSetting(db.Statement, fanLogKey{db.Statement}); ok {
			v.(*fanLog).showFirst(db.Statement)
		}
	}
}
