package engine

import (
	"math"
	"testing"
	"time"

	"github.com/shardid/shardid/internal/mapstore"
)

func TestHugeRefreshPeriodsGiveAWindowThatDoesNotOverflow(t *testing.T) {
	for _, hb := range []time.Duration{math.MaxInt64, (math.MaxInt64 - 5*time.Second) / 3, (math.MaxInt64-5*time.Second)/3 + 1, 100 * 365 * 24 * time.Hour} {
		w := mapstore.TrustWindow(hb)
		if w <= 0 {
			t.Errorf("TrustWindow(%d) = %v", hb, w)
			continue
		}
		var trust mapTrust
		trust.readAt(time.Now().Add(-time.Second), w, "map")
		if err := trust.usable(); err != nil {
			t.Errorf("heartbeat %d: %v", hb, err)
		}
		trust.stop()
	}
}

// TestRenewalsRacingTheTimerKeepAFreshReadingTrusted: renewals racing the timer never leave a fresh
// reading distrusted.
func TestRenewalsRacingTheTimerKeepAFreshReadingTrusted(t *testing.T) {
	var trust mapTrust
	defer trust.stop()
	for i := 0; i < 2000; i++ {
		trust.readAt(time.Now().Add(-time.Millisecond+time.Microsecond*time.Duration(i%3)), time.Millisecond, "map")
		trust.readAt(time.Now(), time.Hour, "map")
		time.Sleep(time.Microsecond * time.Duration(i%5))
		if err := trust.usable(); err != nil {
			t.Fatalf("iteration %d: %v", i, err)
		}
	}
}
