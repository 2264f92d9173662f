package main

import (
	"fmt"
	"io"
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
	cmd.Flags().IntVar(&f.timeBits, "time-bits", 0, "bits of time (default 40)")
	cmd.Flags().IntVar(&f.shardBits, "shard-bits", 0, "bits of logical shard (default 13)")
	cmd.Flags().IntVar(&f.sequenceBits, "sequence-bits", 0, "bits of sequence (default 10)")
	cmd.Flags().IntVar(&f.workerBits, "worker-bits", 0, "bits of the sequence that hold a snowflake worker ID")
	cmd.Flags().StringVar(&f.epoch, "epoch", "", "epoch, RFC 3339 (default 2025-01-01T00:00:00Z)")
	cmd.Flags().DurationVar(&f.unit, "unit", 0, "time unit, a multiple of 1ms (default 1ms)")
}

// layout returns the validated layout the flags describe.
func (f *layoutFlags) layout() (shardid.Layout, error) {
	l := shardid.Layout{TimeBits: f.timeBits, ShardBits: f.shardBits, SequenceBits: f.sequenceBits, WorkerBits: f.workerBits, TimeUnit: f.unit}
	if f.epoch != "" {
		epoch, err := time.Parse(time.RFC3339, f.epoch)
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

func layoutCommand() *cobra.Command {
	var flags layoutFlags
	cmd := &cobra.Command{
		Use:   "layout",
		Short: "Show what a layout holds: logical shards, IDs per tick, the date its time field runs out",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := flags.layout()
			if err != nil {
				return err
			}
			describeLayout(cmd.OutOrStdout(), l)
			return nil
		},
	}
	flags.register(cmd)
	return cmd
}

func describeLayout(w io.Writer, l shardid.Layout) {
	perTick := l.IDsPerTick()
	fmt.Fprintf(w, "bits            1 sign | %d time | %d logical shard | %d sequence", l.TimeBits, l.ShardBits, l.SequenceBits)
	if l.WorkerBits > 0 {
		fmt.Fprintf(w, " (%d of them worker)", l.WorkerBits)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "epoch           %s, one tick = %s\n", l.Epoch.UTC().Format(time.RFC3339), l.TimeUnit)
	fmt.Fprintf(w, "logical shards  %d (the shard is id >> %d & %d)\n", l.ShardCount(), l.SequenceBits, l.ShardCount()-1)
	fmt.Fprintf(w, "IDs per tick    %d per logical shard, %.0f per second\n", perTick, float64(perTick)*float64(time.Second/l.TimeUnit))
	if l.WorkerBits > 0 {
		perWorker := l.WorkerIDsPerTick()
		fmt.Fprintf(w, "snowflake       %d workers, each %d IDs per tick per logical shard, %.0f per second\n", l.WorkerCount(), perWorker, float64(perWorker)*float64(time.Second/l.TimeUnit))
	}
	runsOut := l.RunsOut()
	fmt.Fprintf(w, "runs out        %s (in %.1f years)\n", runsOut.Format(time.DateOnly), time.Until(runsOut).Hours()/24/365.25)
}
