package twophase

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/shardid/shardid/internal/longtext"
	"github.com/shardid/shardid/internal/sqlscan"
)

// Outcome is what was decided of a global transaction.
type Outcome string

const (
	Undecided Outcome = ""
	Committed Outcome = "commit"
	Aborted   Outcome = "abort"
)

// Decisions is the table of decided global transactions, in one database
// (the plugin's own): a row is written once, by whoever decides first (the
// coordinator commits, recovery aborts), and its primary key makes the
// other's write fail.
type Decisions struct {
	DB      *sql.DB
	Dialect string
	Table   string // needs no quoting
}

// Prepare creates the table if it is missing. The names of a commit's
// databases grow with them (2,000 names of 33 characters pass 64 KiB): on
// MySQL/MariaDB, whose TEXT holds 64 KiB, they are a LONGTEXT, and a table
// made before is altered so.
func (d Decisions) Prepare(ctx context.Context) error {
	text := "TEXT"
	if d.Dialect == "mysql" {
		text = "LONGTEXT"
	}
	_, err := d.DB.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+d.Table+
		" (gid VARCHAR(64) NOT NULL PRIMARY KEY, outcome VARCHAR(8) NOT NULL, decided_ms BIGINT NOT NULL, branch_databases "+text+" NOT NULL)")
	if err != nil || d.Dialect != "mysql" {
		return err
	}
	return longtext.Widen(ctx, d.DB, d.Table, d.Table, "branch_databases")
}

// Decision is a recorded outcome, with the databases of the branches of a
// commit (by name), which recovery must all have looked at before it
// forgets it.
type Decision struct {
	Outcome   Outcome
	Databases []string
}

// Decide records outcome for gid, unless another was recorded first; it
// returns the outcome that holds. An error means the outcome is unknown:
// the caller must neither commit nor roll back a prepared branch.
func (d Decisions) Decide(ctx context.Context, gid string, outcome Outcome) (Outcome, error) {
	return d.decide(ctx, gid, outcome, nil)
}

// Commit decides a commit of gid, whose branches are on databases, as
// Decide does.
func (d Decisions) Commit(ctx context.Context, gid string, databases []string) (Outcome, error) {
	return d.decide(ctx, gid, Committed, databases)
}

func (d Decisions) decide(ctx context.Context, gid string, outcome Outcome, databases []string) (Outcome, error) {
	err := d.Record(ctx, d.DB, gid, outcome, databases)
	if err == nil {
		return outcome, nil
	}
	held, readErr := d.Outcome(ctx, gid)
	if readErr != nil {
		return Undecided, errors.Join(err, readErr)
	}
	if held == Undecided {
		return Undecided, err // the write failed and left nothing
	}
	return held, nil
}

// Record writes outcome for gid through exec: in a transaction of the
// decisions' database, whose commit is then the decision.
func (d Decisions) Record(ctx context.Context, exec interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, gid string, outcome Outcome, databases []string) error {
	_, err := exec.ExecContext(ctx, d.sql("INSERT INTO "+d.Table+" (gid, outcome, decided_ms, branch_databases) VALUES (?, ?, ?, ?)"),
		gid, string(outcome), time.Now().UnixMilli(), strings.Join(databases, "\n"))
	return err
}

// Databases updates, through exec, the databases of the branches of gid's
// commit: in the transaction that recorded it, as the transaction goes on.
func (d Decisions) Databases(ctx context.Context, exec interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, gid string, databases []string) error {
	_, err := exec.ExecContext(ctx, d.sql("UPDATE "+d.Table+" SET branch_databases = ? WHERE gid = ?"), strings.Join(databases, "\n"), gid)
	return err
}

// Withdraw deletes, through exec, the decision of gid that transaction
// recorded: once it commits, no commit of gid holds, and the first to decide
// aborts it.
func (d Decisions) Withdraw(ctx context.Context, exec interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, gid string) error {
	_, err := exec.ExecContext(ctx, d.sql("DELETE FROM "+d.Table+" WHERE gid = ?"), gid)
	return err
}

// Recorded reads, through query (the transaction that recorded it), whether
// a decision of gid is there.
func (d Decisions) Recorded(ctx context.Context, query interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, gid string) (bool, error) {
	var n int
	err := query.QueryRowContext(ctx, d.sql("SELECT COUNT(*) FROM "+d.Table+" WHERE gid = ?"), gid).Scan(&n)
	return n > 0, err
}

// Outcome reads what was decided of gid.
func (d Decisions) Outcome(ctx context.Context, gid string) (Outcome, error) {
	var outcome string
	err := d.DB.QueryRowContext(ctx, d.sql("SELECT outcome FROM "+d.Table+" WHERE gid = ?"), gid).Scan(&outcome)
	if errors.Is(err, sql.ErrNoRows) {
		return Undecided, nil
	}
	return Outcome(outcome), err
}

// Decided lists the decisions recorded before cutoff.
func (d Decisions) Decided(ctx context.Context, before time.Time) (map[string]Decision, error) {
	rows, err := d.DB.QueryContext(ctx, d.sql("SELECT gid, outcome, branch_databases FROM "+d.Table+" WHERE decided_ms < ?"), before.UnixMilli())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	decided := map[string]Decision{}
	for rows.Next() {
		var gid, outcome, databases string
		if err := rows.Scan(&gid, &outcome, &databases); err != nil {
			return nil, err
		}
		decision := Decision{Outcome: Outcome(outcome)}
		if databases != "" {
			decision.Databases = strings.Split(databases, "\n")
		}
		decided[gid] = decision
	}
	return decided, rows.Err()
}

// clusterRow is the row that keeps the cluster's token in its outcome.
const clusterRow = "cluster"

// Cluster returns the token of the cluster whose decisions the table
// holds, made by the first process to ask.
func (d Decisions) Cluster(ctx context.Context) (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	token, err := d.Decide(ctx, clusterRow, Outcome(hex.EncodeToString(b[:])))
	return string(token), err
}

// Forget deletes the decision of gid: once no branch of it is left.
func (d Decisions) Forget(ctx context.Context, gid string) error {
	_, err := d.DB.ExecContext(ctx, d.sql("DELETE FROM "+d.Table+" WHERE gid = ?"), gid)
	return err
}

// sql writes ? placeholders as $n for PostgreSQL.
func (d Decisions) sql(query string) string {
	if d.Dialect != "postgres" {
		return query
	}
	return sqlscan.NumberParameters(query)
}
