package errs

import (
	"errors"
	"testing"
)

func TestWrapSaysThePrefixOnce(t *testing.T) {
	sentinel := errors.New("shardid: invalid move")
	cases := []struct {
		err  error
		want string
	}{
		{Wrap(sentinel, "move of %d-%d to %s", 0, 9, "c"), "shardid: move of 0-9 to c: invalid move"},
		{Wrap(Wrap(sentinel, "on %s", "c"), "move"), "shardid: move: on c: invalid move"},
		{Wrap(errors.New("dial tcp: refused"), "on %s", "c"), "shardid: on c: dial tcp: refused"},
		{Wrap(errors.New("shardidx: other"), "on c"), "shardid: on c: shardidx: other"},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
	if err := Wrap(sentinel, "on c"); !errors.Is(err, sentinel) {
		t.Errorf("%v does not wrap %v", err, sentinel)
	}
}
