package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/shardrouter"
)

func decodeCommand() *cobra.Command {
	var flags layoutFlags
	var maps []string
	cmd := &cobra.Command{
		Use:   "decode ID...",
		Short: "Decode IDs and UUIDs: time (UTC and local), logical shard, physical shard, worker, sequence",
		Long: `Decode IDs: time (UTC and local), logical shard, the physical shard that holds it
when --map is given, sequence, and worker for snowflake. An ID may be written
as a decimal number or as a JSON string ("506214187877944320"). A UUID of the
uuidv7 or uuidv4 strategy gives its logical shard, and for v7 its time.
Segment and ticket IDs, and v4 UUIDs, carry no time.`,
		Example: `  shardid decode 506214187877944320
  shardid decode '"506214187877944320"' --map pg-a=0-4095 --map pg-b=4096-8191
  shardid decode 019ad9a4-3c21-7b44-9a1e-5d2f0c3b8e41`,
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
	arg = unquote(arg)
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is neither a 64-bit ID nor a UUID", arg)
	}
	return id, nil
}

// unquote strips the JSON quotes of an ID written as a JSON string.
func unquote(arg string) string {
	arg = strings.TrimSpace(arg)
	var s string
	if strings.HasPrefix(arg, `"`) && json.Unmarshal([]byte(arg), &s) == nil {
		return s
	}
	return arg
}

func decodeOne(w io.Writer, l shardid.Layout, m *shardrouter.Map, arg string) error {
	if u, err := uuid.Parse(unquote(arg)); err == nil {
		return decodeUUID(w, l, m, u)
	}
	id, err := parseID(arg)
	if err != nil {
		return err
	}
	if err := l.Check(id, time.Now()); err != nil {
		return fmt.Errorf("%d: this layout cannot have made it: %w", id, err)
	}
	p := l.Decode(id)
	fmt.Fprintf(w, "%d\n", id)
	fmt.Fprintf(w, "  time           %s  (%s local; instagram and snowflake IDs; segment and ticket IDs hold a counter here, not a time)\n",
		p.Time.UTC().Format("2006-01-02T15:04:05.000Z"), p.Time.Local().Format("2006-01-02 15:04:05.000 MST"))
	fmt.Fprintf(w, "  logical shard  %d\n", p.Shard)
	if m != nil {
		fmt.Fprintf(w, "  physical       %s\n", m.Name(m.Physical(p.Shard)))
	}
	fmt.Fprintf(w, "  sequence       %d\n", p.Sequence)
	if l.WorkerBits > 0 {
		fmt.Fprintf(w, "  snowflake      worker %d, sequence %d (if snowflake made it)\n", p.Worker, p.WorkerSequence)
	}
	return nil
}

// decodeUUID reads a UUID of the uuidv7 or uuidv4 strategy: the logical shard
// in the low ShardBits of its random part, and for v7 its time.
func decodeUUID(w io.Writer, l shardid.Layout, m *shardrouter.Map, u uuid.UUID) error {
	if u.Version() != 7 && u.Version() != 4 {
		return fmt.Errorf("%s is a version %d UUID; shardid makes versions 7 and 4", u, u.Version())
	}
	shard := int(binary.BigEndian.Uint64(u[8:]) & uint64(l.ShardCount()-1))
	fmt.Fprintf(w, "%s\n", u)
	if u.Version() == 7 {
		sec, nsec := u.Time().UnixTime()
		at := time.Unix(sec, nsec)
		fmt.Fprintf(w, "  time           %s  (%s local; uuidv7)\n", at.UTC().Format("2006-01-02T15:04:05.000Z"), at.Local().Format("2006-01-02 15:04:05.000 MST"))
	} else {
		fmt.Fprintf(w, "  time           none (uuidv4 carries no time)\n")
	}
	fmt.Fprintf(w, "  logical shard  %d\n", shard)
	if m != nil {
		fmt.Fprintf(w, "  physical       %s\n", m.Name(m.Physical(shard)))
	}
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
