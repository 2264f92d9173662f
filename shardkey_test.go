package shardid

import (
	"errors"
	"testing"
)

// These values (checked against hash/fnv) are part of the contract: a key must map to the same shard in
// every version, or rows already written could not be found again.
func TestHashKeyVectors(t *testing.T) {
	uuid := [16]byte{0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}
	type tenant string
	cases := []struct {
		key  any
		hash uint64
	}{
		{"", 0xcbf29ce484222325},       // FNV-1a 64 published vectors
		{"a", 0xaf63dc4c8601ec8c},      //
		{"foobar", 0x85944171f73967e8}, //
		{tenant("foobar"), 0x85944171f73967e8},
		{[]byte("foobar"), 0x85944171f73967e8},
		{int64(42), 0xa8c7de32281a0d97},
		{42, 0xa8c7de32281a0d97}, // every signed integer hashes as its int64
		{int32(42), 0xa8c7de32281a0d97},
		{uint64(42), 0xa8c7de32281a0d97}, // and every unsigned one as its uint64
		{int64(-1), 0x8cf51a8bfca3883d},
		{uuid, 0x90fc22069f42281c},
	}
	for _, c := range cases {
		h, err := HashKey(c.key)
		if err != nil || h != c.hash {
			t.Errorf("HashKey(%#v) = %#x, %v; want %#x", c.key, h, err, c.hash)
		}
	}
	if h, _ := HashKey("user@example.com"); h%8192 != 2779 {
		t.Errorf("user@example.com is in shard %d, want 2779", h%8192)
	}
	for _, bad := range []any{nil, 1.5, struct{}{}, [4]byte{}} {
		if _, err := HashKey(bad); !errors.Is(err, ErrNoShard) {
			t.Errorf("HashKey(%#v) = %v, want ErrNoShard", bad, err)
		}
	}
}

// A loose key folds what case-, accent- and width-insensitive collations
// ignore, and its hashes are part of the contract like HashKey's.
func TestLooseKey(t *testing.T) {
	for _, same := range [][]string{
		{"ada@x.io", "Ada@X.io", "ADA@X.IO ", "Ádá@x.io", "Ａｄａ@ｘ.ｉｏ"},
		{"strasse", "Straße", "STRASSE"},
		{"aeroe", "Æröe", "ÆRÖE"},
		{"lodz", "Łódź"},
		{"istanbul", "İstanbul", "ıstanbul"},
		{" lead", " lead  "},           // trailing spaces only
		{"u2😀@x", "u2😁@x", "u2🀄@x"},    // _general_ci weighs every supplementary character alike
		{"あい1", "アイ1", "ｱｲ1"},          // _unicode_ci: katakana and hiragana differ past the primary strength
		{"ab", "a\u00adb", "a\u200bb"}, // ignorable: a soft hyphen, a zero-width space
	} {
		for _, k := range same[1:] {
			if LooseKey(k) != LooseKey(same[0]) {
				t.Errorf("LooseKey(%q) = %q, LooseKey(%q) = %q; want equal", k, LooseKey(k), same[0], LooseKey(same[0]))
			}
		}
	}
	for _, pair := range [][2]string{{"ada", "adb"}, {"lead", " lead"}, {"a-b", "ab"}} {
		if LooseKey(pair[0]) == LooseKey(pair[1]) {
			t.Errorf("LooseKey(%q) == LooseKey(%q)", pair[0], pair[1])
		}
	}
	if h, _ := HashKey(LooseKey("User@Example.COM")); h%8192 != 2779 {
		t.Errorf("User@Example.COM loosely is in shard %d, want 2779 (user@example.com's)", h%8192)
	}
}
