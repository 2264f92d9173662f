package strategies_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/shardid/shardid/strategies"
)

// TestALeaseTableNamedByAReservedWordLeasesWorkers: LeaseOptions.Table
// "user" (reserved in PostgreSQL) or "order" (in every dialect) is a plain
// identifier the options take; the leases are kept there. "Workers" is the
// table earlier versions made by that name unquoted (PostgreSQL's workers).
func TestALeaseTableNamedByAReservedWordLeasesWorkers(t *testing.T) {
	for _, target := range allTargets(t) {
		for _, table := range []string{"user", "order", "Workers_RV"} {
			t.Run(target.Dialect+"/"+table, func(t *testing.T) {
				held := table
				if target.Dialect == "postgres" {
					held = strings.ToLower(table)
				}
				quoted := `"` + held + `"`
				if target.Dialect == "mysql" {
					quoted = "`" + held + "`"
				}
				drop := func() { _, _ = target.DB.Exec("DROP TABLE IF EXISTS " + quoted) }
				drop()
				t.Cleanup(drop)
				g := leased(t, Layout{}, LeaseOptions{Table: table, TTL: time.Minute})
				generate(t, g, target, 3)
				workerOf(t, g)
				var n int
				if err := target.DB.QueryRow("SELECT COUNT(*) FROM " + quoted).Scan(&n); err != nil || n != 1 {
					t.Fatalf("the leases in %s: %d rows, %v; want the one held", quoted, n, err)
				}
			})
		}
	}
}
