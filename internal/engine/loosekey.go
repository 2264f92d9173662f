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
		if spelled, ok := looseLetters[r]; ok {
			b.WriteString(spelled)
		} else {
			b.WriteRune(r)
		}
	}
	return strings.TrimRight(b.String(), " ")
}
