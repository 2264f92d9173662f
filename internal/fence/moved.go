package fence

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/internal/sqlerr"
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
	text := errs.Text(err)
	if _, message, ok := sqlerr.MySQL(err); ok {
		text = message
	} else if _, message, ok := sqlerr.Postgres(err); ok {
		text = message
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
	number, message, ok := sqlerr.MySQL(err)
	return ok && number == 1146 && (strings.Contains(message, fenceTable) || strings.Contains(message, changesTable))
}
