package mover

import (
	"context"
	"database/sql"
	"errors"
	"reflect"
	"testing"

	_ "github.com/glebarez/go-sqlite"

	"github.com/shardid/shardid/internal/mapstore"
)

// TestTargetCheckWhoseContextEndedFailsWithItNotAsARefusal: the prepare's
// reading of a target table whose context has ended fails with the
// context's error, not as a table to make (the dry run's "nothing to
// refuse") nor as ErrInvalid (a table to migrate, which also deletes the
// record of a move just begun): only a table the target lacks is one.
func TestTargetCheckWhoseContextEndedFailsWithItNotAsARefusal(t *testing.T) {
	target, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	target.SetMaxOpenConns(1)
	if _, err := target.Exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)"); err != nil {
		t.Fatal(err)
	}
	mv := &run{st: &mapstore.MoveState{To: "target"}, target: target}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, table := range []*movedTable{{name: "users", dialect: "sqlite"}, {name: "users", dialect: "sqlite", modelType: reflect.TypeOf(struct{ ID int64 }{})}} {
		if err := mv.checkTarget(ended, table); !errors.Is(err, context.Canceled) || errors.Is(err, ErrInvalid) {
			t.Errorf("the check of a target table: %v, want context.Canceled and not ErrInvalid", err)
		}
		if err := mv.wouldRefuse(ended, table); !errors.Is(err, context.Canceled) || errors.Is(err, ErrInvalid) {
			t.Errorf("the dry run's check of a target table: %v, want context.Canceled and not ErrInvalid", err)
		}
	}
	if err := mv.checkTarget(context.Background(), &movedTable{name: "missing", dialect: "sqlite"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("the check of a table the target lacks: %v, want ErrInvalid", err)
	}
}
