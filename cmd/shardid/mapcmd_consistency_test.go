package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/shardrouter"
)

// cutoverMidRead is a plugin whose move of 0-10 from a to c cuts over as map
// reads the moves: the map and the move's record change at once, and the
// plugin routes by the new map from its next reading.
type cutoverMidRead struct {
	maps     [2]*shardrouter.Map
	moves    [2][]shardid.MoveStatus
	state    int // in the databases: 0 before the cutover, 1 after
	followed int // the map the plugin routes by
}

func (p *cutoverMidRead) RefreshMap(context.Context) (int64, error) {
	p.followed = p.state
	return int64(p.followed + 1), nil
}

func (p *cutoverMidRead) ShardMap() *shardrouter.Map { return p.maps[p.followed] }

func (p *cutoverMidRead) Moves(context.Context) ([]shardid.MoveStatus, error) {
	p.state = 1
	return p.moves[p.state], nil
}

func (p *cutoverMidRead) Processes(context.Context) ([]shardid.Process, error) { return nil, nil }

// TestMapPrintsTheMapAndTheMovesOfOneMoment: a cutover between map's
// reading of the map and of the moves does not print a range on its source
// beside its move saying the target serves it: map reads the map again.
func TestMapPrintsTheMapAndTheMovesOfOneMoment(t *testing.T) {
	mapOf := func(a []shardid.Range, c []shardid.Range) *shardrouter.Map {
		m, err := shardrouter.NewMap(8192, []shardrouter.Physical{{Name: "a", Logical: a}, {Name: "b", Logical: []shardid.Range{{From: 4096, To: 8191}}}, {Name: "c", Logical: c}})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	move := shardid.MoveStatus{Logical: shardid.Range{From: 0, To: 10}, From: "a", To: "c", Phase: shardid.PhaseCopy, Running: true}
	served := move
	served.Phase, served.Running = shardid.PhaseServing, false
	p := &cutoverMidRead{
		maps:  [2]*shardrouter.Map{mapOf([]shardid.Range{{From: 0, To: 4095}}, nil), mapOf([]shardid.Range{{From: 11, To: 4095}}, []shardid.Range{{From: 0, To: 10}})},
		moves: [2][]shardid.MoveStatus{{move}, {served}},
	}
	info, err := readMapInfo(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	printMap(&out, info)
	if info.Version != 2 || !strings.Contains(out.String(), "c  0-10") || !strings.Contains(out.String(), "moved logical shards 0-10 from a to c") {
		t.Errorf("map read across a cutover printed version %d and\n%s\nwant version 2, c holding 0-10 and the move served", info.Version, out.String())
	}
}

// TestMapCountsTheLiveProcessesAndThoseBehind: map's count of the processes
// is of the live ones, as a move's cleanup counts them, and says how many
// of them route by an older map; the silent ones are counted apart, not as
// processes that follow the map.
func TestMapCountsTheLiveProcessesAndThoseBehind(t *testing.T) {
	m, err := shardrouter.NewMap(8192, []shardrouter.Physical{{Name: "a", Logical: []shardid.Range{{From: 0, To: 8191}}}})
	if err != nil {
		t.Fatal(err)
	}
	info := mapInfoOf(5, m, nil, []shardid.Process{
		{Owner: "pod-1", MapVersion: 5, Live: true},
		{Owner: "pod-2", MapVersion: 3, Live: true},
		{Owner: "crashed-1", MapVersion: 2},
		{Owner: "crashed-2", MapVersion: 5},
		{Owner: "command", MapVersion: 5, Live: true, Self: true},
	})
	var out bytes.Buffer
	printMap(&out, info)
	want := "processes that follow the map: 3 live, 1 of them on a version before 5 (a move's cleanup waits for them); 2 silent, counted gone\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("map printed\n%s\nwant the line %q", out.String(), want)
	}
}
