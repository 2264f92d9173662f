package strategies

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/shardid/shardid/internal/sqlerr"
)

// DefaultTicketTable is the table (MySQL/MariaDB) or sequence (PostgreSQL)
// that holds a ticket server's counter.
const DefaultTicketTable = "shardid_tickets"

// ticketConn is what a ticket server's statements run on: a pinned
// *sql.Conn on MySQL/MariaDB, the pool on PostgreSQL.
type ticketConn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// ticketSQL is one dialect's statements for a [Ticket] server.
type ticketSQL struct {
	create           []string
	transactionalDDL bool // run create in a transaction (PostgreSQL: two processes at once)
	// check fails when the counter was used with another step or offset:
	// its tickets could then repeat another server's.
	check func(ctx context.Context, conn ticketConn) error
	// session, when set, runs once on each pinned connection before its
	// first ticket; without it tickets are taken from the pool.
	session string
	// sessionCheck, when set, runs after session: it fails when the counter
	// records another series than the session's (a process that never
	// prepared the servers, started with another step or offset).
	sessionCheck func(ctx context.Context, conn ticketConn) error
	// next appends n new tickets to out; each statement gets timeout.
	next func(ctx context.Context, conn ticketConn, n int, timeout time.Duration, out []int64) ([]int64, error)
}

func ticketSQLFor(dialect, table string, step, offset int) (ticketSQL, error) {
	switch dialect {
	case "mysql":
		return mysqlTickets(table, step, offset), nil
	case "postgres":
		return postgresTickets(table, step, offset), nil
	}
	return ticketSQL{}, fmt.Errorf("%w: %q (ticket supports mysql and postgres)", ErrUnsupportedDialect, dialect)
}

// mysqlTickets is Flickr's ticket server: one row that REPLACE deletes and
// inserts again, so each statement takes the next auto-increment value of
// this connection's series offset, offset+step, offset+2*step, … and the
// OK packet carries it (LAST_INSERT_ID) in the same round trip. The series
// is set by session variables, hence the pinned connection.
func mysqlTickets(table string, step, offset int) ticketSQL {
	replace := "REPLACE INTO `" + table + "` (`stub`) VALUES ('a')"
	series := ticketSeries(step, offset)
	return ticketSQL{
		// The table's comment records the series, as a PostgreSQL sequence
		// records its increment and start: the last ticket alone fits
		// several (17 is 1 modulo 8 and modulo 16).
		create: []string{"CREATE TABLE IF NOT EXISTS `" + table + "` (" +
			"`id` BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, `stub` CHAR(1) NOT NULL UNIQUE) ENGINE=InnoDB COMMENT='" + series + "'"},
		check: func(ctx context.Context, conn ticketConn) error {
			recorded, listed, err := checkSeries(ctx, conn, table, series)
			if err != nil || recorded {
				return err
			}
			// A table made before the series was recorded: its last ticket is
			// all there is to judge by, and the series is recorded from now on.
			var last int64
			if err := conn.QueryRowContext(ctx, "SELECT COALESCE(MAX(`id`), 0) FROM `"+table+"`").Scan(&last); err != nil {
				return err
			}
			if last != 0 && (last-int64(offset))%int64(step) != 0 {
				return fmt.Errorf("its last ticket %d is not %d modulo %d: the database served another offset or step", last, offset, step)
			}
			if listed {
				// Unrecorded (no ALTER privilege), the last ticket still judges.
				_, _ = conn.ExecContext(ctx, "ALTER TABLE `"+table+"` COMMENT = '"+series+"'")
			}
			return nil
		},
		// The numbers are written into the text: parameters would prepare the statement first, a second round trip.
		// autocommit: each ticket committed at once, whatever the DSN or the
		// server's init_connect set (the connection is this server's own).
		session: fmt.Sprintf("SET SESSION auto_increment_increment = %d, auto_increment_offset = %d, autocommit = 1", step, offset),
		sessionCheck: func(ctx context.Context, conn ticketConn) error {
			_, _, err := checkSeries(ctx, conn, table, series)
			return err
		},
		next: func(ctx context.Context, conn ticketConn, n int, timeout time.Duration, out []int64) ([]int64, error) {
			// One statement per ticket: a multi-row insert's values are
			// consecutive only under some innodb_autoinc_lock_mode settings.
			var contendedSince time.Time
			for contended := 0; len(out) < n; {
				res, err := execWithin(ctx, timeout, conn, replace)
				// Concurrent REPLACEs of the one row (from other processes: this
				// one sends one at a time) deadlock now and then on InnoDB; the
				// victim is rolled back and the server is fine. Only contention
				// that lasts a whole timeout counts as the server's failure.
				if isMySQLContention(err) && (contended == 0 || time.Since(contendedSince) < timeout) {
					if contended == 0 {
						contendedSince = time.Now()
					}
					contended++
					// Another process's REPLACE won; a random pause, growing, keeps the next try from meeting it again.
					if err := sleepCtx(ctx, rand.N(time.Duration(1<<min(contended, 6))*time.Millisecond)); err != nil {
						return out, err
					}
					continue
				}
				contended = 0
				if err != nil {
					return out, err
				}
				id, err := res.LastInsertId()
				if err != nil {
					return out, err
				}
				out = append(out, id)
			}
			return out, nil
		},
	}
}

