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

// Beyond them, the key is coarser than a collation in the ways one was found
// wanting: supplementary characters fold to one, kana to full-size
// hiragana, digits to ASCII, Cherokee to capitals, Hebrew final forms to
// their letters, and characters the collation algorithm ignores are dropped
// (the limits are in docs/models.md).

// looseLetters are the letters compatibility decomposition keeps whole that
// the collation algorithm compares as other letters at primary strength.
var looseLetters = map[rune]string{'æ': "ae", 'œ': "oe", 'ø': "o", 'ł': "l", 'đ': "d", 'ħ': "h", 'ŧ': "t", 'ı': "i"}

// looseHebrewFinals are the final forms of Hebrew letters, which the
// collation algorithm (UCA 14) compares as the letters themselves.
var looseHebrewFinals = map[rune]rune{'ך': 'כ', 'ם': 'מ', 'ן': 'נ', 'ף': 'פ', 'ץ': 'צ'}

// looseCombiningLetters are the combining Latin small letters (U+0363 to
// U+036F), marks that the collation algorithm weighs as their letters.
const looseCombiningLetters = "aeioucdhmrtvx"

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
	folded, _, err := transform.String(fold, strings.Map(lettersOfMarks, s))
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
		case r > 0x7F && unicode.IsDigit(r):
			b.WriteRune('0' + digitValue(r)) // the digits of every script weigh as the digit
		case r >= 0xAB70 && r <= 0xABBF || r >= 0x13F8 && r <= 0x13FD:
			b.WriteRune(cherokeeCapital(r)) // case folding pairs Cherokee letters with their capitals
		case looseHebrewFinals[r] != 0:
			b.WriteRune(looseHebrewFinals[r])
		case r >= 0x3041 && r <= 0x30FE || r >= 0x31F0 && r <= 0x31FF:
			b.WriteRune(fullHiragana(r)) // katakana, and small kana, differ from hiragana past the primary strength
		case unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || unicode.Is(unicode.Cf, r):
			// ignorable at every strength of the collation algorithm: a soft hyphen, a zero-width space
		default:
			b.WriteRune(r)
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// lettersOfMarks spells a combining Latin small letter as its letter, before
// marks are dropped.
func lettersOfMarks(r rune) rune {
	if r >= 0x0363 && r <= 0x036F {
		return rune(looseCombiningLetters[r-0x0363])
	}
	return r
}

// digitValue is the value of a decimal digit: Unicode encodes the digits of
// each script as runs of ten from zero.
func digitValue(r rune) rune {
	zero := r
	for unicode.IsDigit(zero - 1) {
		zero--
	}
	return (r - zero) % 10
}

// cherokeeCapital is the capital of a Cherokee letter.
func cherokeeCapital(r rune) rune {
	if r >= 0xAB70 {
		return r - 0xAB70 + 0x13A0
	}
	return r - 0x13F8 + 0x13F0
}

// smallKana are the small hiragana and the small katakana of the phonetic
// extensions, each with its full-size hiragana.
var smallKana = map[rune]rune{
	'ぁ': 'あ', 'ぃ': 'い', 'ぅ': 'う', 'ぇ': 'え', 'ぉ': 'お', 'っ': 'つ', 'ゃ': 'や', 'ゅ': 'ゆ', 'ょ': 'よ', 'ゎ': 'わ', 'ゕ': 'か', 'ゖ': 'け',
	'ㇰ': 'く', 'ㇱ': 'し', 'ㇲ': 'す', 'ㇳ': 'と', 'ㇴ': 'ぬ', 'ㇵ': 'は', 'ㇶ': 'ひ', 'ㇷ': 'ふ', 'ㇸ': 'へ', 'ㇹ': 'ほ', 'ㇺ': 'む', 'ㇻ': 'ら', 'ㇼ': 'り', 'ㇽ': 'る', 'ㇾ': 'れ', 'ㇿ': 'ろ',
}

// fullHiragana is a kana as the full-size hiragana the collation algorithm
// compares it with at primary strength.
func fullHiragana(r rune) rune {
	if r >= 0x30A1 && r <= 0x30F6 || r == 0x30FD || r == 0x30FE {
		r -= 0x60 // katakana as hiragana
	}
	if full, ok := smallKana[r]; ok {
		return full
	}
	return r
}
