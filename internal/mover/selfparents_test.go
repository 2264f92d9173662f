package mover

import (
	"database/sql"
	"fmt"
	"slices"
	"testing"

	_ "github.com/glebarez/go-sqlite"
)

// TestParentsFirstOrdersAChunkAndSetsAsideRowsWaitingForParents: of a chunk
// of a table referencing itself, rows follow their parents among them, and
// those whose parent is neither among them nor on the target, with the rows
// under them, wait: the copy writes the rest in one statement and keeps
// those for later, instead of trying each alone.
func TestParentsFirstOrdersAChunkAndSetsAsideRowsWaitingForParents(t *testing.T) {
	target, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	target.SetMaxOpenConns(1)
	for _, q := range []string{
		"CREATE TABLE nodes (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES nodes(id), body TEXT)",
		"INSERT INTO nodes (id, parent_id, body) VALUES (1, NULL, 'on the target')",
	} {
		if _, err := target.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	table := &movedTable{name: "nodes", dialect: "sqlite", key: "id", pk: []string{"id"}, columns: []string{"id", "parent_id", "body"}}
	keys, err := readSelfKeys(t.Context(), target, table)
	if err != nil || !slices.Equal(keys, []selfKey{{child: 1, parent: 0}}) {
		t.Fatalf("the self-referencing keys read: %v, %v; want parent_id referencing id", keys, err)
	}
	table.selfKeys = keys
	row := func(id int64, parent any) []any { return []any{id, parent, "x"} }
	chunk := [][]any{
		row(10, int64(12)), // its parent later in the chunk
		row(11, int64(99)), // its parent nowhere yet
		row(12, int64(1)),  // its parent on the target
		row(13, int64(11)), // under a waiting row
		row(14, nil),
		row(15, []byte("12")), // as MySQL's text protocol reads it
	}
	ordered, waiting := table.parentsFirst(t.Context(), target, chunk)
	ids := func(rows [][]any) string {
		var out []any
		for _, r := range rows {
			out = append(out, r[0])
		}
		return fmt.Sprint(out)
	}
	if got := ids(ordered); got != "[12 14 15 10]" {
		t.Errorf("written, in order: %s; want [12 14 15 10]: each after its parent", got)
	}
	if got := ids(waiting); got != "[11 13]" {
		t.Errorf("waiting: %s; want [11 13]: the row without its parent and the row under it", got)
	}
}
