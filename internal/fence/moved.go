package fence

import (
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
)

// moved matches the triggers' refusal; SQLite's literal message has no shard.
var moved = regexp.MustCompile(`shardid: logical shard (?:(\d+) )?moved to ([A-Za-z0-9_.:-]+)`)

// MovedShard recognises a write the fence refused, from the error of any of
// the three drivers, and returns the logical shard (-1 on SQLite, whose
// message cannot carry it) and the target database the range moved to.
func MovedShard(err error) (shard int, target string, ok bool) {
	if err == nil {
		return 0, "", false
	}
	text := err.Error()
	var myErr *mysql.MySQLError
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &myErr):
		text = myErr.Message
	case errors.As(err, &pgErr):
		text = pgErr.Message
	}
	m := moved.FindStringSubmatch(text)
	if m == nil {
		return 0, "", false
	}
	if m[1] == "" {
		return -1, m[2], true
	}
	shard, convErr := strconv.Atoi(m[1])
	if convErr != nil {
		return 0, "", false
	}
	return shard, m[2], true
}

// RacedInstall recognises MySQL's and MariaDB's refusal of a statement that
// opened its table while a trigger was being created on it: the statement
// had not locked the fence's tables, which the new trigger reads. It wrote
// nothing; run again, it sees the trigger and its tables.
func RacedInstall(err error) bool {
	var myErr *mysql.MySQLError
	return errors.As(err, &myErr) && myErr.Number == 1146 &&
		(strings.Contains(myErr.Message, fenceTable) || strings.Contains(myErr.Message, changesTable))
}
