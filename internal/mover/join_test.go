package mover

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// TestJoinCopyResumesAfterItsCursor: a join table's copy reads on after the
// last primary key it copied, owner's column first, also once its cursor
// went through the state's JSON; a table of one key reads as before.
func TestJoinCopyResumesAfterItsCursor(t *testing.T) {
	join := &movedTable{name: "user_languages", dialect: "postgres", inRange: "s BETWEEN $1 AND $2",
		columns: []string{"language_id", "user_id"}, pk: []string{"user_id", "language_id"}}
	if got, want := join.chunkQuery(true, 10), `SELECT "language_id", "user_id" FROM "user_languages" WHERE s BETWEEN $1 AND $2`+
		` AND "user_id" >= $3 AND ("user_id", "language_id") > ($4, $5) ORDER BY "user_id", "language_id" LIMIT 10`; got != want {
		t.Errorf("chunk query:\n%s\nwant\n%s", got, want)
	}
	stored, err := json.Marshal(join.cursorOf([]any{int64(3), int64(7)}))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(stored))
	dec.UseNumber() // as the store reads it
	var cursor any
	if err := dec.Decode(&cursor); err != nil {
		t.Fatal(err)
	}
	if got := join.afterArgs(cursor); !reflect.DeepEqual(got, []any{int64(7), int64(7), int64(3)}) {
		t.Errorf("the arguments after the cursor %s: %v, want [7 7 3]", stored, got)
	}

	users := &movedTable{name: "users", dialect: "mysql", inRange: "s BETWEEN ? AND ?", columns: []string{"id", "name"}, key: "id", pk: []string{"id"}}
	if got, want := users.chunkQuery(true, 10), "SELECT `id`, `name` FROM `users` WHERE s BETWEEN ? AND ? AND `id` > ? ORDER BY `id` LIMIT 10"; got != want {
		t.Errorf("chunk query:\n%s\nwant\n%s", got, want)
	}
	if got := users.afterArgs(json.Number("42")); !reflect.DeepEqual(got, []any{int64(42)}) {
		t.Errorf("the arguments after the cursor 42: %v", got)
	}
}
