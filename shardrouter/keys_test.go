package shardrouter

import (
	"strings"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

var photoPlacings = []Placing{
	{Role: "key", DBName: "id", Name: "ID", ShardOf: idShard},
	{Role: "colocate", DBName: "user_id", Name: "UserID", ShardOf: idShard},
}

func set(column string, v any) []clause.Assignment {
	return []clause.Assignment{{Column: clause.Column{Name: column}, Value: v}}
}

// TestCheckAssignments has a row per rule of "Updates of the key columns" in
// docs/routing.md, for an update of the row with ID 5 (logical shard 5).
func TestCheckAssignments(t *testing.T) {
	row := UpdatedRow{Shard: func() (int, bool) { return 5, true }, HasKey: func(v any) bool { return v == 5 }}
	unknown := UpdatedRow{Shard: func() (int, bool) { return 0, false }, HasKey: func(any) bool { return false }}
	for name, c := range map[string]struct {
		set   []clause.Assignment
		row   UpdatedRow
		wrong string // a part of the refusal; "" when allowed
	}{
		"another column":                                    {set: set("name", "ada"), row: unknown},
		"the key to its own value":                          {set: set("id", 5), row: row},
		"the key to another value":                          {set: set("id", 6), row: row, wrong: "changes the primary key id"},
		"the key by GORM's primary key name":                {set: set(clause.PrimaryKey, 6), row: row, wrong: "changes the primary key"},
		"the colocate column to a value of the shard":       {set: set("user_id", 5), row: row},
		"the colocate column, quoted and qualified":         {set: set("`photos`.`USER_ID`", 9), row: row, wrong: "does not place the row on its own shard"},
		"the colocate column to another shard":              {set: set("user_id", 9), row: row, wrong: "does not place the row on its own shard"},
		"the colocate column to NULL":                       {set: set("user_id", nil), row: unknown},
		"the colocate column to its zero value, no shard's": {set: set("user_id", int64(0)), row: row},
		"the colocate column to a value of no shard":        {set: set("user_id", int64(-1)), row: row, wrong: "does not place the row on its own shard"},
		"the key to its zero value":                         {set: set("id", int64(0)), row: row, wrong: "changes the primary key id"},
		"the colocate column, the row not named":            {set: set("user_id", 5), row: unknown, wrong: "does not name the one row it updates"},
		"the colocate column to an expression":              {set: set("user_id", gorm.Expr("user_id + 1")), row: row, wrong: "to an expression"},
		"the colocate column to another column":             {set: set("user_id", clause.Column{Name: "other_id"}), row: row, wrong: "to an expression"},
		"the colocate column to a subquery":                 {set: set("user_id", &gorm.DB{}), row: row, wrong: "to an expression"},
	} {
		t.Run(name, func(t *testing.T) {
			wrong := CheckAssignments(c.set, photoPlacings, c.row)
			if c.wrong == "" && wrong != "" || c.wrong != "" && !strings.Contains(wrong, c.wrong) {
				t.Fatalf("refusal %q, want %q", wrong, c.wrong)
			}
		})
	}
}

func TestCheckUpsert(t *testing.T) {
	excluded := set("user_id", clause.Column{Table: "excluded", Name: "user_id"})
	for name, c := range map[string]struct {
		set     []clause.Assignment
		keeps   bool
		refused bool
	}{
		"another column": {set: set("name", "ada")},
		"the inserted row's own value, every conflict keeps it": {set: excluded, keeps: true},
		"the inserted row's own value, a conflict may not":      {set: excluded, refused: true},
		"a value of its own": {set: set("user_id", 9), keeps: true, refused: true},
	} {
		t.Run(name, func(t *testing.T) {
			pl, column, refused := CheckUpsert(c.set, photoPlacings, func(column string) bool { return c.keeps && column == "user_id" })
			if refused != c.refused || refused && (pl.Role != "colocate" || column != "user_id") {
				t.Fatalf("refused %v on %s %q", refused, pl.Role, column)
			}
		})
	}
}
