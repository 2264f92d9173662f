package strategies

import (
	"syscall"
	"time"
)

// sleepPrecisely sleeps for d. Go's timers wake up to a millisecond late,
// which would skip a whole tick after every sequence overflow; for short waits
// a nanosleep blocks only this thread, wakes within tens of microseconds and
// burns no CPU.
func sleepPrecisely(d time.Duration) {
	if d <= 0 {
		return
	}
	if d >= 2*time.Millisecond {
		time.Sleep(d)
		return
	}
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
