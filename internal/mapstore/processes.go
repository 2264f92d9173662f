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
	if err != nil {
		return err
	}
	// A process that starts forgets those that stopped without a word (a
	// crash) long ago: counted gone since, they would pile up.
	_, err = s.Exec(ctx, "DELETE FROM "+processesTable+" WHERE seen_ms + 3 * refresh_ms + ? < ?", liveMargin.Milliseconds(), now-forgetSilentAfter.Milliseconds())
	return err
}

// forgetSilentAfter is how long a process counted gone stays listed.
const forgetSilentAfter = 24 * time.Hour

// Forget removes this process from the processes table, when it stops.
func (s *Store) Forget(ctx context.Context) error {
	_, err := s.Exec(ctx, "DELETE FROM "+processesTable+" WHERE owner = ?", s.owner)
	return err
}

// Behind lists the live processes of this map that follow a version older
// than version, or one above the table's newest (a map its table, made
// anew, no longer holds): those seen within three of their own heartbeats
// and a margin for clocks. Another map's versions count apart; a process of
// a version that did not say its map counts for every map.
func (s *Store) Behind(ctx context.Context, version int64) ([]string, error) {
	now := time.Now().UnixMilli()
	rows, err := s.db.QueryContext(ctx, storeSQL(s.dialect, "SELECT owner, map_version FROM "+processesTable+
		" WHERE seen_ms + 3 * refresh_ms + ? >= ? AND (map_version < ? OR map_version > (SELECT MAX(version) FROM "+s.quoted(s.table)+")) AND map_table IN (?, '') ORDER BY owner"), liveMargin.Milliseconds(), now, version, s.table)
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

// Process is a process of this map as the processes table records it.
type Process struct {
	Owner      string
	MapVersion int64
	Seen       time.Time
	Live       bool // seen within three of its own heartbeats and a margin for clocks
	Self       bool // the process that asked
}

// Processes lists the processes recorded for this map (and those of
// versions that did not say their map), live ones first, each by owner.
func (s *Store) Processes(ctx context.Context) ([]Process, error) {
	if err := s.addMapTableColumn(ctx); err != nil {
		return nil, err
	}
	now := time.Now().UnixMilli()
	rows, err := s.db.QueryContext(ctx, storeSQL(s.dialect, "SELECT owner, map_version, seen_ms, seen_ms + 3 * refresh_ms + ? >= ? FROM "+processesTable+
		" WHERE map_table IN (?, '') ORDER BY 4 DESC, owner"), liveMargin.Milliseconds(), now, s.table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []Process
	for rows.Next() {
		var p Process
		var seen int64
		if err := rows.Scan(&p.Owner, &p.MapVersion, &seen, &p.Live); err != nil {
			return nil, err
		}
		p.Seen, p.Self = time.UnixMilli(seen), p.Owner == s.owner
		list = append(list, p)
	}
	return list, rows.Err()
}
