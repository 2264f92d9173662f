package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/shardid/shardid"
)

// layoutFlags are the widths and epoch of a layout, as flags shared by the
// commands; zero means the default.
type layoutFlags struct {
	timeBits, shardBits, sequenceBits, workerBits int
	epoch                                         string
	unit                                          time.Duration
}

func (f *layoutFlags) register(cmd *cobra.Command) {
	// As in a Layout, the last of the three widths left out fills 63.
	cmd.Flags().IntVar(&f.timeBits, "time-bits", 0, "bits of time (default 40, or what the others leave of 63 when it is the last of the three widths left out)")
	cmd.Flags().IntVar(&f.shardBits, "shard-bits", 0, "bits of logical shard (default 13, or what the others leave of 63 when it is the last of the three widths left out)")
	cmd.Flags().IntVar(&f.sequenceBits, "sequence-bits", 0, "bits of sequence (default 10, or what the others leave of 63 when it is the last of the three widths left out)")
	cmd.Flags().IntVar(&f.workerBits, "worker-bits", 0, "bits of the sequence that hold a snowflake worker ID (default 6, or what leaves 4 bits of sequence; -1 for none, strategies.NoWorkerBits)")
	cmd.Flags().StringVar(&f.epoch, "epoch", "", "epoch, RFC 3339 (default 2025-01-01T00:00:00Z)")
	cmd.Flags().DurationVar(&f.unit, "unit", 0, "time unit, a multiple of 1ms (default 1ms)")
}

// layout returns the validated layout the flags describe.
func (f *layoutFlags) layout() (shardid.Layout, error) {
	l := shardid.Layout{TimeBits: f.timeBits, ShardBits: f.shardBits, SequenceBits: f.sequenceBits, WorkerBits: f.workerBits, TimeUnit: f.unit}
	if f.epoch != "" {
		epoch, err := parseEpoch(f.epoch)
		if err != nil {
			return l, fmt.Errorf("--epoch: %w", err)
		}
		l.Epoch = epoch
	}
	if err := l.Validate(time.Now()); err != nil {
		return l, err
	}
	return l.Normalized(), nil
}

// parseEpoch reads an RFC 3339 epoch; the zero time, which a Layout takes
// for the default epoch, is refused rather than silently replaced.
func parseEpoch(text string) (time.Time, error) {
	epoch, err := time.Parse(time.RFC3339, text)
	if err == nil && epoch.IsZero() {
		return epoch, fmt.Errorf("%s is the zero time, which a layout takes for its default epoch (%s): leave the epoch out for that", text, shardid.Layout{}.Normalized().Epoch.Format(time.RFC3339))
	}
	return epoch, err
}

func layoutCommand() *cobra.Command {
	var flags layoutFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "layout",
		Short: "Show what a layout holds: logical shards, IDs per tick, the date its time field runs out",
		Long: `Layout shows what a layout holds: its bits, epoch and tick, the logical
shards, the IDs per tick, the workers of snowflake, and the date its time
field runs out.

With --json it prints one object: "time_bits", "shard_bits",
"sequence_bits", "worker_bits", "epoch" (RFC 3339), "unit" (a Go duration,
such as "1ms"), "logical_shards", "ids_per_tick" and "ids_per_second" (per
logical shard), "workers", "worker_ids_per_tick" and
"worker_ids_per_second" (with worker bits), "runs_out" (RFC 3339) and
"runs_out_in_years"; the first six are the names of the config file's "layout".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := flags.layout()
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), layoutInfoOf(l))
			}
			describeLayout(cmd.OutOrStdout(), layoutInfoOf(l))
			return nil
		},
	}
	flags.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, jsonFlagHelp)
	return cmd
}

// layoutInfo is what a layout holds; its JSON is layout --json's.
type layoutInfo struct {
	TimeBits         int       `json:"time_bits"`
	ShardBits        int       `json:"shard_bits"`
	SequenceBits     int       `json:"sequence_bits"`
	WorkerBits       int       `json:"worker_bits"`
	Epoch            time.Time `json:"epoch"`
	Unit             string    `json:"unit"`
	LogicalShards    int       `json:"logical_shards"`
	IDsPerTick       int       `json:"ids_per_tick"`
	IDsPerSecond     float64   `json:"ids_per_second"`
	Workers          int       `json:"workers,omitempty"`
	WorkerIDsPerTick int       `json:"worker_ids_per_tick,omitempty"`
	WorkerIDsPerSec  float64   `json:"worker_ids_per_second,omitempty"`
	RunsOut          string    `json:"runs_out"` // RFC 3339; past the year 9999, with the year's every digit
	RunsOutYears     float64   `json:"runs_out_in_years"`
}

// layoutInfoOf describes a normalized layout.
func layoutInfoOf(l shardid.Layout) layoutInfo {
	info := layoutInfo{TimeBits: l.TimeBits, ShardBits: l.ShardBits, SequenceBits: l.SequenceBits, WorkerBits: l.WorkerBits,
		Epoch: l.Epoch.UTC(), Unit: l.TimeUnit.String(), LogicalShards: l.ShardCount(), IDsPerTick: l.IDsPerTick(),
		RunsOut: l.RunsOut().UTC().Format(time.RFC3339Nano), RunsOutYears: yearsUntil(l.RunsOut())}
	ticksPerSecond := float64(time.Second) / float64(l.TimeUnit) // a tick of a second or more, or of 3 ms, too
	info.IDsPerSecond = float64(info.IDsPerTick) * ticksPerSecond
	if l.WorkerBits > 0 {
		info.Workers, info.WorkerIDsPerTick = l.WorkerCount(), l.WorkerIDsPerTick()
		info.WorkerIDsPerSec = float64(info.WorkerIDsPerTick) * ticksPerSecond
	}
	return info
}

func describeLayout(w io.Writer, l layoutInfo) {
	fmt.Fprintf(w, "bits            1 sign | %d time | %d logical shard | %d sequence", l.TimeBits, l.ShardBits, l.SequenceBits)
	if l.WorkerBits > 0 {
		fmt.Fprintf(w, " (%d of them worker)", l.WorkerBits)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "epoch           %s, one tick = %s\n", l.Epoch.Format(time.RFC3339), l.Unit)
	fmt.Fprintf(w, "logical shards  %d (the shard is id >> %d & %d)\n", l.LogicalShards, l.SequenceBits, l.LogicalShards-1)
	fmt.Fprintf(w, "IDs per tick    %d per logical shard, %.0f per second\n", l.IDsPerTick, l.IDsPerSecond)
	if l.WorkerBits > 0 {
		fmt.Fprintf(w, "snowflake       %s, each %d IDs per tick per logical shard, %.0f per second\n", plural(int64(l.Workers), "worker"),
			l.WorkerIDsPerTick, l.WorkerIDsPerSec)
	}
	fmt.Fprintf(w, "runs out        %s (in %.1f years)\n", l.RunsOut[:strings.Index(l.RunsOut, "T")], l.RunsOutYears)
}

// yearsUntil is the years from now to t, which may be beyond what a
// time.Duration holds (292 years).
func yearsUntil(t time.Time) float64 {
	return float64(t.Unix()-time.Now().Unix()) / (365.25 * 24 * 3600)
}
