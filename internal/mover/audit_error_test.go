package mover

import (
	"errors"
	"testing"
)

func TestUnreadDatabaseErrorSaysThePrefixOnceAndNeedsNoCause(t *testing.T) {
	cause := errors.New("shardid: physical database unavailable: opening c")
	err := &UnreadDatabaseError{Database: "c", Err: cause}
	if got := err.Error(); got != "shardid: on c: physical database unavailable: opening c" || !errors.Is(err, cause) {
		t.Errorf("%q, Is its cause: %v", got, errors.Is(err, cause))
	}
	if got := (&UnreadDatabaseError{Database: "c"}).Error(); got != "shardid: on c: not read" {
		t.Errorf("without a cause: %q", got)
	}
}
