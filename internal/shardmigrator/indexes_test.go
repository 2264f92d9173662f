package shardmigrator

import "testing"

func TestIsTextType(t *testing.T) {
	for sqlType, want := range map[string]bool{
		"text":                    true,
		"LONGTEXT":                true,
		" mediumblob NOT NULL":    true,
		"varchar(191)":            false,
		"varbinary(764)":          false,
		"varchar(64) COLLATE bin": false,
		"":                        false,
	} {
		if got := isTextType(sqlType); got != want {
			t.Errorf("isTextType(%q) = %v, want %v", sqlType, got, want)
		}
	}
}
