package mapstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/shardrouter"
)

// Map is one version of the shared map, as the map table keeps it. It is
// safe for concurrent reads, not for changes.
type Map struct {
	Version  int64
	Physical []Physical `json:"physical"`
	// Floors are the time ticks the snowflake IDs of moved shards must pass
	// on their new database: a move writes them with the map it makes, and
	// every later version keeps them, for processes that read that one first.
	Floors []Floor `json:"floors,omitempty"`
	// Copies are the frozen copies moves left on their sources until their
	// cleanup: a statement over several databases reads past them.
	Copies []Physical `json:"copies,omitempty"`
	// Freezing are the ranges whose cutover a mover announced: processes
	// hold the writes of them that cannot be run again alone (models with
	// Before hooks) before those writes begin, until the range moved.
	Freezing []Freezing `json:"freezing,omitempty"`
	// Layout is the ID layout of the processes that made the map (absent
	// from maps made before it was kept): an ID names one shard, and a
	// sequence one worker, only among processes that share it.
	Layout *Layout `json:"layout,omitempty"`
}

// Layout is an ID layout as the map table keeps it.
type Layout struct {
	EpochMs      int64 `json:"epoch_ms"`
	UnitMs       int64 `json:"unit_ms"`
	TimeBits     int   `json:"time_bits"`
	ShardBits    int   `json:"shard_bits"`
	SequenceBits int   `json:"sequence_bits"`
	WorkerBits   int   `json:"worker_bits"`
}

// Freezing is a range whose cutover is under way, until Until (Unix
// milliseconds) at the latest: a mover that died announces nothing longer.
// Like [Map], it is safe for concurrent reads, not for changes.
type Freezing struct {
	Logical shardrouter.Range `json:"logical"`
	Until   int64             `json:"until"`
}

// Physical is a physical database of a stored map and the logical shards it
// holds. Like [Map], it is safe for concurrent reads, not for changes.
type Physical struct {
	Name    string              `json:"name"`
	Logical []shardrouter.Range `json:"logical"`
}

// Floor is the time tick the snowflake IDs of a moved range must pass. Like
// [Map], it is safe for concurrent reads, not for changes.
type Floor struct {
	Logical shardrouter.Range `json:"logical"`
	Tick    int64             `json:"tick"`
}

// MapOf describes m for the map table, as the given version.
func MapOf(m *shardrouter.Map, version int64) *Map {
	stored := &Map{Version: version}
	for k := range m.Len() {
		stored.Physical = append(stored.Physical, Physical{Name: m.Name(k), Logical: Ranges(m.Logical(k))})
	}
	return stored
}

// Ranges folds ascending logical shards into ranges.
func Ranges(shards []int) []shardrouter.Range {
	var ranges []shardrouter.Range
	for _, s := range shards {
		if n := len(ranges); n > 0 && ranges[n-1].To == s-1 {
			ranges[n-1].To = s
			continue
		}
		ranges = append(ranges, shardrouter.Range{From: s, To: s})
	}
	return ranges
}

// Latest returns the newest version of the map, or nil if there is none.
func (s *Store) Latest(ctx context.Context) (*Map, error) {
	stored, _, err := s.LatestAnd(ctx, "NULL")
	return stored, err
}

// LatestAnd is Latest, with the value of probe, a scalar SQL expression
// read in the same query, as text ("" for NULL, or without a map): a
// process following something else the plugin's database keeps beside the
// map (the record of sharded tables) pays no round trip more for it.
func (s *Store) LatestAnd(ctx context.Context, probe string) (*Map, string, error) {
	var version int64
	var body string
	var probed sql.NullString
	err := s.db.QueryRowContext(ctx, "SELECT version, map, "+probe+" FROM "+s.quoted(s.table)+" ORDER BY version DESC LIMIT 1").Scan(&version, &body, &probed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	stored := &Map{Version: version}
	if err := json.Unmarshal([]byte(body), stored); err != nil {
		return nil, "", errs.Wrap(err, "map version %d in %s", version, s.table)
	}
	return stored, probed.String, nil
}

// Write stores m as version m.Version. It fails, changing nothing, if that
// version exists: another writer was first ([DuplicateKey] tells).
func (s *Store) Write(ctx context.Context, m *Map) error {
	return s.writeOn(ctx, s.db, m)
}

// WriteWithMove stores m as Write does and, in the same transaction, the
// state of the move that m ends: the map and the move's record never tell
// different stories, whichever answer is lost.
func (s *Store) WriteWithMove(ctx context.Context, m *Map, st *MoveState) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	// The move's row first, as BeginCancel locks it: a cancel begun since the seal wins.
	phase, err := s.lockedPhase(ctx, tx, st.Logical)
	if err == nil && (phase == phaseCancelling || phase == "cancelled") {
		err = ErrCancelling
	}
	if err != nil {
		return errors.Join(err, tx.Rollback())
	}
	if err := s.writeOn(ctx, tx, m); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	if err := s.saveMoveOn(ctx, tx, st); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	return tx.Commit()
}

// execer is a pool or a transaction of the store's database.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func (s *Store) writeOn(ctx context.Context, on execer, m *Map) error {
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = on.ExecContext(ctx, storeSQL(s.dialect, "INSERT INTO "+s.quoted(s.table)+" (version, map, created_ms) VALUES (?, ?, ?)"), m.Version, string(body), time.Now().UnixMilli())
	return err
}
