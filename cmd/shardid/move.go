package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/internal/mover"
)

type moveOptions struct {
	config, shards, to string
	dryRun             bool
	chunk              int
	throttle           time.Duration
}

func moveCommand() *cobra.Command {
	var o moveOptions
	cmd := &cobra.Command{
		Use:   "move --config FILE --shards FROM-TO --to NAME",
		Short: "Move a range of logical shards to another physical database, online; status, cancel and cleanup of moves",
		Long: `Move copies the rows of a range of logical shards, of every sharded table the
application migrated with the plugin, to another physical database while the
application keeps reading and writing: prepare (the target's tables, triggers
on the source, the target's ID sources advanced), copy (in key order, in
chunks), catch-up (the changes made meanwhile replayed), cutover (the range
frozen on the source, the last changes replayed, counts and checksums
compared, the new map written). A move that stopped, or was killed, resumes
when run again. Afterwards the source keeps a frozen copy of the range until
"shardid move cleanup".

` + configHelp,
		Example: `  shardid move --config shards.json --shards 4096-8191 --to c --dry-run
  shardid move --config shards.json --shards 4096-8191 --to c --chunk 5000 --throttle 10ms
  shardid move status --config shards.json
  shardid move cleanup --config shards.json --shards 4096-8191`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runMove(cmd, o) },
	}
	cmd.PersistentFlags().StringVar(&o.config, "config", "", "the config file (JSON) naming the plugin's database and the physical databases")
	cmd.Flags().StringVar(&o.shards, "shards", "", "the logical shards to move, FROM-TO; all on one physical database now")
	cmd.Flags().StringVar(&o.to, "to", "", "the physical database (a name in the config file) that receives them")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the plan (tables and rows to copy, from and to) and change nothing")
	cmd.Flags().IntVar(&o.chunk, "chunk", 0, "rows read and written at a time (default 1000)")
	cmd.Flags().DurationVar(&o.throttle, "throttle", 0, "a pause after each chunk, to spare a busy source")
	cmd.AddCommand(moveStatusCommand(&o), moveCancelCommand(&o), moveCleanupCommand(&o))
	return cmd
}

// shardsFlag reads --shards.
func shardsFlag(text string) (shardid.Range, error) {
	if text == "" {
		return shardid.Range{}, fmt.Errorf("--shards: give the range of logical shards, FROM-TO")
	}
	r, err := parseRange(text)
	if err != nil {
		return r, fmt.Errorf("--shards %w", err)
	}
	return r, nil
}

// interruptible is the command's context, ended by Ctrl-C or SIGTERM (a
// scheduler stopping a job): a move stopped so keeps its state, leaves the
// shared map's tables as a process that ends does, and resumes when run again.
func interruptible(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
}

func runMove(cmd *cobra.Command, o moveOptions) error {
	r, err := shardsFlag(o.shards)
	if err != nil {
		return err
	}
	if o.to == "" {
		return fmt.Errorf("--to: name the physical database that receives the logical shards")
	}
	if o.chunk < 0 || o.throttle < 0 {
		return fmt.Errorf("--chunk and --throttle cannot be negative")
	}
	return withSharedMap(cmd, o.config, !o.dryRun, func(s *opsSetup) error {
		if !slices.ContainsFunc(s.config.Shards, func(sh fileShard) bool { return sh.Name == o.to }) {
			return fmt.Errorf("--to %q: %s names no such shard (it lists %s)", o.to, s.config.path, shardNames(s.config))
		}
		ctx, stop := interruptible(cmd)
		defer stop()
		if m, err := recordedMove(ctx, s, r); err == nil && m.To == o.to && m.Phase == shardid.PhaseServing {
			printMovedAlready(cmd.OutOrStdout(), r, m.From, m.To, m.MapVersion, o.config)
			return nil
		}
		req := shardid.Move{Logical: r, To: o.to, ChunkSize: o.chunk, Throttle: o.throttle, DryRun: o.dryRun}
		var progress *moveProgress
		if !o.dryRun {
			progress = newMoveProgress(cmd.ErrOrStderr())
			req.Progress = progress.update
		}
		report, err := s.plugin.Move(ctx, req)
		if progress != nil {
			progress.finish()
		}
		if err != nil {
			if m, recorded := recordedMove(context.WithoutCancel(ctx), s, r); recorded == nil && m.Cancelling && !m.Running {
				printCancelStopped(cmd.OutOrStdout(), r, o.config)
			} else if recorded == nil && !o.dryRun && underWay(m.Phase) && !m.Running {
				if m.To == o.to {
					fmt.Fprintf(cmd.OutOrStdout(), "the move stopped in phase %s; run the same command again to resume it, or cancel it (shardid move cancel)\n", m.Phase)
				} else { // the move of record goes elsewhere: this command never resumes it
					fmt.Fprintf(cmd.OutOrStdout(), "the move of record of %s goes to %s, stopped in phase %s; resume it with --to %s, or cancel it (shardid move cancel)\n", rangeText(r), m.To, m.Phase, m.To)
				}
			}
			return err
		}
		if report.Served || (o.dryRun && report.Phase == shardid.PhaseServing) {
			// Another run cut it over while this one waited for the move's lock.
			printMovedAlready(cmd.OutOrStdout(), r, report.From, report.To, report.MapVersion, o.config)
			return nil
		}
		if o.dryRun {
			printPlan(cmd.OutOrStdout(), report)
		} else {
			printReport(cmd.OutOrStdout(), report, o.config)
		}
		return nil
	})
}

