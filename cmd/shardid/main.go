// Command shardid runs the shardid demo, decodes IDs, and moves logical
// shards between physical databases.
//
//	shardid demo                          users and photos on four embedded SQLite shards
//	shardid decode ID...                  what an ID says: time, logical and physical shard, sequence
//	shardid layout                        what a layout holds: shards, IDs per tick, run-out date
//	shardid move --config F --shards FROM-TO --to NAME [--dry-run]
//	                                      move a range of logical shards online, with a report
//	shardid move status --config F        the moves recorded: range, from, to, phase, rows, frozen, map version
//	shardid move cancel --config F --shards FROM-TO
//	                                      stop a move before its cutover and delete the target's copies
//	shardid move cleanup --config F --shards FROM-TO [--wait D]
//	                                      after the cutover, delete the source's frozen copy
//	shardid verify --config F             rows on a database their logical shard does not map to
//	shardid map --config F                the shared map: version and the ranges of each database
//	shardid health --config F             each physical database up or down, with its round trip
//	shardid recover --config F            finish the writes over several databases a stopped process left prepared
//	shardid --version                     the command's version
//
// The config file F (JSON) names the plugin's database and the physical
// databases; see "shardid move --help". decode, layout, map, verify and
// health print JSON with --json; their --help lists the fields.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

func main() {
	if err := rootCommand().Execute(); err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, "shardid: ") { // the library's errors carry it already
			msg = "shardid: " + msg
		}
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(1)
	}
}

func rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "shardid",
		Short:         "Shard-aware 64-bit IDs and routing for GORM: demo and tools",
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(demoCommand(), decodeCommand(), layoutCommand(), moveCommand(), verifyCommand(), mapCommand(), healthCommand(), recoverCommand())
	return root
}
