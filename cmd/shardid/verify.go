package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/shardrouter"
)

func verifyCommand() *cobra.Command {
	var config string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify --config FILE",
		Short: "Read every physical database and report rows that sit on a database their logical shard does not map to",
		Long: `Verify reads every sharded table the application migrated with the plugin, on
every physical database, and reports the rows whose logical shard the shared
map sends to another database: the table, the database, how many, and up to
ten of their keys with the database each belongs on.

A move's copy is listed and marked, but not counted as misplaced: the rows
a move under way has copied to its target (its cutover serves them there,
"shardid move cancel" deletes them), and those it left on its source after
the cutover until "shardid move cleanup" (the source's triggers refuse their
writes and the plugin no longer reads them there). The exit status is
non-zero only when other rows are misplaced, or a database could not be
read (what the others hold is still listed).

With --json it prints one object: "map_version", "misplaced_rows",
"left_by_moves_rows", "tables", one object per table and database with
misplaced rows: "table", "database", "rows", "left_by_move" and "keys" (up
to ten, each with "key" as a string and, for an ID or UUID key,
"logical_shard" and "belongs_on"), and "unread_databases", one object per
database that could not be read: "database" and "error".

` + configHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withConfig(cmd, config, func(s *opsSetup) error {
				found, err := s.plugin.Audit(cmd.Context())
				unread, readAny := unreadDatabases(err)
				if !readAny {
					return err
				}
				moves, movesErr := s.plugin.Moves(cmd.Context())
				if movesErr != nil {
					return movesErr
				}
				report := verifyReportOf(s.plugin, found, moves)
				report.Unread = unread
				if asJSON {
					if err := printJSON(cmd.OutOrStdout(), report); err != nil {
						return err
					}
				} else {
					printVerify(cmd.OutOrStdout(), report)
				}
				if err != nil { // a database it could not read: what the others hold is shown above
					return err
				}
				if report.Misplaced > 0 {
					return fmt.Errorf("%s on a database their logical shard does not map to (map version %d)", plural(report.Misplaced, "row"), report.MapVersion)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "the config file (JSON) naming the plugin's database and the physical databases")
	cmd.Flags().BoolVar(&asJSON, "json", false, jsonFlagHelp)
	return cmd
}

// verifyReport is what verify found; its JSON is verify --json's.
type verifyReport struct {
	MapVersion  int64         `json:"map_version"`
	Misplaced   int64         `json:"misplaced_rows"`
	LeftByMoves int64         `json:"left_by_moves_rows"`
	Tables      []verifyTable `json:"tables"`
	Unread      []verifyError `json:"unread_databases"`
	databases   int           // how many physical databases there are
}

type verifyTable struct {
	Table      string      `json:"table"`
	Database   string      `json:"database"`
	Rows       int64       `json:"rows"`
	LeftByMove bool        `json:"left_by_move"`
	Keys       []verifyKey `json:"keys"`
	copying    bool        // a move's copy on its target, before the cutover, not a source's frozen copy
}

type verifyKey struct {
	Key          string `json:"key"`
	LogicalShard *int   `json:"logical_shard,omitempty"`
	BelongsOn    string `json:"belongs_on,omitempty"`
}

// verifyError is a physical database verify could not read, and why.
type verifyError struct {
	Database string `json:"database"`
	Error    string `json:"error"`
}

// unreadDatabases lists the databases err says Audit could not read;
// readAny is false when err stopped it before it read any (the map, the
// plugin's database), so there is nothing to report but err.
func unreadDatabases(err error) (unread []verifyError, readAny bool) {
	unread = []verifyError{}
	if err == nil {
		return unread, true
	}
	all := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		all = joined.Unwrap()
	}
	for _, e := range all {
		var u *shardid.UnreadDatabaseError
		if !errors.As(e, &u) {
			return nil, false
		}
		unread = append(unread, verifyError{Database: u.Database, Error: u.Error()})
	}
	return unread, true
}

func verifyReportOf(plugin *shardid.Plugin, found []shardid.Misplaced, moves []shardid.MoveStatus) verifyReport {
	layout, shardMap := plugin.Layout(), plugin.ShardMap()
	report := verifyReport{MapVersion: plugin.MapVersion(), Tables: []verifyTable{}, databases: len(plugin.Physicals())}
	for _, m := range found {
		if m.LeftByMove {
			report.LeftByMoves += m.Rows
		} else {
			report.Misplaced += m.Rows
		}
		table := verifyTable{Table: m.Table, Database: m.Database, Rows: m.Rows, LeftByMove: m.LeftByMove, Keys: make([]verifyKey, len(m.Keys))}
		table.copying = m.LeftByMove && slices.ContainsFunc(moves, func(mv shardid.MoveStatus) bool {
			return mv.To == m.Database && underWay(mv.Phase) && !slices.ContainsFunc(moves, func(other shardid.MoveStatus) bool {
				return other.From == m.Database && other.Phase == shardid.PhaseServing
			})
		})
		for i, k := range m.Keys {
			table.Keys[i].Key = fmt.Sprint(k)
			if shard, ok := shardOfKey(layout, k); ok {
				table.Keys[i].LogicalShard, table.Keys[i].BelongsOn = &shard, shardMap.Name(shardMap.Physical(shard))
			}
		}
		report.Tables = append(report.Tables, table)
	}
	return report
}

func printVerify(w io.Writer, report verifyReport) {
	for _, m := range report.Tables {
		note := ""
		switch {
		case m.copying: // the rows of a move under way on its target, which a cancel deletes
			note = " (a move's copy under way: its cutover serves them here, shardid move cancel deletes them)"
		case m.LeftByMove:
			note = " (a move's copy: its cutover serves the target's, shardid move cleanup deletes the source's)"
		}
		fmt.Fprintf(w, "%s on %s: %s whose logical shard maps elsewhere%s\n", m.Table, m.Database, plural(m.Rows, "row"), note)
		keys := make([]string, len(m.Keys))
		for i, k := range m.Keys {
			keys[i] = k.Key
			if k.LogicalShard != nil {
				keys[i] += fmt.Sprintf(" (logical shard %d, on %s)", *k.LogicalShard, k.BelongsOn)
			}
		}
		if len(keys) > 0 {
			fmt.Fprintf(w, "  keys %s\n", strings.Join(keys, ", "))
		}
	}
	for _, u := range report.Unread {
		fmt.Fprintf(w, "%s could not be read: %s\n", u.Database, u.Error)
	}
	switch {
	case report.Misplaced > 0:
	case len(report.Unread) > 0 && len(report.Unread) >= report.databases:
		fmt.Fprintln(w, "no database could be read: no row was verified")
	case len(report.Unread) > 0:
		fmt.Fprintf(w, "all rows of the databases read are on the database their shard maps to (map version %d)\n", report.MapVersion)
	case report.LeftByMoves > 0:
		fmt.Fprintf(w, "all other rows are on the database their shard maps to (map version %d)\n", report.MapVersion)
	default:
		fmt.Fprintf(w, "all rows are on the database their shard maps to (map version %d)\n", report.MapVersion)
	}
}

// shardOfKey is the logical shard of an int64 key, or of a UUID key of the
// uuidv7 and uuidv4 strategies (the low shard bits of its random part).
func shardOfKey(l shardid.Layout, key any) (int, bool) {
	switch k := key.(type) {
	case int64:
		return l.Shard(k), true
	case string:
		u, err := uuid.Parse(k)
		if err != nil {
			return 0, false
		}
		return int(binary.BigEndian.Uint64(u[8:]) & uint64(l.ShardCount()-1)), true
	}
	return 0, false
}

// rangeText writes a range as FROM-TO, or N for one shard.
func rangeText(r shardrouter.Range) string {
	if r.From == r.To {
		return fmt.Sprint(r.From)
	}
	return fmt.Sprintf("%d-%d", r.From, r.To)
}

// joinList writes names as "a, b and c".
func joinList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