// printMovedAlready says that the move of r was cut over before this run:
// it did nothing, and the cleanup comes next.
func printMovedAlready(w io.Writer, r shardid.Range, from, to string, version int64, config string) {
	fmt.Fprintf(w, "logical shards %s were moved from %s to %s already (map version %d): nothing to do\n", rangeText(r), from, to, version)
	fmt.Fprintf(w, "next              %s keeps a frozen copy: shardid move cleanup --config %s --shards %s\n", from, shellWord(config), rangeText(r))
}

// shellWord is s as one word of a shell's command line, quoted when it
// holds anything but letters, digits and _-./:=@,+%: a config path with a
// space, pasted from a hint, is one argument.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_-./:=@,+%", c))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// printCancelStopped says that a cancel of the move of r began and stopped
// midway: the move cannot resume, and the cancel run again ends it.
func printCancelStopped(w io.Writer, r shardid.Range, config string) {
	fmt.Fprintf(w, "a cancel of the move of logical shards %s began and stopped midway: the move cannot resume; run the cancel again to end it: shardid move cancel --config %s --shards %s\n",
		rangeText(r), shellWord(config), rangeText(r))
}

// phaseText is a move's phase, or "cancelling" for one whose cancel began.
func phaseText(m shardid.MoveStatus) string {
	if m.Cancelling {
		return "cancelling"
	}
	return m.Phase
}

// runText says whether a run holds the move now; a move under way that none
// holds stopped, or its mover was killed.
func runText(m shardid.MoveStatus) string {
	switch {
	case m.Running:
		return "running"
	case underWay(m.Phase):
		return "stopped"
	}
	return "-"
}

// underWay reports whether a move in phase has yet to reach its cutover.
func underWay(phase string) bool {
	return slices.Contains([]string{shardid.PhasePrepare, shardid.PhaseCopy, shardid.PhaseCatchUp, shardid.PhaseCutover}, phase)
}

func shardNames(c *fileConfig) string {
	names := make([]string, len(c.Shards))
	for i, s := range c.Shards {
		names[i] = s.Name
	}
	return joinList(names)
}

func printPlan(w io.Writer, report *shardid.MoveReport) {
	fmt.Fprintf(w, "plan: move logical shards %s from %s to %s (dry run: nothing changed)\n", rangeText(report.Logical), report.From, report.To)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, table := range report.Tables {
		fmt.Fprintf(tw, "  %s\t%s to copy\n", table, plural(report.Rows[table], "row"))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "then: catch up with the changes made meanwhile, freeze the range on %s, verify, and write the map that sends it to %s\n", report.From, report.To)
	if report.Resumed {
		fmt.Fprintln(w, "note: this move has begun before; running it resumes where it stopped")
	}
}

func printReport(w io.Writer, report *shardid.MoveReport, config string) {
	verb := "moved"
	if report.Resumed {
		verb = "moved (resumed)"
	}
	fmt.Fprintf(w, "%s logical shards %s from %s to %s\n", verb, rangeText(report.Logical), report.From, report.To)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, table := range report.Tables {
		fmt.Fprintf(tw, "  %s\t%s copied\n", table, plural(report.Rows[table], "row"))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "changes replayed  %d\n", report.Changes)
	fmt.Fprintf(w, "frozen            %s (writes of the range refused on %s, and retried on %s by the plugin)\n", report.Frozen.Round(time.Microsecond), report.From, report.To)
	fmt.Fprintf(w, "map version       %d\n", report.MapVersion)
	fmt.Fprintf(w, "next              %s keeps a frozen copy: shardid move cleanup --config %s --shards %s\n", report.From, shellWord(config), rangeText(report.Logical))
}

