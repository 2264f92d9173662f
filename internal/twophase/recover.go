package twophase

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/shardid/shardid/internal/sqlerr"
)

// CommitPrepared commits the prepared branch xid of db from any session
// (MySQL and MariaDB: once the session that prepared it is gone).
func CommitPrepared(ctx context.Context, db *sql.DB, dialect string, xid XID) error {
	return resolve(ctx, db, dialect, xid, "XA COMMIT ", "COMMIT PREPARED ")
}

// RollbackPrepared rolls the prepared branch xid of db back from any session.
func RollbackPrepared(ctx context.Context, db *sql.DB, dialect string, xid XID) error {
	return resolve(ctx, db, dialect, xid, "XA ROLLBACK ", "ROLLBACK PREPARED ")
}

func resolve(ctx context.Context, db *sql.DB, dialect string, xid XID, mysql, postgres string) error {
	if !xid.valid() {
		return nil // not one of ours: never written by literal
	}
	stmt := postgres + xid.literal(dialect)
	if dialect == "mysql" {
		stmt = mysql + xid.literal(dialect)
	}
	_, err := db.ExecContext(ctx, stmt)
	return err
}

// InDoubt lists the plugin's prepared branches on db: XA RECOVER on MySQL
// and MariaDB (the server's, of every database), pg_prepared_xacts of the
// connection's database on PostgreSQL.
func InDoubt(ctx context.Context, db *sql.DB, dialect string) ([]XID, error) {
	query := "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND gid LIKE '" + prefix + "%'"
	if dialect == "mysql" {
		query = "XA RECOVER"
	}
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var xids []XID
	for rows.Next() {
		var xid XID
		if dialect == "mysql" {
			var format, gtridLength, bqualLength int64
			var data []byte
			if err := rows.Scan(&format, &gtridLength, &bqualLength, &data); err != nil {
				return nil, err
			}
			if int(gtridLength+bqualLength) > len(data) {
				continue
			}
			xid = XID{GID: string(data[:gtridLength]), Branch: string(data[gtridLength : gtridLength+bqualLength])}
		} else {
			var name string
			if err := rows.Scan(&name); err != nil {
				return nil, err
			}
			xid, _ = parsePostgres(name)
		}
		if strings.HasPrefix(xid.GID, prefix) {
			xids = append(xids, xid)
		}
	}
	return xids, rows.Err()
}

// Database is a database recovery looks at.
type Database struct {
	Name    string
	DB      *sql.DB
	Dialect string
}

// Recovery finishes the plugin's branches left prepared by coordinators
// that died or lost a database midway.
type Recovery struct {
	Decisions Decisions
	Cluster   string // the branches of other clusters on the same servers are theirs
	Databases []Database
	// Live says whether the process of a GID's token still runs; an
	// undecided branch of a live one is left to it for Patience.
	Live     func(process string) bool
	Patience time.Duration
	// KeepAborts is how long an abort stays recorded: a coordinator that
	// comes back later than that could commit what recovery rolled back.
	KeepAborts time.Duration
	Now        func() time.Time // time.Now when nil
}

// Action is what recovery did with one branch.
type Action struct {
	GID, Branch, Database string
	Outcome               Outcome // Undecided: left to its live coordinator
	Err                   error
}

