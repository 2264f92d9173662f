package engine

import (
	"testing"

	"github.com/shardid/shardid/internal/twophase"
)

// TestARecoveredBranchIsNamedByItsDatabase: recovery finishes a branch on
// the first database whose server lists it (MySQL lists a server's branches
// on each of its databases, the plugin's own first); the log and errors
// name the database the branch was written on, which its name begins with.
func TestARecoveredBranchIsNamedByItsDatabase(t *testing.T) {
	e := &Engine{physical: []*physical{{name: "s0"}, {name: "s1"}, {name: "s12"}}}
	for branch, want := range map[string]string{
		"1":       "s1",
		"2s3":     "s12",
		"0s12":    "s0",
		"own":     ownDatabaseName,
		"owns2":   ownDatabaseName,
		"9":       "listed-on", // not one of this process's shards: where it was found
		"unknown": "listed-on",
	} {
		if got := e.branchDatabase(twophase.Action{Branch: branch, Database: "listed-on"}); got != want {
			t.Errorf("branch %q: named %q; want %q", branch, got, want)
		}
	}
}
