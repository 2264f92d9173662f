//go:build !linux

package strategies

import "time"

func sleepPrecisely(d time.Duration) { time.Sleep(d) }
