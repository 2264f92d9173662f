package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/shardrouter"
)

func decodeCommand() *cobra.Command {
	var flags layoutFlags
	var maps []string
	cmd := &cobra.Command{
		Use:   "decode ID...",
		Short: "Decode IDs: time (UTC and local), logical shard, physical shard, worker, sequence",
		Long: `Decode IDs: time (UTC and local), logical shard, the physical shard that holds it
when --map is given, worker and sequence. An ID may be written as a decimal
number or as a JSON string ("506214187877944320").`,
		Example: `  shardid decode 506214187877944320
  shardid decode '"506214187877944320"' --map pg-a=0-4095 --map pg-b=4096-8191`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := flags.layout()
			if err != nil {
				return err
			}
			var m *shardrouter.Map
			if len(maps) > 0 {
				if m, err = parseMap(maps, l.ShardCount()); err != nil {
					return err
				}
			}
			for _, arg := range args {
				if err := decodeOne(cmd.OutOrStdout(), l, m, arg); err != nil {
					return err
				}
			}
			return nil
		},
	}
	flags.register(cmd)
	cmd.Flags().StringArrayVar(&maps, "map", nil, "a physical database and its logical shards, NAME=FROM-TO[,FROM-TO...]; repeat for each")
	return cmd
}

// parseID reads a decimal ID or a JSON string holding one.
func parseID(arg string) (int64, error) {
	arg = strings.TrimSpace(arg)
	if strings.HasPrefix(arg, `"`) {
		var s string
		if err := json.Unmarshal([]byte(arg), &s); err != nil {
			return 0, fmt.Errorf("%s is not a JSON string: %w", arg, err)
		}
		arg = s
	}
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a 64-bit ID", arg)
	}
	return id, nil
}

func decodeOne(w io.Writer, l shardid.Layout, m *shardrouter.Map, arg string) error {
	id, err := parseID(arg)
	if err != nil {
		return err
	}
	if err := l.Check(id, time.Now()); err != nil {
		return fmt.Errorf("%d: this layout cannot have made it: %w", id, err)
	}
	p := l.Decode(id)
	fmt.Fprintf(w, "%d\n", id)
	fmt.Fprintf(w, "  time           %s  (%s local)\n", p.Time.UTC().Format("2006-01-02T15:04:05.000Z"), p.Time.Local().Format("2006-01-02 15:04:05.000 MST"))
	fmt.Fprintf(w, "  logical shard  %d\n", p.Shard)
	if m != nil {
		fmt.Fprintf(w, "  physical       %s\n", m.Name(m.Physical(p.Shard)))
	}
	if l.WorkerBits > 0 {
		fmt.Fprintf(w, "  worker         %d\n", p.Worker)
	}
	fmt.Fprintf(w, "  sequence       %d\n", p.Sequence)
	return nil
}

// parseMap reads --map flags into a validated shard map.
func parseMap(flags []string, shardCount int) (*shardrouter.Map, error) {
	var physical []shardrouter.Physical
	for _, f := range flags {
		name, ranges, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("--map %q: want NAME=FROM-TO[,FROM-TO...]", f)
		}
		p := shardrouter.Physical{Name: name}
		for r := range strings.SplitSeq(ranges, ",") {
			from, to, ok := strings.Cut(r, "-")
			a, errA := strconv.Atoi(strings.TrimSpace(from))
			b, errB := strconv.Atoi(strings.TrimSpace(to))
			if !ok || errA != nil || errB != nil {
				return nil, fmt.Errorf("--map %q: %q is not FROM-TO", f, r)
			}
			p.Logical = append(p.Logical, shardrouter.Range{From: a, To: b})
		}
		physical = append(physical, p)
	}
	return shardrouter.NewMap(shardCount, physical)
}
