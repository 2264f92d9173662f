package engine

import "testing"

// Savepoint statements are read in every form the servers take.
func TestSavepointStatementForms(t *testing.T) {
	cases := []struct{ sql, kind, name string }{
		{"SAVEPOINT sp1", "set", "sp1"},
		{"savepoint `sp1`;", "set", "`sp1`"},
		{"ROLLBACK TO SAVEPOINT sp1", "rollback", "sp1"},
		{"ROLLBACK TO sp1", "rollback", "sp1"},
		{"ROLLBACK WORK TO SAVEPOINT sp1", "rollback", "sp1"},
		{"rollback transaction to sp1 ;", "rollback", "sp1"},
		{"RELEASE SAVEPOINT sp1", "release", "sp1"},
		{"RELEASE sp1", "release", "sp1"},
		{"ROLLBACK", "", ""},
		{"ROLLBACK WORK", "", ""},
		{"SELECT 1", "", ""},
		{"SAVEPOINT a b", "", ""},
	}
	for _, c := range cases {
		kind, name, ok := savepointStatement(c.sql)
		if kind != c.kind || name != c.name || ok != (c.kind != "") {
			t.Errorf("%q: %q %q %v, want %q %q", c.sql, kind, name, ok, c.kind, c.name)
		}
	}
	if !sameSavepoint(`"SP1"`, "sp1") || !sameSavepoint("`a`", "A") || sameSavepoint("sp1", "sp2") {
		t.Error("names compare with quotes dropped and case folded")
	}
}