// ticketSeries describes the tickets of a MySQL/MariaDB server, as its
// table's comment records them.
func ticketSeries(step, offset int) string {
	return fmt.Sprintf("shardid ticket series: step %d offset %d", step, offset)
}

// checkSeries reads the series table's comment records: recorded says it
// records one, which is series, or else err says which; listed says
// information_schema lists the table under its name as written (not so
// under lower_case_table_names).
func checkSeries(ctx context.Context, conn ticketConn, table, series string) (recorded, listed bool, err error) {
	var comment string
	err = conn.QueryRowContext(ctx, "SELECT TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", table).Scan(&comment)
	if errors.Is(err, sql.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	found, ok := recordedSeries(comment)
	if ok && found != series {
		prefix := len(ticketSeries(0, 0)) - len("step 0 offset 0")
		return true, true, fmt.Errorf("table %s records tickets of %s, and this process numbers them with %s: the database served another offset or step", table, found[prefix:], series[prefix:])
	}
	return ok, true, nil
}

// recordedSeries finds the series a table's comment records.
func recordedSeries(comment string) (string, bool) {
	i := strings.Index(comment, "shardid ticket series: ")
	if i < 0 {
		return "", false
	}
	var step, offset int
	if _, err := fmt.Sscanf(comment[i:], "shardid ticket series: step %d offset %d", &step, &offset); err != nil {
		return "", false
	}
	return ticketSeries(step, offset), true
}

// execWithin runs query with its own timeout: a large batch is many
// statements, and only one that hangs means the server is gone.
func execWithin(ctx context.Context, timeout time.Duration, conn ticketConn, query string) (sql.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return conn.ExecContext(ctx, query)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// isMySQLContention reports a deadlock (1213) or lock wait timeout (1205).
func isMySQLContention(err error) bool {
	number, _, ok := sqlerr.MySQL(err)
	return ok && (number == 1213 || number == 1205)
}

// postgresTickets keeps the counter in a sequence that steps by step from
// offset; a batch is one round trip through generate_series.
func postgresTickets(table string, step, offset int) ticketSQL {
	return ticketSQL{
		create: []string{
			// Concurrent CREATE SEQUENCE IF NOT EXISTS can fail on pg_class; the lock serializes starters.
			`SELECT pg_advisory_xact_lock(7270246873298435074)`,
			fmt.Sprintf(`CREATE SEQUENCE IF NOT EXISTS "%s" INCREMENT BY %d START WITH %d MINVALUE 1 NO CYCLE`, table, step, offset),
		},
		transactionalDDL: true,
		check: func(ctx context.Context, conn ticketConn) error {
			var increment, start int64
			err := conn.QueryRowContext(ctx, `SELECT increment_by, start_value FROM pg_sequences
				WHERE schemaname = current_schema() AND sequencename = $1`, table).Scan(&increment, &start)
			if err != nil {
				return err
			}
			if increment != int64(step) || start != int64(offset) {
				return fmt.Errorf("sequence %q steps by %d from %d, want %d from %d: the database served another offset or step",
					table, increment, start, step, offset)
			}
			return nil
		},
		next: func(ctx context.Context, conn ticketConn, n int, timeout time.Duration, out []int64) ([]int64, error) {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			rows, err := conn.QueryContext(ctx, `SELECT nextval('"`+table+`"') FROM generate_series(1, $1)`, n)
			if err != nil {
				return out, err
			}
			defer rows.Close()
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					return out, err
				}
				out = append(out, id)
			}
			if err := rows.Err(); err != nil {
				return out, err
			}
			if len(out) < n {
				return out, fmt.Errorf("got %d tickets, want %d", len(out), n)
			}
			return out, nil
		},
	}
}

// prepareTicketServer creates the counter on s and checks that it serves
// the offset and step sqls were made for. It is idempotent.
func prepareTicketServer(ctx context.Context, s TicketServer, sqls ticketSQL) error {
	if err := runDDL(ctx, s.DB, sqls.create, sqls.transactionalDDL); err != nil {
		return fmt.Errorf("strategies: ticket: creating the counter on %q: %w", s.Name, err)
	}
	if err := sqls.check(ctx, s.DB); err != nil {
		return fmt.Errorf("strategies: ticket: checking the counter on %q: %w", s.Name, err)
	}
	return nil
}
