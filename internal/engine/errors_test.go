package engine

import (
	"errors"
	"testing"
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