// Run resolves every in-doubt branch it can: committed where a commit was
// decided, rolled back where an abort was or where it records one (the
// coordinator gone, or older than Patience). It then forgets the commits
// whose branches are all gone, and the aborts older than KeepAborts. A
// database it cannot list is an error; the others are resolved anyway.
func (r Recovery) Run(ctx context.Context) ([]Action, error) {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	started := now()
	var errs []error
	found := map[string]bool{}
	type branch struct {
		xid XID
		db  Database
	}
	var branches []branch
	listed := map[XID]bool{} // MySQL lists a server's branches on each of its databases
	looked := map[string]bool{}
	lists, listErrs := r.list(ctx)
	for i, db := range r.Databases {
		if err := listErrs[i]; err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", db.Name, err))
			continue
		}
		looked[db.Name] = true
		for _, xid := range lists[i] {
			if g, ok := ParseGID(xid.GID); !ok || g.Cluster != r.Cluster {
				continue
			}
			found[xid.GID] = true
			if !listed[xid] {
				listed[xid] = true
				branches = append(branches, branch{xid, db})
			}
		}
	}
	var actions []Action
	outcomes := map[string]Outcome{}
	for _, b := range branches {
		gid := b.xid.GID
		outcome, seen := outcomes[gid]
		if !seen {
			var err error
			outcome, err = r.outcome(ctx, gid, started)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			outcomes[gid] = outcome
		}
		a := Action{GID: gid, Branch: b.xid.Branch, Database: b.db.Name, Outcome: outcome}
		switch outcome {
		case Committed:
			a.Err = CommitPrepared(ctx, b.db.DB, b.db.Dialect, b.xid)
		case Aborted:
			a.Err = RollbackPrepared(ctx, b.db.DB, b.db.Dialect, b.xid)
		}
		if UnknownBranch(a.Err) {
			continue // another recovery, or its coordinator, finished it since the listing
		}
		actions = append(actions, a)
	}
	errs = append(errs, r.forget(ctx, found, looked, started))
	return actions, errors.Join(errs...)
}

// listsAtOnce is how many databases Run lists at once.
const listsAtOnce = 16

// list lists the prepared branches of each database, a few at once: a
// database that does not answer holds its listing until its dial's bound or
// ctx ends, and one after another they would leave the others unlisted.
func (r Recovery) list(ctx context.Context) ([][]XID, []error) {
	lists, errs := make([][]XID, len(r.Databases)), make([]error, len(r.Databases))
	turns := make(chan struct{}, listsAtOnce)
	var wg sync.WaitGroup
	for i, db := range r.Databases {
		wg.Add(1)
		turns <- struct{}{}
		go func() {
			defer func() { <-turns; wg.Done() }()
			lists[i], errs[i] = InDoubt(ctx, db.DB, db.Dialect)
		}()
	}
	wg.Wait()
	return lists, errs
}

// outcome is what holds for gid, recording an abort when its coordinator
// cannot decide any more.
func (r Recovery) outcome(ctx context.Context, gid string, now time.Time) (Outcome, error) {
	outcome, err := r.Decisions.Outcome(ctx, gid)
	if err != nil || outcome != Undecided {
		return outcome, err
	}
	g, _ := ParseGID(gid)
	if r.Live != nil && r.Live(g.Process) && now.Sub(g.Started) < r.Patience {
		return Undecided, nil
	}
	return r.Decisions.Decide(ctx, gid, Aborted)
}

// forget deletes the decisions no branch needs: a commit decided before
// the listing began whose databases were all listed, none with a branch of
// it (a process with another list of databases may know more); an abort
// past KeepAborts.
func (r Recovery) forget(ctx context.Context, found, looked map[string]bool, listed time.Time) error {
	decided, err := r.Decisions.Decided(ctx, listed.Add(-time.Minute)) // a minute for the clocks of other processes
	if err != nil {
		return err
	}
	cutoff := listed.Add(-r.KeepAborts).UnixMilli()
	for gid, d := range decided {
		g, ok := ParseGID(gid)
		switch {
		case !ok || found[gid]:
			continue // the cluster's row, or one with a branch left
		case d.Outcome == Aborted && g.Started.UnixMilli() >= cutoff:
			continue // kept for a coordinator that comes back
		case d.Outcome == Committed && (len(d.Databases) == 0 || !all(d.Databases, looked)):
			continue
		}
		if err := r.Decisions.Forget(ctx, gid); err != nil {
			return err
		}
	}
	return nil
}

// all says whether every name is in set.
func all(names []string, set map[string]bool) bool {
	for _, n := range names {
		if !set[n] {
			return false
		}
	}
	return true
}

// UnknownBranch says the server knows no such prepared branch: not any
// more, or (MySQL, MariaDB) not yet to another session than its own.
func UnknownBranch(err error) bool {
	if number, _, ok := sqlerr.MySQL(err); ok {
		return number == 1397 // XAER_NOTA
	}
	code, _, ok := sqlerr.Postgres(err)
	return ok && code == "42704" // undefined_object: no prepared transaction of that name
}
