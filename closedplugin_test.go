package shardid

import (
	"errors"
	"strings"
	"testing"
)

// TestPluginMethodsAfterCloseSayThePluginIsClosed: after Close, every
// method of the plugin that needs its databases (the migrator, moves, their
// listings, the audit, the map's refresh, recovery, a map swap) fails with
// ErrPluginNotOpen saying it is closed, as Ping does, not with
// database/sql's "database is closed" of a pool Close closed, which reads
// as if the application's own database were.
func TestPluginMethodsAfterCloseSayThePluginIsClosed(t *testing.T) {
	db, p, _, _ := routedOverN(t, 2, Config{Log: quiet}, &revUser{})
	must(t, db.Create(&revUser{Name: "a"}).Error)
	must(t, p.Close())
	ctx := t.Context()
	calls := map[string]func() error{
		"Migrator":    func() error { return p.Migrator(db).CreateTable(&revPlain{}) },
		"AutoMigrate": func() error { return p.AutoMigrate(db, &revPlain{}) },
		"Move": func() error {
			_, err := p.Move(ctx, Move{Logical: Range{From: 0, To: 1}, To: "s1"})
			return err
		},
		"CancelMove":          func() error { return p.CancelMove(ctx, Range{From: 0, To: 1}) },
		"CleanupMove":         func() error { return p.CleanupMove(ctx, Range{From: 0, To: 1}) },
		"Moves":               func() error { _, err := p.Moves(ctx); return err },
		"Processes":           func() error { _, err := p.Processes(ctx); return err },
		"Audit":               func() error { _, err := p.Audit(ctx); return err },
		"RefreshMap":          func() error { _, err := p.RefreshMap(ctx); return err },
		"RecoverTransactions": func() error { return p.RecoverTransactions(ctx) },
		"SwapShardMap":        func() error { return p.SwapShardMap(p.ShardMap()) },
		"Ping":                func() error { _, err := p.Ping(ctx); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrPluginNotOpen) || !strings.Contains(err.Error(), "closed") || strings.Contains(err.Error(), "sql: database is closed") {
			t.Errorf("%s after Close: %v; want ErrPluginNotOpen saying the plugin is closed", name, err)
		}
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close again: %v", err)
	}
}
