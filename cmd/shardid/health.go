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
)

func healthCommand() *cobra.Command {
	var config string
	var asJSON bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "health --config FILE [--json]",
		Short: "Ping every physical database and print each one's state and round trip; non-zero exit when one is down",
		Long: `Health pings every physical database of the config file at once (the plugin's
own database must answer within --timeout for the command to start) and prints each one's
state, up or down, and the round trip of its ping. A database that has not
answered within --timeout is down. The exit status is non-zero when one is
down.

With --json it prints {"databases": [...], "down": N}, each database an
object with "name", "kind" ("physical"; "ticket" for a ticket server),
"state" ("up" or "down"), "rtt_ms" (the round trip in milliseconds, 0 when
down) and, when down, "error".

` + configHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout < 0 {
				return fmt.Errorf("--timeout cannot be negative")
			}
			return withConfigBounded(cmd, config, false, timeout, func(s *opsSetup) error {
				ctx := cmd.Context()
				if timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, timeout)
					defer cancel()
				}
				results, err := s.plugin.Ping(ctx)
				if err != nil {
					return err
				}
				report := healthOf(results)
				if asJSON {
					err = printJSON(cmd.OutOrStdout(), report)
				} else {
					printHealth(cmd.OutOrStdout(), report)
				}
				if err != nil || report.Down == 0 {
					return err
				}
				return fmt.Errorf("%s down: %s", plural(int64(report.Down), "database"), joinList(report.downNames()))
			})
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "the config file (JSON) naming the plugin's database and the physical databases")
	cmd.Flags().BoolVar(&asJSON, "json", false, jsonFlagHelp)
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "how long each database has to answer (default 5s, the plugin's ConnectTimeout)")
	return cmd
}

// healthReport is what health found; its JSON is health --json's.
type healthReport struct {
	Databases []healthDatabase `json:"databases"`
	Down      int              `json:"down"`
}

type healthDatabase struct {
	Name  string  `json:"name"`
	Kind  string  `json:"kind"`
	State string  `json:"state"`
	RTT   float64 `json:"rtt_ms"`
	Error string  `json:"error,omitempty"`
	rtt   time.Duration
}

const (
	stateUp   = "up"
	stateDown = "down"
)

func healthOf(results []shardid.PingResult) healthReport {
	report := healthReport{Databases: make([]healthDatabase, len(results))}
	for i, r := range results {
		d := healthDatabase{Name: r.Name, Kind: string(r.Kind), State: stateUp, RTT: float64(r.RTT) / float64(time.Millisecond), rtt: r.RTT}
		if r.Err != nil {
			d.State, d.Error = stateDown, r.Err.Error()
			report.Down++
		}
		report.Databases[i] = d
	}
	return report
}

func (r healthReport) downNames() []string {
	var names []string
	for _, d := range r.Databases {
		if d.State == stateDown {
			names = append(names, d.Name)
		}
	}
	return names
}

func printHealth(w io.Writer, r healthReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tSTATE\tRTT")
	for _, d := range r.Databases {
		rtt := "-"
		if d.State == stateUp {
			rtt = d.rtt.Round(time.Microsecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.Name, d.Kind, d.State, rtt)
	}
	_ = tw.Flush()
	for _, d := range r.Databases {
		if d.Error != "" {
			fmt.Fprintf(w, "down: %s\n", strings.TrimPrefix(d.Error, "shardid: ")) // the error names the database
		}
	}
	fmt.Fprintf(w, "%s: %d up, %d down\n", plural(int64(len(r.Databases)), "database"), len(r.Databases)-r.Down, r.Down)
}
