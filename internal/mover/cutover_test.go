package mover

import "testing"

// TestDescribeChange names the columns a migration added and dropped.
func TestDescribeChange(t *testing.T) {
	for _, c := range []struct {
		before, now []string
		want        string
	}{
		{[]string{"id", "body", "note"}, []string{"id", "body"}, "dropped note"},
		{[]string{"id", "body"}, []string{"id", "body", "tag"}, "added tag"},
		{[]string{"id", "note"}, []string{"id", "tag"}, "added tag; dropped note"},
		{[]string{"id", "a", "b"}, []string{"id", "b", "a"}, "reordered"},
	} {
		if got := describeChange(c.before, c.now); got != c.want {
			t.Errorf("describeChange(%v, %v) = %q, want %q", c.before, c.now, got, c.want)
		}
	}
}
