package mapstore

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"
)

// liveMargin allows for clocks and pauses in telling a live process.
const liveMargin = 5 * time.Second

// TrustWindow is how long a process may route by a map it read, and noted
// itself live by, with a heartbeat of every heartbeat: less than the others
// count it live, by four fifths of the margin, which is left for clocks and
// for a statement routed just before it ends.
func TrustWindow(heartbeat time.Duration) time.Duration {
	if heartbeat > (math.MaxInt64-liveMargin)/3 {
		return math.MaxInt64 // a refresh so seldom that its window has no end
	}
	return 3*heartbeat + liveMargin/5
}

// Seen notes that this process follows version.
func (s *Store) Seen(ctx context.Context, version int64) error {
	now := time.Now().UnixMilli()
	res, err := s.Exec(ctx, "UPDATE "+processesTable+" SET map_version = ?, seen_ms = ? WHERE owner = ?", version, now, s.owner)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		return nil
	}
	_, err = s.Exec(ctx, "INSERT INTO "+processesTable+" (owner, map_version, seen_ms, refresh_ms, map_table) SELECT ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM "+processesTable+" WHERE owner = ?)",
		s.owner, version, now, s.heartbeat.Milliseconds(), s.table, s.owner)
	return err
}

// Forget removes this process from the processes table, when it stops.
func (s *Store) Forget(ctx context.Context) error {
	_, err := s.Exec(ctx, "DELETE FROM "+processesTable+" WHERE owner = ?", s.owner)
	return err
}

// Behind lists the live processes of this map that follow a version older
// than version: those seen within three of their own heartbeats and a margin
// for clocks. Another map's versions count apart; a process of a version
// that did not say its map counts for every map.
func (s *Store) Behind(ctx context.Context, version int64) ([]string, error) {
	now := time.Now().UnixMilli()
	rows, err := s.db.QueryContext(ctx, storeSQL(s.dialect, "SELECT owner, map_version FROM "+processesTable+
		" WHERE seen_ms + 3 * refresh_ms + ? >= ? AND map_version < ? AND map_table IN (?, '') ORDER BY owner"), liveMargin.Milliseconds(), now, version, s.table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var owners []string
	for rows.Next() {
		var owner string
		var v int64
		if err := rows.Scan(&owner, &v); err != nil {
			return nil, err
		}
		owners = append(owners, fmt.Sprintf("%s (version %d)", owner, v))
	}
	return owners, rows.Err()
}

// LiveTokens returns the Tokens of the processes seen within three of their
// own heartbeats and a margin for clocks.
func (s *Store) LiveTokens(ctx context.Context) (map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, storeSQL(s.dialect, "SELECT owner FROM "+processesTable+
		" WHERE seen_ms + 3 * refresh_ms + ? >= ?"), liveMargin.Milliseconds(), time.Now().UnixMilli())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	live := map[string]bool{}
	for rows.Next() {
		var owner string
		if err := rows.Scan(&owner); err != nil {
			return nil, err
		}
		live[owner[strings.LastIndexByte(owner, ':')+1:]] = true
	}
	return live, rows.Err()
}
