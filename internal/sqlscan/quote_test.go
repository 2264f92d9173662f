package sqlscan

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestQuote: a quoted name reads back, through the tokenizer, as one quoted
// identifier spelling the name, whatever quotes it holds.
func TestQuote(t *testing.T) {
	for _, c := range []struct{ dialect, name, want string }{
		{"mysql", "users", "`users`"},
		{"mysql", "a`b", "`a``b`"},
		{"postgres", "users", `"users"`},
		{"postgres", `a"b`, `"a""b"`},
		{"sqlite", `a"b`, `"a""b"`},
	} {
		got := Quote(c.dialect, c.name)
		if got != c.want {
			t.Errorf("Quote(%q, %q) = %s, want %s", c.dialect, c.name, got, c.want)
			continue
		}
		scan, err := Read(c.dialect, "SELECT * FROM "+got)
		if err != nil || len(scan.Tables) != 1 || scan.Tables[0].Name != c.name || !scan.Tables[0].Quoted {
			t.Errorf("SELECT * FROM %s reads as %+v, %v; want the table %q, quoted", got, scan.Tables, err, c.name)
		}
	}
}

// TestFitIdentifier: a name the dialect takes whole is kept; a longer one
// is cut within the limit, whole runes kept, and ends in its hash, so that
// two long names of one start differ. CutIdentifier cuts as PostgreSQL does.
func TestFitIdentifier(t *testing.T) {
	long := "idx_shardid_billing_records_of_accounts_in_the_region_of_europe_"
	for _, c := range []struct {
		dialect string
		limit   int
		bytes   bool
	}{{"postgres", 63, true}, {"mysql", 64, false}} {
		a, b := FitIdentifier(c.dialect, long+"invoices_account_id"), FitIdentifier(c.dialect, long+"payments_account_id")
		size := len([]rune(a))
		if c.bytes {
			size = len(a)
		}
		if a == b || size > c.limit || !utf8.ValidString(a) {
			t.Errorf("%s: %q and %q, want two names within %d", c.dialect, a, b, c.limit)
		}
		if got := FitIdentifier(c.dialect, "idx_shardid_users_owner_id"); got != "idx_shardid_users_owner_id" {
			t.Errorf("%s: a short name became %q", c.dialect, got)
		}
	}
	if got := FitIdentifier("postgres", strings.Repeat("é", 40)); len(got) > 63 || !utf8.ValidString(got) {
		t.Errorf("a long name of two-byte letters: %q (%d bytes)", got, len(got))
	}
	if got := CutIdentifier("postgres", long+"invoices_account_id"); got != (long + "invoices_account_id")[:63] {
		t.Errorf("CutIdentifier: %q", got)
	}
}
