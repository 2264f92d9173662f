package engine

import (
	"errors"
	"fmt"
	"testing"
)

// The mark of a part's end comes off whatever a callback after the part did
// with it, and the callback's own error stays: wrapped, added by GORM's
// AddError, or joined.
func TestThePartEndMarkComesOffAndTheCallbacksErrorStays(t *testing.T) {
	theirs := errors.New("outbox full")
	for name, c := range map[string]struct {
		err  error
		want error
	}{
		"the mark":          {errPartEnded, nil},
		"wrapped":           {fmt.Errorf("repo: %w", errPartEnded), nil},
		"added by AddError": {fmt.Errorf("%v; %w", errPartEnded, theirs), theirs},
		"joined":            {errors.Join(errPartEnded, theirs), theirs},
		"joined, wrapped":   {fmt.Errorf("repo: %w", errors.Join(errPartEnded, theirs)), theirs},
		"another error":     {theirs, theirs},
	} {
		got := unmarkPartEnd(c.err)
		if c.want == nil && got != nil || c.want != nil && (!errors.Is(got, c.want) || errors.Is(got, errPartEnded)) {
			t.Errorf("%s: %v; want %v without the mark", name, got, c.want)
		}
	}
}
