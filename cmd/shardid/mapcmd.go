package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/shardrouter"
)

func mapCommand() *cobra.Command {
	var config string
	cmd := &cobra.Command{
		Use:   "map --config FILE",
		Short: "Print the current shared map: its version and the logical shards of each physical database",
		Long: `Map reads the shared map from the plugin's database and prints its version,
each physical database with its ranges of logical shards, and the moves under
way.

` + configHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withConfig(cmd, config, func(s *opsSetup) error {
				version, err := s.plugin.RefreshMap(cmd.Context())
				if err != nil {
					return fmt.Errorf("reading the shared map: %w", err)
				}
				moves, err := s.plugin.Moves(cmd.Context())
				if err != nil {
					return err
				}
				printMap(cmd.OutOrStdout(), version, s.plugin.ShardMap(), moves)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "the config file (JSON) naming the plugin's database and the physical databases")
	return cmd
}

func printMap(w io.Writer, version int64, m *shardrouter.Map, moves []shardid.MoveStatus) {
	fmt.Fprintf(w, "map version %d: %s on %s\n", version, plural(int64(m.ShardCount()), "logical shard"), plural(int64(m.Len()), "physical database"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for k := range m.Len() {
		shards := m.Logical(k)
		if len(shards) == 0 {
			fmt.Fprintf(tw, "  %s\tno logical shards\n", m.Name(k))
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", m.Name(k), rangesText(shards), plural(int64(len(shards)), "logical shard"))
	}
	_ = tw.Flush()
	for _, mv := range moves {
		switch mv.Phase {
		case shardid.PhaseCancelled, shardid.PhaseCleaned:
		case shardid.PhaseServing:
			fmt.Fprintf(w, "moved logical shards %s from %s to %s: %s keeps a frozen copy until shardid move cleanup\n", rangeText(mv.Logical), mv.From, mv.To, mv.From)
		default:
			fmt.Fprintf(w, "moving logical shards %s from %s to %s: phase %s\n", rangeText(mv.Logical), mv.From, mv.To, mv.Phase)
		}
	}
}

// rangesText writes sorted logical shards as ranges: 0-99,200-299.
func rangesText(shards []int) string {
	var parts []string
	for i := 0; i < len(shards); {
		j := i
		for j+1 < len(shards) && shards[j+1] == shards[j]+1 {
			j++
		}
		parts = append(parts, rangeText(shardrouter.Range{From: shards[i], To: shards[j]}))
		i = j + 1
	}
	return strings.Join(parts, ",")
}
