package engine

import (
	"context"
	"fmt"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/strategies"
)

// Processes that lease snowflake worker IDs in one database from two lease
// tables (Config.Snowflake.Lease.Table spelled two ways) each see only their
// own table's rows, may hold one worker ID at once and make equal IDs. So
// each physical database records the lease table the plugin's processes
// lease from, claimed by the first to lease there, and a process that names
// another is refused before its first lease there: before it makes an ID
// for that database's shards. Processes that lease nothing (no snowflake
// model, FixedWorker, the command) are not asked.

const leaseTableRecord = "shardid_lease_table"

// checkLeaseTable records table as the lease table of target's database
// unless one is recorded there, and fails unless the one recorded is table.
func checkLeaseTable(ctx context.Context, target strategies.Target, table string) error {
	stored, err := claimToken(ctx, target.DB, target.Dialect, leaseTableRecord+" (id INT NOT NULL PRIMARY KEY, lease_table VARCHAR(64) NOT NULL)",
		"INSERT INTO "+leaseTableRecord+" (id, lease_table) VALUES (1, ?)", "SELECT lease_table FROM "+leaseTableRecord+" WHERE id = 1", table)
	if err != nil {
		return errs.Wrap(err, "%s: recording the snowflake lease table in %s", target.Name, leaseTableRecord)
	}
	if stored != table {
		return fmt.Errorf("%w: the processes of %s lease their snowflake worker IDs from table %s (recorded in %s), and this process's Config.Snowflake.Lease.Table is %s: processes of two lease tables can hold one worker ID at once and make equal IDs, so this one leases none there; give every process the same Lease.Table. To rename the table, stop every process, rename it in each physical database (its rows keep the time each worker ID used) and set %s.lease_table there to the new name",
			ErrInvalidConfig, target.Name, stored, leaseTableRecord, table, leaseTableRecord)
	}
	return nil
}
