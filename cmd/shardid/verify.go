package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/shardrouter"
)

func verifyCommand() *cobra.Command {
	var config string
	cmd := &cobra.Command{
		Use:   "verify --config FILE",
		Short: "Read every physical database and report rows that sit on a database their logical shard does not map to",
		Long: `Verify reads every sharded table the application migrated with the plugin, on
every physical database, and reports the rows whose logical shard the shared
map sends to another database: the table, the database, how many, and up to
ten of their keys with the database each belongs on.

Rows that a move left on its source until "shardid move cleanup" are listed
and marked, but are not counted as misplaced: the source's triggers refuse
their writes and the plugin no longer reads them there. The exit status is
non-zero only when other rows are misplaced.

` + configHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withConfig(cmd, config, func(s *opsSetup) error {
				found, err := s.plugin.Audit(cmd.Context())
				if err != nil {
					return err
				}
				return reportMisplaced(cmd.OutOrStdout(), s.plugin, found)
			})
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "the config file (JSON) naming the plugin's database and the physical databases")
	return cmd
}

func reportMisplaced(w io.Writer, plugin *shardid.Plugin, found []shardid.Misplaced) error {
	layout, shardMap := plugin.Layout(), plugin.ShardMap()
	var misplaced, left int64
	for _, m := range found {
		note := ""
		if m.LeftByMove {
			note = " (left by a move awaiting cleanup: shardid move cleanup deletes them)"
			left += m.Rows
		} else {
			misplaced += m.Rows
		}
		fmt.Fprintf(w, "%s on %s: %s whose logical shard maps elsewhere%s\n", m.Table, m.Database, plural(m.Rows, "row"), note)
		keys := make([]string, len(m.Keys))
		for i, k := range m.Keys {
			keys[i] = fmt.Sprint(k)
			if shard, ok := shardOfKey(layout, k); ok {
				keys[i] += fmt.Sprintf(" (logical shard %d, on %s)", shard, shardMap.Name(shardMap.Physical(shard)))
			}
		}
		if len(keys) > 0 {
			fmt.Fprintf(w, "  keys %s\n", strings.Join(keys, ", "))
		}
	}
	switch {
	case misplaced > 0:
		return fmt.Errorf("%s on a database their logical shard does not map to (map version %d)", plural(misplaced, "row"), plugin.MapVersion())
	case left > 0:
		fmt.Fprintf(w, "all other rows are on the database their shard maps to (map version %d)\n", plugin.MapVersion())
	default:
		fmt.Fprintf(w, "all rows are on the database their shard maps to (map version %d)\n", plugin.MapVersion())
	}
	return nil
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

// plural writes n with its noun, singular for one.
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
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
