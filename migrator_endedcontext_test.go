package shardid

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestAChangeGivenAnEndedContextDoesNotBlameTheDatabases: a migration or
// change given a context that has ended fails with the context's error,
// not with ErrShardUnavailable saying the physical databases did not
// answer within Config.ConnectTimeout, which they were never given.
func TestAChangeGivenAnEndedContextDoesNotBlameTheDatabases(t *testing.T) {
	db, p, _ := twoSQLiteShards(t)
	must(t, p.AutoMigrate(db, &revUser{}))
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelExpired()
	for _, c := range []struct {
		ctx  context.Context
		want error
	}{{cancelled, context.Canceled}, {expired, context.DeadlineExceeded}} {
		for what, err := range map[string]error{
			"AutoMigrate": p.AutoMigrate(db.WithContext(c.ctx), &revUser{}),
			"AddColumn":   p.Migrator(db.WithContext(c.ctx)).AddColumn(&revUser{}, "Name"),
		} {
			if !errors.Is(err, c.want) || errors.Is(err, ErrShardUnavailable) || strings.Contains(err.Error(), "within") {
				t.Errorf("%s with a context that ended (%v): %v, want its error alone", what, c.want, err)
			}
		}
	}
}
