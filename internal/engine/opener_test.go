package engine

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"
)

// TestOpenerTriesAgainAfterAnAttemptBegunBeforeTheCall: a statement that
// arrives while an attempt begun when the database was down is still
// running joins it; when that attempt fails, the statement tries once more
// within its own bound, so a database that has come back serves it. The
// caller that began the failed attempt gets its failure.
func TestOpenerTriesAgainAfterAnAttemptBegunBeforeTheCall(t *testing.T) {
	release := make(chan struct{})
	var attempts atomic.Int32
	down := errors.New("the server did not answer")
	o := &opener{name: "db-1", timeout: time.Minute, ready: func(*openPhysical) {}, dial: func() (*gorm.DB, error) {
		if attempts.Add(1) == 1 {
			<-release // the attempt that met the server down, still waiting for its answer
			return nil, down
		}
		return &gorm.DB{Config: &gorm.Config{}}, nil
	}}
	first := make(chan error, 1)
	go func() { _, err := o.get(context.Background()); first <- err }()
	for attempts.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	second := make(chan error, 1)
	go func() { _, err := o.get(context.Background()); second <- err }()
	time.Sleep(20 * time.Millisecond) // the second caller joins the running attempt
	close(release)
	if err := <-first; err != nil && (!errors.Is(err, down) || !errors.Is(err, ErrShardUnavailable)) {
		t.Errorf("the caller that began the failed attempt: %v; want its failure, as ErrShardUnavailable, or the database opened meanwhile", err)
	}
	if err := <-second; err != nil {
		t.Errorf("the caller that joined the failed attempt: %v; want the database, opened by an attempt of its own", err)
	}
	if n := attempts.Load(); n != 2 {
		t.Errorf("%d attempts, want 2", n)
	}
}

// TestOpenerWaitEndedByTheCallersContextFailsWithIt: a statement whose
// context ends while its database is still opening (slower than the
// caller's deadline, within Config.ConnectTimeout) fails with the context's
// error, naming the database, as a connection's dial does, and not with
// ErrShardUnavailable: the database was not found down.
func TestOpenerWaitEndedByTheCallersContextFailsWithIt(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	o := &opener{name: "db-1", timeout: time.Minute, ready: func(*openPhysical) {}, dial: func() (*gorm.DB, error) {
		<-release
		return nil, errors.New("closed")
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := o.get(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrShardUnavailable) || !strings.Contains(err.Error(), "db-1") {
		t.Errorf("a wait past the caller's deadline: %v; want context.DeadlineExceeded naming db-1, not ErrShardUnavailable", err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := o.get(cancelled); !errors.Is(err, context.Canceled) || errors.Is(err, ErrShardUnavailable) {
		t.Errorf("a wait whose context was cancelled: %v; want context.Canceled, not ErrShardUnavailable", err)
	}
}
