package shardid

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// movesTable keeps, in the plugin's own database, the state of each move, so
// that running a move again resumes it where it stopped.
const movesTable = "shardid_moves"

// Phases of a move, in order.
const (
	PhasePrepare   = "prepare"   // target tables, triggers on the source, ID sources advanced
	PhaseCopy      = "copy"      // rows of the range copied in key order
	PhaseCatchUp   = "catch-up"  // the change log replayed
	PhaseCutover   = "cutover"   // frozen on the source, log drained, verified, new map written
	PhaseServing   = "serving"   // the target serves the range; the source keeps a frozen copy
	PhaseCancelled = "cancelled" // cancelled before cutover
	PhaseCleaned   = "cleaned"   // the source's copies deleted, its triggers dropped
)

// moveState is one move's row in the moves table.
type moveState struct {
	Logical    Range
	From, To   string
	Phase      string
	Tables     []string          `json:"tables"`
	Cursors    map[string]any    `json:"cursors,omitempty"` // the last key copied, per table; absent: not started
	Copied     map[string]int64  `json:"copied,omitempty"`
	Done       map[string]bool   `json:"done,omitempty"` // tables copied completely
	Changes    int64             `json:"changes"`
	MaxKeys    map[string]int64  `json:"max_keys,omitempty"` // the highest int64 key seen per table, deleted rows too
	Frozen     time.Duration     `json:"frozen"`
	FrozenAt   time.Time         `json:"frozen_at"`
	MapVersion int64             `json:"map_version"`
	CutoverAt  time.Time         `json:"cutover_at"`
	Started    time.Time         `json:"started"`
	Notes      map[string]string `json:"notes,omitempty"`
}

func (s *mapStore) prepareMoves(ctx context.Context) error {
	_, err := s.exec(ctx, "CREATE TABLE IF NOT EXISTS "+movesTable+" (from_shard INT NOT NULL, to_shard INT NOT NULL, phase VARCHAR(32) NOT NULL, state TEXT NOT NULL, updated_ms BIGINT NOT NULL, PRIMARY KEY (from_shard, to_shard))")
	if err != nil && !alreadyExists(err) {
		return err
	}
	return nil
}

// loadMove returns the state of the move of r, or nil.
func (s *mapStore) loadMove(ctx context.Context, r Range) (*moveState, error) {
	var body string
	err := s.db.QueryRowContext(ctx, storeSQL(s.dialect, "SELECT state FROM "+movesTable+" WHERE from_shard = ? AND to_shard = ?"), r.From, r.To).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	st, err := decodeMove(body)
	if err != nil {
		return nil, fmt.Errorf("shardid: the state of the move of %d-%d in %s: %w", r.From, r.To, movesTable, err)
	}
	return st, nil
}

// decodeMove reads a move's state, its cursors as json.Number: an int64 key
// above 2^53 does not survive a float64.
func decodeMove(body string) (*moveState, error) {
	st := &moveState{}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(st); err != nil {
		return nil, err
	}
	return st, nil
}

// moves returns every move's state, for operators.
func (s *mapStore) moves(ctx context.Context) ([]*moveState, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT state FROM "+movesTable+" ORDER BY from_shard")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []*moveState
	for rows.Next() {
		var body string
		if err := rows.Scan(&body); err != nil {
			return nil, err
		}
		st, err := decodeMove(body)
		if err != nil {
			return nil, err
		}
		list = append(list, st)
	}
	return list, rows.Err()
}

// saveMove writes the state of a move.
func (s *mapStore) saveMove(ctx context.Context, st *moveState) error {
	body, err := json.Marshal(st)
	if err != nil {
		return err
	}
	now := time.Now().UnixMilli()
	res, err := s.exec(ctx, "UPDATE "+movesTable+" SET phase = ?, state = ?, updated_ms = ? WHERE from_shard = ? AND to_shard = ?", st.Phase, string(body), now, st.Logical.From, st.Logical.To)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		return nil
	}
	_, err = s.exec(ctx, "INSERT INTO "+movesTable+" (from_shard, to_shard, phase, state, updated_ms) VALUES (?, ?, ?, ?, ?)", st.Logical.From, st.Logical.To, st.Phase, string(body), now)
	if err != nil && duplicateKey(err) {
		return nil // MySQL counts an UPDATE that changed nothing as no row
	}
	return err
}

// duplicateKey reports a primary key conflict, in any of the dialects' words.
func duplicateKey(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Duplicate entry") || strings.Contains(msg, "duplicate key") || strings.Contains(msg, "UNIQUE constraint failed")
}

// deleteMove forgets a move that ended, so that the range may move again.
func (s *mapStore) deleteMove(ctx context.Context, r Range) error {
	_, err := s.exec(ctx, "DELETE FROM "+movesTable+" WHERE from_shard = ? AND to_shard = ?", r.From, r.To)
	return err
}

// lockPatience is how long a run waits for the move's lock.
const lockPatience = 3 * time.Second

// sqliteMoveLocks stand in for the servers' named locks: SQLite has one
// writing process.
var sqliteMoveLocks sync.Map // lock name → struct{}

// lockMove takes the lock of the move of r, which one run at a time holds,
// be it a mover, a cancel or a cleanup; it fails at once if another has it.
// The returned function releases it. The servers drop it with the
// connection of a run that dies.
func (s *mapStore) lockMove(ctx context.Context, r Range) (func(), error) {
	name := fmt.Sprintf("shardid_move_%d_%d", r.From, r.To)
	busy := fmt.Errorf("%w: another run holds the move of %d-%d (a mover, a cancel or a cleanup); wait for it to end", ErrMoveInvalid, r.From, r.To)
	if s.dialect == "sqlite" {
		if _, taken := sqliteMoveLocks.LoadOrStore(name, struct{}{}); taken {
			return nil, busy
		}
		return func() { sqliteMoveLocks.Delete(name) }, nil
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	take, release := "SELECT COALESCE(GET_LOCK(?, 0), 0) = 1", "SELECT RELEASE_LOCK(?)"
	if s.dialect == "postgres" {
		take, release = "SELECT pg_try_advisory_lock(hashtext($1))", "SELECT pg_advisory_unlock(hashtext($1))"
	}
	// A run killed a moment ago holds it until its server sees the connection gone.
	for deadline := time.Now().Add(lockPatience); ; {
		var got bool
		if err := conn.QueryRowContext(ctx, take, name).Scan(&got); err != nil {
			_ = conn.Close()
			return nil, err
		}
		if got {
			break
		}
		if time.Now().After(deadline) {
			_ = conn.Close()
			return nil, busy
		}
		time.Sleep(100 * time.Millisecond)
	}
	return func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), release, name)
		_ = conn.Close()
	}, nil
}
