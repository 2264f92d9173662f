package twophase

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// prefix starts every global transaction ID of the plugin's, so recovery
// finds its own and only its own.
const prefix = "shardid-"

// GID names one global transaction: the cluster of databases whose
// coordinators made it (the servers' namespace of prepared transactions is
// shared by every database on them, and may be by other clusters), the
// coordinator's process token, its start (for the age recovery waits for)
// and a sequence of the process's.
type GID struct {
	Cluster string // a token without dashes
	Process string // a token without dashes
	Started time.Time
	Seq     uint64
}

// String is the ID as the servers see it: at most 64 bytes, MySQL's limit
// for an XA gtrid, of letters, digits and dashes only (quoted as a literal).
func (g GID) String() string {
	return fmt.Sprintf("%s%s-%s-%d-%d", prefix, g.Cluster, g.Process, g.Started.UnixMilli(), g.Seq)
}

// ParseGID reads an ID String wrote; ok is false for another's.
func ParseGID(s string) (GID, bool) {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return GID{}, false
	}
	parts := strings.Split(rest, "-")
	if len(parts) != 4 || parts[0] == "" || parts[1] == "" {
		return GID{}, false
	}
	ms, err1 := strconv.ParseInt(parts[2], 10, 64)
	seq, err2 := strconv.ParseUint(parts[3], 10, 64)
	if err1 != nil || err2 != nil {
		return GID{}, false
	}
	return GID{Cluster: parts[0], Process: parts[1], Started: time.UnixMilli(ms), Seq: seq}, true
}

// XID names one branch of a global transaction: the databases of one
// server share the servers' namespace of prepared transactions, so each
// branch has a name of its own.
type XID struct {
	GID    string
	Branch string
}

// literal is the XID as the statements of dialect name it.
func (x XID) literal(dialect string) string {
	if dialect == "mysql" {
		return "'" + x.GID + "','" + x.Branch + "'"
	}
	return "'" + x.GID + "." + x.Branch + "'"
}

// parsePostgres reads a PostgreSQL branch name literal wrote.
func parsePostgres(s string) (XID, bool) {
	i := strings.LastIndexByte(s, '.')
	if i < 0 {
		return XID{}, false
	}
	return XID{GID: s[:i], Branch: s[i+1:]}, true
}

// valid says x can be written as a literal without escaping.
func (x XID) valid() bool { return valid(x.GID) && valid(x.Branch) }

// valid says s can be written as a literal without escaping.
func valid(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}
