package engine

import "testing"

// TestKeepsPreparedXA: two-phase commit is refused on the MySQL and MariaDB
// versions that roll a prepared branch back with its connection.
func TestKeepsPreparedXA(t *testing.T) {
	for version, want := range map[string]bool{
		"10.11.19-MariaDB-0+deb12u1": true,
		"10.5.2-MariaDB":             true,
		"10.5.1-MariaDB":             false,
		"10.4.30-MariaDB-log":        false,
		"8.0.36":                     true,
		"5.7.7-log":                  true,
		"5.7.6":                      false,
		"5.6.51":                     false,
		"garbage":                    false,
	} {
		if got := keepsPreparedXA(version); got != want {
			t.Errorf("keepsPreparedXA(%q) = %v, want %v", version, got, want)
		}
	}
}
