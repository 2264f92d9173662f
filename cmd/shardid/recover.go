package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/shardid/shardid"
)

func recoverCommand() *cobra.Command {
	var config string
	cmd := &cobra.Command{
		Use:   "recover --config FILE",
		Short: "Finish the writes over several databases that a stopped process left prepared",
		Long: `Recover finishes the writes over several physical databases (a split batch,
an update or delete over several, a transaction AcrossShards) that a process
left prepared when it stopped between the two phases of their commit: a
branch whose commit was recorded in the plugin's database is committed; one
without a decision, whose process no longer runs, is rolled back. Each
application's plugin does the same at db.Use and then periodically; run this
when those processes are gone. It prints how many branches it committed
and rolled back; the exit status is non-zero when a database could not be
reached.

` + configHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var plugin *shardid.Plugin
			err := withConfig(cmd, config, func(s *opsSetup) error {
				plugin = s.plugin
				return s.plugin.RecoverTransactions(cmd.Context())
			})
			if plugin != nil {
				// Read after Close, which waits for the recovery db.Use started: what it resolved is this run's too.
				stats := plugin.TransactionStats()
				fmt.Fprintf(cmd.OutOrStdout(), "prepared branches: %d committed, %d rolled back\n", stats.RecoveredCommit, stats.RecoveredRollback)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "the config file (JSON) naming the plugin's database and the physical databases")
	return cmd
}