func moveStatusCommand(o *moveOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "status --config FILE",
		Short: "List the moves the plugin's database records, ended ones too",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withConfig(cmd, o.config, func(s *opsSetup) error {
				moves, err := s.plugin.Moves(cmd.Context())
				if err != nil {
					return err
				}
				printMoves(cmd.OutOrStdout(), moves)
				for _, m := range moves {
					if m.Cancelling && !m.Running {
						printCancelStopped(cmd.OutOrStdout(), m.Logical, o.config)
					}
				}
				return nil
			})
		},
	}
}

func printMoves(w io.Writer, moves []shardid.MoveStatus) {
	if len(moves) == 0 {
		fmt.Fprintln(w, "no moves recorded")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RANGE\tFROM\tTO\tPHASE\tRUN\tROWS\tCHANGES\tFROZEN\tMAP VERSION\tSTARTED")
	for _, m := range moves {
		var rows int64
		for _, n := range m.Rows {
			rows += n
		}
		frozen, version := "-", "-"
		if m.Frozen > 0 {
			frozen = m.Frozen.Round(time.Microsecond).String()
		}
		if m.MapVersion > 0 {
			version = fmt.Sprint(m.MapVersion)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", rangeText(m.Logical), m.From, m.To, phaseText(m), runText(m), rows, m.Changes,
			frozen, version, m.Started.UTC().Format(time.RFC3339))
	}
	_ = tw.Flush()
}

func moveCancelCommand(o *moveOptions) *cobra.Command {
	var shards string
	cmd := &cobra.Command{
		Use:   "cancel --config FILE --shards FROM-TO",
		Short: "Cancel a move before its cutover: the source serves the range as before, the target's copies are deleted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := shardsFlag(shards)
			if err != nil {
				return err
			}
			return withSharedMap(cmd, o.config, false, func(s *opsSetup) error {
				ctx, stop := interruptible(cmd)
				defer stop()
				m, err := recordedMove(ctx, s, r)
				if err != nil {
					return err
				}
				if err := s.plugin.CancelMove(ctx, r); err != nil {
					if m, recorded := recordedMove(context.WithoutCancel(ctx), s, r); recorded == nil && m.Cancelling && !m.Running {
						fmt.Fprintf(cmd.OutOrStdout(), "the cancel stopped midway: run the same command again to end it (the move cannot resume)\n")
					}
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "cancelled the move of logical shards %s to %s: %s serves them as before; the copies on %s are deleted\n",
					rangeText(r), m.To, m.From, m.To)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&shards, "shards", "", "the range of the move, FROM-TO, as it was given")
	return cmd
}

func moveCleanupCommand(o *moveOptions) *cobra.Command {
	var shards string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "cleanup --config FILE --shards FROM-TO [--wait D]",
		Short: "End a move after its cutover: delete the source's frozen copy of the range and drop its triggers",
		Long: `Cleanup waits until every live process routes by the map the move wrote (a
process is live if it read the map within three refresh periods and 5 s), up to
--wait, then deletes the source's copy of the range in chunks and drops the
triggers. If processes still lag after --wait it fails, naming them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := shardsFlag(shards)
			if err != nil {
				return err
			}
			if wait <= 0 {
				return fmt.Errorf("--wait must be positive")
			}
			return withSharedMap(cmd, o.config, false, func(s *opsSetup) error {
				ctx, stop := interruptible(cmd)
				defer stop()
				m, err := recordedMove(ctx, s, r)
				if err != nil {
					return err
				}
				if err := s.plugin.CleanupMove(mover.WithProcessWait(ctx, wait), r); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "cleaned up the move of logical shards %s: their copies on %s are deleted and its triggers dropped; %s serves them\n",
					rangeText(r), m.From, m.To)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&shards, "shards", "", "the range of the move, FROM-TO, as it was given")
	cmd.Flags().DurationVar(&wait, "wait", time.Minute, "how long to wait for processes that still route by an older map")
	return cmd
}

// recordedMove finds the latest record of the move of r.
func recordedMove(ctx context.Context, s *opsSetup, r shardid.Range) (shardid.MoveStatus, error) {
	moves, err := s.plugin.Moves(ctx)
	if err != nil {
		return shardid.MoveStatus{}, err
	}
	for _, m := range moves {
		if m.Logical == r {
			return m, nil
		}
	}
	return shardid.MoveStatus{}, fmt.Errorf("--shards %s: no move of these logical shards is recorded (shardid move status lists them)", rangeText(r))
}
