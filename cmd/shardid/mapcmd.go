package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/shardrouter"
)

func mapCommand() *cobra.Command {
	var config string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "map --config FILE",
		Short: "Print the current shared map: its version and the logical shards of each physical database",
		Long: `Map reads the shared map from the plugin's database and prints its version,
each physical database with its ranges of logical shards, and the moves under
way.

With --json it prints one object: "version", "logical_shards" (how many),
"physical", one object per database with "name", "ranges" (of logical
shards, objects {"from": N, "to": N}, inclusive) and "logical_shards" (how
many), and "moves", the moves under way or awaiting cleanup, each with
"logical" (a range), "from", "to", "phase", "running" (whether a run,
a mover, cancel or cleanup, holds it now; a move under way that none holds
stopped, and resumes when run again) and "cancelling" (a cancel of the move
began, in its "phase", and has not ended: the move cannot resume; one that
no run holds stopped midway, and "shardid move cancel" run again ends it),
and "processes", each process that
notes itself in the plugin's database as following the map (the
application's, other commands', this one's), with "owner" (host:pid:random),
"map_version" (the version it routes by), "seen" (when it last said so),
"live" (seen lately; a move's cleanup waits for the live ones to follow its
map) and "this_command".

` + configHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withConfig(cmd, config, func(s *opsSetup) error {
				info, err := readMapInfo(cmd.Context(), s.plugin)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), info)
				}
				printMap(cmd.OutOrStdout(), info)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "the config file (JSON) naming the plugin's database and the physical databases")
	cmd.Flags().BoolVar(&asJSON, "json", false, jsonFlagHelp)
	return cmd
}

// mapReader is what map reads of the plugin.
type mapReader interface {
	RefreshMap(ctx context.Context) (int64, error)
	ShardMap() *shardrouter.Map
	Moves(ctx context.Context) ([]shardid.MoveStatus, error)
	Processes(ctx context.Context) ([]shardid.Process, error)
}

// readMapInfo reads the map, its moves and its processes. A cutover writes
// its map and its move's record at once: the map is read again after the
// moves, and all of it again when it changed, so that the map printed and
// the moves printed are of one moment (not a range on its source beside its
// move served, nor a version beside another's ranges).
func readMapInfo(ctx context.Context, p mapReader) (mapInfo, error) {
	version, err := p.RefreshMap(ctx)
	for attempt := 1; ; attempt++ {
		if err != nil {
			return mapInfo{}, fmt.Errorf("reading the shared map: %w", err)
		}
		shardMap := p.ShardMap()
		moves, err := p.Moves(ctx)
		if err != nil {
			return mapInfo{}, err
		}
		processes, err := p.Processes(ctx)
		if err != nil {
			return mapInfo{}, fmt.Errorf("reading the map's processes: %w", err)
		}
		again, err := p.RefreshMap(ctx)
		if err == nil && again == version && p.ShardMap() == shardMap {
			return mapInfoOf(version, shardMap, moves, processes), nil
		}
		if err == nil && attempt == 3 {
			return mapInfo{}, fmt.Errorf("reading the shared map: it changed while it was read, %d times: run it again", attempt)
		}
		version = again
	}
}

// mapInfo is the shared map and the moves under way; its JSON is map --json's.
type mapInfo struct {
	Version       int64         `json:"version"`
	LogicalShards int           `json:"logical_shards"`
	Physical      []mapPhysical `json:"physical"`
	Moves         []mapMove     `json:"moves"`
	Processes     []mapProcess  `json:"processes"`
}

// mapProcess is a process of the map: an application's, another command's,
// or this command's own.
type mapProcess struct {
	Owner       string    `json:"owner"`
	MapVersion  int64     `json:"map_version"`
	Seen        time.Time `json:"seen"`
	Live        bool      `json:"live"`
	ThisCommand bool      `json:"this_command"`
}

type mapPhysical struct {
	Name          string       `json:"name"`
	Ranges        []shardRange `json:"ranges"`
	LogicalShards int          `json:"logical_shards"`
}

type mapMove struct {
	Logical shardRange `json:"logical"`
	From    string     `json:"from"`
	To      string     `json:"to"`
	Phase   string     `json:"phase"`
	Running bool       `json:"running"` // a run (mover, cancel, cleanup) holds the move now
	// Cancelling: a cancel of the move began and has not ended.
	Cancelling bool `json:"cancelling"`
}

// shardRange is an inclusive range of logical shards, in JSON.
type shardRange struct {
	From int `json:"from"`
	To   int `json:"to"`
}

