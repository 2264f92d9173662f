package strategies

import "time"

// Clock is the time source of the in-process strategies. Tests inject a fake
// one to step time deterministically; the default is the system clock, whose
// Since reads the monotonic clock, so a step of the wall clock cannot move an
// in-process generator back.
type Clock interface {
	Now() time.Time
	Since(t time.Time) time.Duration
	Sleep(d time.Duration)
}

// SystemClock is the default [Clock]: time.Now, time.Since, and a sleep that
// wakes within a tick of a millisecond.
var SystemClock Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time                  { return time.Now() }
func (systemClock) Since(t time.Time) time.Duration { return time.Since(t) }
func (systemClock) Sleep(d time.Duration)           { sleepPrecisely(d) }
