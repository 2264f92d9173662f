package shardmigrator

import "testing"

// TestLooseICULocalesAreTheRootsOnly: a collation:loose key on PostgreSQL
// takes a nondeterministic ICU collation whose equality LooseKey follows,
// the root's at any strength, not a language's, one that ignores
// punctuation or compares digits as numbers.
func TestLooseICULocalesAreTheRootsOnly(t *testing.T) {
	for locale, want := range map[string]bool{
		"und-u-ks-level2":             true,
		"und-u-ks-level1":             true,
		"UND-U-KS-LEVEL1-KC-TRUE":     true,
		"und-u-ks-level2-ka-noignore": true,
		"und-u-kn-false-ks-level1":    true,
		"root":                        true,
		"":                            true,
		"en-US-u-ks-level2":           true,
		"en_US@colStrength=secondary": true,
		"und@colStrength=primary":     true,
		"und-Latn-u-ks-level2":        true,
		"und-419-u-ks-level2":         true,
		"da-u-ks-level1":              false,
		"de-u-co-phonebk-ks-level1":   false,
		"und-u-co-phonebk-ks-level1":  false,
		"und-u-ka-shifted-ks-level2":  false,
		"und-u-kn-ks-level2":          false,
		"und-u-kn-true-ks-level2":     false,
		"und@colStrength=secondary;colAlternate=shifted": false,
		"und@colNumeric=yes":                             false,
		"en-US-POSIX-u-ks-level2":                        false,
		"en-u-ks-level2-x-private":                       false,
		"und-t-it-u-ks-level2":                           false,
		"und-u-ks-level2-vt-0020":                        false,
		"tr-u-ks-level1":                                 false,
	} {
		if got := looseICULocale(locale); got != want {
			t.Errorf("looseICULocale(%q) = %v, want %v", locale, got, want)
		}
	}
}