func mapInfoOf(version int64, m *shardrouter.Map, moves []shardid.MoveStatus, processes []shardid.Process) mapInfo {
	info := mapInfo{Version: version, LogicalShards: m.ShardCount(), Physical: make([]mapPhysical, m.Len()), Moves: []mapMove{}, Processes: []mapProcess{}}
	for _, pr := range processes {
		info.Processes = append(info.Processes, mapProcess{Owner: pr.Owner, MapVersion: pr.MapVersion, Seen: pr.Seen.UTC(), Live: pr.Live, ThisCommand: pr.Self})
	}
	for k := range m.Len() {
		shards := m.Logical(k)
		info.Physical[k] = mapPhysical{Name: m.Name(k), Ranges: rangesOf(shards), LogicalShards: len(shards)}
	}
	for _, mv := range moves {
		if mv.Phase != shardid.PhaseCancelled && mv.Phase != shardid.PhaseCleaned {
			info.Moves = append(info.Moves, mapMove{Logical: shardRange(mv.Logical), From: mv.From, To: mv.To, Phase: mv.Phase, Running: mv.Running, Cancelling: mv.Cancelling})
		}
	}
	return info
}

func printMap(w io.Writer, info mapInfo) {
	fmt.Fprintf(w, "map version %d: %s on %s\n", info.Version, plural(int64(info.LogicalShards), "logical shard"), plural(int64(len(info.Physical)), "physical database"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, ph := range info.Physical {
		if len(ph.Ranges) == 0 {
			fmt.Fprintf(tw, "  %s\tno logical shards\n", ph.Name)
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", ph.Name, rangesText(ph.Ranges), plural(int64(ph.LogicalShards), "logical shard"))
	}
	_ = tw.Flush()
	for _, mv := range info.Moves {
		logical := rangeText(shardrouter.Range(mv.Logical))
		if mv.Cancelling && mv.Running {
			fmt.Fprintf(w, "cancelling the move of logical shards %s from %s to %s (in phase %s): %s serves them\n", logical, mv.From, mv.To, mv.Phase, mv.From)
		} else if mv.Cancelling {
			fmt.Fprintf(w, "cancelling the move of logical shards %s from %s to %s (in phase %s): the cancel stopped midway, no run holds it; the move cannot resume: run the cancel again to end it (shardid move cancel --shards %s)\n", logical, mv.From, mv.To, mv.Phase, logical)
		} else if mv.Phase == shardid.PhaseServing {
			fmt.Fprintf(w, "moved logical shards %s from %s to %s: %s keeps a frozen copy until shardid move cleanup\n", logical, mv.From, mv.To, mv.From)
		} else if mv.Running {
			fmt.Fprintf(w, "moving logical shards %s from %s to %s: phase %s\n", logical, mv.From, mv.To, mv.Phase)
		} else {
			fmt.Fprintf(w, "moving logical shards %s from %s to %s: stopped in phase %s, no mover running; run the move again to resume it, or cancel it\n", logical, mv.From, mv.To, mv.Phase)
		}
	}
	// Counted as a move's cleanup counts them: the live ones, and of them
	// those that route by an older map, which it waits for.
	live, behind := 0, 0
	for _, pr := range info.Processes {
		if pr.Live {
			live++
			if pr.MapVersion < info.Version {
				behind++
			}
		}
	}
	fmt.Fprintf(w, "processes that follow the map: %d live", live)
	if behind > 0 {
		fmt.Fprintf(w, ", %d of them on a version before %d (a move's cleanup waits for them)", behind, info.Version)
	}
	if gone := len(info.Processes) - live; gone > 0 {
		fmt.Fprintf(w, "; %d silent, counted gone", gone)
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, pr := range info.Processes {
		state := "live"
		if !pr.Live {
			state = "silent (counted gone)"
		}
		if pr.ThisCommand {
			state += ", this command"
		}
		fmt.Fprintf(tw, "  %s\tversion %d\tseen %s\t%s\n", pr.Owner, pr.MapVersion, pr.Seen.Format(time.RFC3339), state)
	}
	_ = tw.Flush()
}

// rangesOf groups sorted logical shards into ranges.
func rangesOf(shards []int) []shardRange {
	ranges := []shardRange{}
	for i := 0; i < len(shards); {
		j := i
		for j+1 < len(shards) && shards[j+1] == shards[j]+1 {
			j++
		}
		ranges = append(ranges, shardRange{From: shards[i], To: shards[j]})
		i = j + 1
	}
	return ranges
}

// rangesText writes ranges as 0-99,200-299.
func rangesText(ranges []shardRange) string {
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		parts[i] = rangeText(shardrouter.Range(r))
	}
	return strings.Join(parts, ",")
}
