package engine

import (
	"context"
	"errors"
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
