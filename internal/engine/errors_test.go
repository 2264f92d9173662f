package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"gorm.io/gorm"
)

// An error wrapped twice on its way out of one database names it once, and
// says the prefix once.
func TestOnErrorNamesItsDatabaseOnce(t *testing.T) {
	cause := errors.New("boom")
	twice := &onError{name: "pg-0", err: &onError{name: "pg-0", err: cause}}
	if got := twice.Error(); got != "shardid: on pg-0: boom" {
		t.Fatalf("%q", got)
	}
	nested := &onError{name: "pg-0", err: &onError{name: "pg-1", err: cause}}
	if got := nested.Error(); got != "shardid: on pg-0: on pg-1: boom" {
		t.Fatalf("%q", got)
	}
	if !errors.Is(twice, cause) {
		t.Fatal("the cause is lost")
	}
}

// An error a callback adds after a statement's own, which GORM's AddError
// joins with "%v; %w", leaves the statement's own error findable: dropped
// when it only says the transaction had ended, or when the statement's
// context has ended; kept beside it otherwise. A callback that replaces the
// error, a statement that had none, or one the plugin does not route, is
// left alone.
func TestAnErrorAddedAfterTheStatementsKeepsIt(t *testing.T) {
	own := fmt.Errorf("insert: %w", context.DeadlineExceeded)
	cut := errors.New("invalid connection")
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	run := func(ctx context.Context, first error, fn func(*gorm.DB)) error {
		db := &gorm.DB{Config: &gorm.Config{}, Statement: &gorm.Statement{Context: ctx}, Error: first}
		keepWriteState(db.Statement, nil) // a statement the plugin routes
		(&Engine{}).keepingFirst(fn)(db)
		return db.Error
	}
	add := func(err error) func(*gorm.DB) { return func(db *gorm.DB) { db.AddError(err) } }
	if err := run(context.Background(), own, add(sql.ErrTxDone)); err != own {
		t.Errorf("a rollback of a transaction that had ended: %v, want the statement's own error", err)
	}
	if err := run(ended, own, add(cut)); err != own {
		t.Errorf("a rollback after the context ended: %v, want the statement's own error", err)
	}
	err := run(context.Background(), own, add(cut))
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, cut) || err.Error() != own.Error()+"; "+cut.Error() {
		t.Errorf("an error added after the statement's own: %v, want both findable", err)
	}
	replaced := errors.New("replaced")
	if err := run(context.Background(), own, func(db *gorm.DB) { db.Error = replaced }); err != replaced {
		t.Errorf("a callback's replacement: %v", err)
	}
	if err := run(context.Background(), nil, add(cut)); err != cut {
		t.Errorf("a statement without an error: %v", err)
	}
	// A statement the plugin does not route keeps GORM's join, as it would
	// without the plugin.
	unrouted := &gorm.DB{Config: &gorm.Config{}, Statement: &gorm.Statement{Context: context.Background()}, Error: own}
	(&Engine{}).keepingFirst(add(sql.ErrTxDone))(unrouted)
	if err := unrouted.Error; !errors.Is(err, sql.ErrTxDone) || err.Error() != own.Error()+"; "+sql.ErrTxDone.Error() {
		t.Errorf("a statement the plugin does not route: %v, want GORM's join", err)
	}
	// A hook's error of an uncomparable type (a slice, as validators
	// return) is kept as it is, and never compared with ==, which panics.
	invalid := fieldErrors{"name is empty"}
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("a hook's error that is a slice: %v", p)
			}
		}()
		if err := run(context.Background(), invalid, func(*gorm.DB) {}); !errors.As(err, new(fieldErrors)) {
			t.Errorf("a hook's error that is a slice: %v", err)
		}
		if err := run(context.Background(), invalid, add(sql.ErrTxDone)); !errors.As(err, new(fieldErrors)) {
			t.Errorf("a hook's error that is a slice, then a rollback of a transaction that had ended: %v", err)
		}
	}()
}

// fieldErrors is an error of an uncomparable type, as validators return.
type fieldErrors []string

func (e fieldErrors) Error() string { return strings.Join(e, "; ") }
