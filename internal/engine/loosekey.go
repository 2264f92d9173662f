package engine

import (
	"strings"
	"sync"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// A hash key tagged collation:loose lives in a column that compares case-,
// accent- and width-insensitively and ignores trailing spaces (MySQL's _ci
// and _ai_ci collations, citext, a nondeterministic ICU collation). It is
// hashed as a folded form that keys those columns find equal share: "Ada",
// "ada ", "ÁDA" and "Ａｄａ" hash alike. The form is built from Unicode's
// compatibility decomposition and case folding, which Unicode keeps stable
// for assigned characters, so a key keeps its shard across versions; a
// collation key (whose weights Unicode does not keep stable) would not.
// Folding coarser than a column's equality only puts keys the column tells
// apart on one shard; finer would hide rows, so letters the Unicode
// collation algorithm treats as a base letter with a mark, or as two
// letters, fold to those.

// Beyond them, the key is coarser than a collation in three ways it found
// wanting: supplementary characters fold to one, katakana to hiragana, and
// characters the collation algorithm ignores are dropped.

// looseLetters are the letters compatibility decomposition keeps whole that
// the collation algorithm compares as other letters at primary strength.
var looseLetters = map[rune]string{'æ': "ae", 'œ': "oe", 'ø': "o", 'ł': "l", 'đ': "d", 'ħ': "h", 'ŧ': "t", 'ı': "i"}

// looseFolds are reused: a transform chain keeps buffers and is not safe for
// concurrent use.
var looseFolds = sync.Pool{New: func() any {
	marks := runes.Remove(runes.In(unicode.Mn))
	return transform.Chain(norm.NFKD, marks, cases.Fold(), norm.NFKD, marks)
}}

// LooseKey returns the string a collation:loose hash key is hashed as: its
// compatibility decomposition without marks, case-folded, with the letters of
// looseLetters spelled as the collation compares them, without trailing
// spaces.
func LooseKey(s string) string {
	fold := looseFolds.Get().(transform.Transformer)
	defer looseFolds.Put(fold)
	folded, _, err := transform.String(fold, s)
	if err != nil { // invalid UTF-8 cannot fold: hash it as it is
		folded = s
	}
	var b strings.Builder
	for _, r := range folded {
		switch spelled, ok := looseLetters[r]; {
		case ok:
			b.WriteString(spelled)
		case r > 0xFFFF:
			b.WriteRune(unicode.ReplacementChar) // _general_ci weighs every supplementary character as U+FFFD
		case r >= 0x30A1 && r <= 0x30F6 || r == 0x30FD || r == 0x30FE:
			b.WriteRune(r - 0x60) // katakana as hiragana: they differ past the primary strength _unicode_ci compares at
		case unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || unicode.Is(unicode.Cf, r):
			// ignorable at every strength of the collation algorithm: a soft hyphen, a zero-width space
		default:
			b.WriteRune(r)
		}
	}
	return strings.TrimRight(b.String(), " ")
}
