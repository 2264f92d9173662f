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
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "decode ID...",
		Short: "Decode IDs and UUIDs: time (UTC and local), logical shard, physical shard, worker, sequence",
		Long: `Decode IDs: time (UTC and local), logical shard, the physical shard that holds it
when --map is given, sequence, and worker for snowflake. An ID may be written
as a decimal number or as a JSON string ("506214187877944320"). A UUID of the
uuidv7 or uuidv4 strategy gives its logical shard, and for v7 its time.
Segment and ticket IDs, and v4 UUIDs, carry no time.

With --json it prints an array, one object per argument: "id" (the ID as a
decimal string, or the UUID), "kind" ("id", "uuidv7" or "uuidv4"), "time"
(RFC 3339, UTC; not for uuidv4), "logical_shard", "physical" (with --map),
and for IDs "sequence", and with worker bits "worker" and "worker_sequence".`,
		Example: `  shardid decode 506214187877944320
  shardid decode '"506214187877944320"' --map pg-a=0-4095 --map pg-b=4096-8191
  shardid decode 019ad9a4-3c21-7b44-9a1e-5d2f0c3b8e41 --json`,
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
			all := make([]decoded, 0, len(args))
			for _, arg := range args {
				d, err := decodeOne(l, m, arg)
				if err != nil {
					return err
				}
				all = append(all, d)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), all)
			}
			for _, d := range all {
				printDecoded(cmd.OutOrStdout(), d)
			}
			return nil
		},
	}
	flags.register(cmd)
	cmd.Flags().StringArrayVar(&maps, "map", nil, "a physical database and its logical shards, NAME=FROM-TO[,FROM-TO...] (N for one shard, as in a config file); repeat for each")
	cmd.Flags().BoolVar(&asJSON, "json", false, jsonFlagHelp)
	return cmd
}

// decoded is what an ID or UUID says; its JSON is decode --json's.
type decoded struct {
	ID             string     `json:"id"`
	Kind           string     `json:"kind"`
	Time           *time.Time `json:"time,omitempty"`
	LogicalShard   int        `json:"logical_shard"`
	Physical       string     `json:"physical,omitempty"`
	Sequence       *int       `json:"sequence,omitempty"`
	Worker         *int       `json:"worker,omitempty"`
	WorkerSequence *int       `json:"worker_sequence,omitempty"`
}

// Kinds of what decode reads.
const (
	kindID     = "id"
	kindUUIDv7 = "uuidv7"
	kindUUIDv4 = "uuidv4"
)

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

func decodeOne(l shardid.Layout, m *shardrouter.Map, arg string) (decoded, error) {
	if u, err := uuid.Parse(unquote(arg)); err == nil {
		return decodeUUID(l, m, u)
	}
	id, err := parseID(arg)
	if err != nil {
		return decoded{}, err
	}
	if err := l.Check(id, time.Now()); err != nil {
		return decoded{}, fmt.Errorf("%d: this layout cannot have made it: %w", id, err)
	}
	p := l.Decode(id)
	at := p.Time.UTC()
	d := decoded{ID: strconv.FormatInt(id, 10), Kind: kindID, Time: &at, LogicalShard: p.Shard, Sequence: &p.Sequence}
	if l.WorkerBits > 0 {
		d.Worker, d.WorkerSequence = &p.Worker, &p.WorkerSequence
	}
	d.Physical = physicalOf(m, p.Shard)
	return d, nil
}

// decodeUUID reads a UUID of the uuidv7 or uuidv4 strategy: the logical shard
// in the low ShardBits of its random part, and for v7 its time.
func decodeUUID(l shardid.Layout, m *shardrouter.Map, u uuid.UUID) (decoded, error) {
	if u.Version() != 7 && u.Version() != 4 {
		return decoded{}, fmt.Errorf("%s is a version %d UUID; shardid makes versions 7 and 4", u, u.Version())
	}
	shard := int(binary.BigEndian.Uint64(u[8:]) & uint64(l.ShardCount()-1))
	d := decoded{ID: u.String(), Kind: kindUUIDv4, LogicalShard: shard, Physical: physicalOf(m, shard)}
	if u.Version() == 7 {
		sec, nsec := u.Time().UnixTime()
		at := time.Unix(sec, nsec).UTC()
		d.Kind, d.Time = kindUUIDv7, &at
	}
	return d, nil
}

// physicalOf names the physical database of a logical shard, "" without a map.
func physicalOf(m *shardrouter.Map, shard int) string {
	if m == nil {
		return ""
	}
	return m.Name(m.Physical(shard))
}

// printDecoded writes what d says, a line for each part.
func printDecoded(w io.Writer, d decoded) {
	fmt.Fprintln(w, d.ID)
	switch d.Kind {
	case kindID:
		fmt.Fprintf(w, "  time           %s  (%s local; instagram and snowflake IDs; segment and ticket IDs hold a counter here, not a time)\n",
			d.Time.Format("2006-01-02T15:04:05.000Z"), d.Time.Local().Format("2006-01-02 15:04:05.000 MST"))
	case kindUUIDv7:
		fmt.Fprintf(w, "  time           %s  (%s local; uuidv7)\n", d.Time.Format("2006-01-02T15:04:05.000Z"), d.Time.Local().Format("2006-01-02 15:04:05.000 MST"))
	default:
		fmt.Fprintf(w, "  time           none (uuidv4 carries no time)\n")
	}
	fmt.Fprintf(w, "  logical shard  %d\n", d.LogicalShard)
	if d.Physical != "" {
		fmt.Fprintf(w, "  physical       %s\n", d.Physical)
	}
	if d.Sequence != nil {
		fmt.Fprintf(w, "  sequence       %d\n", *d.Sequence)
	}
	if d.Worker != nil {
		fmt.Fprintf(w, "  snowflake      worker %d, sequence %d (if snowflake made it)\n", *d.Worker, *d.WorkerSequence)
	}
}

// parseMap reads --map flags into a validated shard map; a flag's ranges
// are written as a config file's "logical" (FROM-TO, or N for one shard).
func parseMap(flags []string, shardCount int) (*shardrouter.Map, error) {
	var physical []shardrouter.Physical
	for _, f := range flags {
		name, text, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("--map %q: want NAME=FROM-TO[,FROM-TO...]", f)
		}
		ranges, err := parseRanges(text)
		if err != nil {
			return nil, fmt.Errorf("--map %q: %w", f, err)
		}
		physical = append(physical, shardrouter.Physical{Name: name, Logical: ranges})
	}
	return shardrouter.NewMap(shardCount, physical)
}
