package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shardid/shardid/internal/twophase"
)

// TestRecover: a branch a stopped process left prepared on a physical
// database (its decision recorded or not) is committed or rolled back by
// the command, and no prepared branch is left.
func TestRecover(t *testing.T) {
	for name, env := range map[string]func(*testing.T) opsEnv{"mariadb": mysqlEnv, "postgres": postgresEnv} {
		t.Run(name, func(t *testing.T) {
			e := env(t)
			// The application creates the decisions table, and stops: its own
			// recovery would otherwise race the command's for the branches.
			must(t, e.application(t).close())
			a := direct(t, e.dsns["a"])
			must(t, a.Exec("CREATE TABLE recover_rows (id INT PRIMARY KEY)").Error)
			sqlA, err := a.DB()
			must(t, err)
			dialect := a.Dialector.Name()
			ctx := context.Background()
			main := direct(t, e.dsns["main"])
			sqlMain, err := main.DB()
			must(t, err)
			decisions := twophase.Decisions{DB: sqlMain, Dialect: dialect, Table: "shardid_transactions"}
			cluster, err := decisions.Cluster(ctx)
			must(t, err)
			for i, decided := range []bool{true, false} {
				gid := twophase.GID{Cluster: cluster, Process: "gone", Started: time.Now().Add(-time.Hour), Seq: uint64(i)}.String()
				b, err := twophase.Begin(ctx, sqlA, dialect, twophase.XID{GID: gid, Branch: "0"})
				must(t, err)
				_, err = b.ExecContext(ctx, fmt.Sprintf("INSERT INTO recover_rows (id) VALUES (%d)", i))
				must(t, err)
				must(t, b.Prepare(ctx))
				b.Abandon() // the process stops
				if decided {
					_, err := decisions.Commit(ctx, gid, []string{"a"})
					must(t, err)
				}
			}
			// MariaDB lets another session finish a branch only once the
			// server has seen its own session end: run again until none is left.
			var committed, rolledBack int
			for deadline := time.Now().Add(10 * time.Second); committed+rolledBack < 2 && time.Now().Before(deadline); {
				var c, r int
				out := mustRun(t, "recover", "--config", e.config)
				if _, err := fmt.Sscanf(out, "prepared branches: %d committed, %d rolled back", &c, &r); err != nil {
					t.Fatalf("recover printed %q: %v", out, err)
				}
				committed, rolledBack = committed+c, rolledBack+r
			}
			if committed != 1 || rolledBack != 1 {
				t.Fatalf("recover committed %d and rolled back %d branches, want 1 and 1", committed, rolledBack)
			}
			var ids []int
			must(t, a.Raw("SELECT id FROM recover_rows").Scan(&ids).Error)
			if len(ids) != 1 || ids[0] != 0 {
				t.Fatalf("rows after recovery: %v, want the decided transaction's only", ids)
			}
			inDoubt, err := twophase.InDoubt(ctx, sqlA, dialect)
			must(t, err)
			var left []twophase.XID
			for _, x := range inDoubt { // MySQL lists the server's, other tests' beside these
				if g, ok := twophase.ParseGID(x.GID); ok && g.Cluster == cluster {
					left = append(left, x)
				}
			}
			if len(left) != 0 {
				t.Fatalf("prepared branches left: %v", left)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
