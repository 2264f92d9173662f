package engine

import (
	"errors"
	"log/slog"
	"strings"
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

// TestAFailedRecoveryIsNotCountedAsFinished: a branch whose commit or
// rollback by recovery failed stays prepared for the next pass; it is not
// counted among the branches recovery finished (it would be counted again
// when the next pass finishes it), and its error names its database.
func TestAFailedRecoveryIsNotCountedAsFinished(t *testing.T) {
	e := &Engine{physical: []*physical{{name: "s0"}, {name: "s1"}}}
	e.config.Log = slog.New(slog.DiscardHandler)
	failed := errors.New("connection reset")
	for _, a := range []twophase.Action{
		{GID: "g1", Branch: "1", Outcome: twophase.Committed, Err: failed},
		{GID: "g2", Branch: "0", Outcome: twophase.Aborted, Err: failed},
		{GID: "g3", Branch: "1", Outcome: twophase.Undecided},
	} {
		err := e.noteRecovered(a)
		if a.Err != nil && (!errors.Is(err, failed) || !strings.Contains(err.Error(), e.branchDatabase(a))) {
			t.Errorf("%s: %v, want its error on %s", a.GID, err, e.branchDatabase(a))
		}
	}
	if s := e.TransactionStats(); s.RecoveredCommit != 0 || s.RecoveredRollback != 0 {
		t.Errorf("branches that failed to finish counted as recovered: %+v", s)
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.noteRecovered(twophase.Action{GID: "g1", Branch: "1", Outcome: twophase.Committed}))
	must(e.noteRecovered(twophase.Action{GID: "g2", Branch: "0", Outcome: twophase.Aborted}))
	if s := e.TransactionStats(); s.RecoveredCommit != 1 || s.RecoveredRollback != 1 {
		t.Errorf("branches recovery finished: %+v, want one commit, one rollback", s)
	}
}
