package engine

import "testing"

// Two recorded tables of one name in two schemas share its bare key: the
// drop of one leaves the other's name sharded, not unknown.
func TestForgettingOneOfTwoRecordedTablesOfANameKeepsTheOthers(t *testing.T) {
	e := &Engine{}
	e.recordTable("app.members")
	e.recordTable("archive.members")
	e.forgetRecordedTable("archive.members")
	if _, sharded := e.shardedModel("members"); !sharded {
		t.Error("members, the bare name of app.members still recorded, is no longer sharded")
	}
	if _, sharded := e.shardedModel("app.members"); !sharded {
		t.Error("app.members is no longer sharded")
	}
	if _, sharded := e.shardedModel("archive.members"); sharded {
		t.Error("archive.members, dropped, is still sharded")
	}
}

// Once both are dropped, the name is no longer sharded.
func TestForgettingEveryRecordedTableOfANameForgetsTheName(t *testing.T) {
	e := &Engine{}
	e.recordTable("members")
	e.recordTable("app.members")
	e.forgetRecordedTable("app.members")
	e.forgetRecordedTable("members")
	if _, sharded := e.shardedModel("members"); sharded {
		t.Error("members is still sharded, its tables dropped")
	}
}
