// Command shardid runs the shardid demo and decodes IDs.
//
//	shardid demo              users and photos on four embedded SQLite shards
//	shardid decode ID...      what an ID says: time, logical and physical shard, sequence
//	shardid layout            what a layout holds: shards, IDs per tick, run-out date
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := rootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "shardid:", err)
		os.Exit(1)
	}
}

func rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "shardid",
		Short:         "Shard-aware 64-bit IDs and routing for GORM: demo and tools",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(demoCommand(), decodeCommand(), layoutCommand())
	return root
}
