package mapstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/internal/longtext"
	"github.com/shardid/shardid/internal/sqlerr"
	"github.com/shardid/shardid/shardrouter"
)

// movesTable keeps the state of each move, so that running a move again
// resumes it where it stopped: the default map's; another map's is named
// after it (KeptTable).
const movesTable = "shardid_moves"

// MoveState is one move's row in the moves table. A value is not safe for
// concurrent use: one run of the move owns it.
type MoveState struct {
	Logical    shardrouter.Range
	From, To   string
	Phase      string
	Tables     []string            `json:"tables"`
	Cursors    map[string]any      `json:"cursors,omitempty"` // the last key copied, per table; absent: not started
	Copied     map[string]int64    `json:"copied,omitempty"`
	Done       map[string]bool     `json:"done,omitempty"`     // tables copied completely
	Deferred   map[string][]any    `json:"deferred,omitempty"` // keys of rows the copy could not write before a parent row of the same table, per table; written after its last chunk
	Columns    map[string][]string `json:"columns,omitempty"`  // the source's columns per table the copy carries
	Changes    int64               `json:"changes"`
	MaxKeys    map[string]int64    `json:"max_keys,omitempty"` // the highest int64 key seen per table, deleted rows too; of another ID column, as "table.column"
	Frozen     time.Duration       `json:"frozen"`
	FrozenAt   time.Time           `json:"frozen_at"`
	MapVersion int64               `json:"map_version"`
	CutoverAt  time.Time           `json:"cutover_at"`
	Started    time.Time           `json:"started"`
	Notes      map[string]string   `json:"notes,omitempty"`
	// Cancelling: a cancel of the move began ([Store.BeginCancel]) and has
	// not ended; read from the phase column, not kept in the state.
	Cancelling bool `json:"-"`
}

// PrepareMoves creates the moves table if it is missing. A move's state
// grows with the keys its copy keeps aside (MoveState.Deferred): on
// MySQL/MariaDB, whose TEXT holds 64 KiB, it is a LONGTEXT, and a table made
// by a version before is altered so once.
func (s *Store) PrepareMoves(ctx context.Context) error {
	state := "TEXT"
	if s.dialect == "mysql" {
		state = "LONGTEXT"
	}
	_, err := s.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+s.quoted(s.moves)+" (from_shard INT NOT NULL, to_shard INT NOT NULL, phase VARCHAR(32) NOT NULL, state "+state+" NOT NULL, updated_ms BIGINT NOT NULL, PRIMARY KEY (from_shard, to_shard))")
	if err != nil && !AlreadyExists(err) {
		return err
	}
	if s.dialect != "mysql" || s.movesWidened.Load() {
		return nil
	}
	if err := longtext.Widen(ctx, s.db, s.moves, s.quoted(s.moves), "state"); err != nil {
		return err
	}
	s.movesWidened.Store(true)
	return nil
}

// LoadMove returns the state of the move of r, or nil (none recorded, or
// no moves table).
func (s *Store) LoadMove(ctx context.Context, r shardrouter.Range) (*MoveState, error) {
	var body, phase string
	err := s.db.QueryRowContext(ctx, storeSQL(s.dialect, "SELECT state, phase FROM "+s.quoted(s.moves)+" WHERE from_shard = ? AND to_shard = ?"), r.From, r.To).Scan(&body, &phase)
	if errors.Is(err, sql.ErrNoRows) || sqlerr.MissingTable(s.dialect, err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	st, err := decodeMove(body)
	if err != nil {
		return nil, errs.Wrap(err, "the state of the move of %d-%d in %s", r.From, r.To, s.moves)
	}
	st.Cancelling = phase == phaseCancelling
	return st, nil
}

// decodeMove reads a move's state, its cursors as json.Number: an int64 key
// above 2^53 does not survive a float64.
func decodeMove(body string) (*MoveState, error) {
	st := &MoveState{}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(st); err != nil {
		return nil, err
	}
	return st, nil
}

// Moves returns every move's state, ended ones too, for operators; none
// when the moves table is missing, which it does not make: an operator's
// command that lists the moves writes nothing.
func (s *Store) Moves(ctx context.Context) ([]*MoveState, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT state, phase FROM "+s.quoted(s.moves)+" ORDER BY from_shard")
	if sqlerr.MissingTable(s.dialect, err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []*MoveState
	for rows.Next() {
		var body, phase string
		if err := rows.Scan(&body, &phase); err != nil {
			return nil, err
		}
		st, err := decodeMove(body)
		if err != nil {
			return nil, err
		}
		st.Cancelling = phase == phaseCancelling
		list = append(list, st)
	}
	return list, rows.Err()
}

// SaveMove writes the state of a move; its error names the move and the
// table, as the mover returns it as it is.
func (s *Store) SaveMove(ctx context.Context, st *MoveState) error {
	if err := s.saveMoveOn(ctx, s.db, st); err != nil {
		return errs.Wrap(err, "recording the move of %d-%d to %s (phase %s) in %s on the plugin's database", st.Logical.From, st.Logical.To, st.To, st.Phase, s.moves)
	}
	return nil
}

// phaseCancelling marks, in the moves table's phase column alone, a move
// whose cancel began: no map that ends it is written any more.
const phaseCancelling = "cancelling"

// ErrCancelling is returned by [Store.WriteWithMove] for a move whose cancel
// began: the map that would end it is not written.
var ErrCancelling = errors.New("mapstore: a cancel of the move began; the map that ends it is not written")

// ErrServed is returned by [Store.BeginCancel] for a move the latest map
// ends already.
var ErrServed = errors.New("mapstore: the map ends the move already")

// BeginCancel marks the move of r as being cancelled, unless ends says the
// latest map ends it. The move's row is locked first, as [Store.WriteWithMove]
// locks it, so of a cancel and the map write that ends the move only the
// first happens, whatever runs hold (or lost) the move's lock.
func (s *Store) BeginCancel(ctx context.Context, r shardrouter.Range, ends func(*Map) (bool, error)) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := s.lockedPhase(ctx, tx, r); err != nil {
		return err
	}
	var version int64
	var body string
	err = tx.QueryRowContext(ctx, "SELECT version, map FROM "+s.quoted(s.table)+" ORDER BY version DESC LIMIT 1").Scan(&version, &body)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if err == nil {
		latest := &Map{Version: version}
		if err := json.Unmarshal([]byte(body), latest); err != nil {
			return errs.Wrap(err, "map version %d in %s", version, s.table)
		}
		if ended, err := ends(latest); err != nil || ended {
			return errors.Join(err, map[bool]error{true: ErrServed}[ended])
		}
	}
	if _, err := tx.ExecContext(ctx, storeSQL(s.dialect, "UPDATE "+s.quoted(s.moves)+" SET phase = ? WHERE from_shard = ? AND to_shard = ?"), phaseCancelling, r.From, r.To); err != nil {
		return err
	}
	return tx.Commit()
}

// lockedPhase reads the phase column of r's move, locking its row until tx
// ends (on SQLite, the database's write lock).
func (s *Store) lockedPhase(ctx context.Context, tx *sql.Tx, r shardrouter.Range) (string, error) {
	lock := " FOR UPDATE"
	if s.dialect == "sqlite" {
		lock = ""
		// The write lock first: a transaction that read before another connection's commit cannot write after it (SQLITE_BUSY).
		if _, err := tx.ExecContext(ctx, "UPDATE "+s.quoted(s.moves)+" SET phase = phase WHERE 0"); err != nil {
			return "", err
		}
	}
	var phase string
	err := tx.QueryRowContext(ctx, storeSQL(s.dialect, "SELECT phase FROM "+s.quoted(s.moves)+" WHERE from_shard = ? AND to_shard = ?"+lock), r.From, r.To).Scan(&phase)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return phase, err
}

func (s *Store) saveMoveOn(ctx context.Context, on execer, st *MoveState) error {
	body, err := json.Marshal(st)
	if err != nil {
		return err
	}
	now := time.Now().UnixMilli()
	// A cancel's mark stays until the cancel records its end: a run that lost the move's lock may save its state meanwhile.
	res, err := on.ExecContext(ctx, storeSQL(s.dialect, "UPDATE "+s.quoted(s.moves)+" SET phase = CASE WHEN phase = ? AND ? <> 'cancelled' THEN phase ELSE ? END, state = ?, updated_ms = ? WHERE from_shard = ? AND to_shard = ?"),
		phaseCancelling, st.Phase, st.Phase, string(body), now, st.Logical.From, st.Logical.To)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		return nil
	}
	_, err = on.ExecContext(ctx, storeSQL(s.dialect, "INSERT INTO "+s.quoted(s.moves)+" (from_shard, to_shard, phase, state, updated_ms) VALUES (?, ?, ?, ?, ?)"), st.Logical.From, st.Logical.To, st.Phase, string(body), now)
	if err != nil && DuplicateKey(err) {
		return nil // MySQL counts an UPDATE that changed nothing as no row
	}
	return err
}

// DeleteMove forgets a move that ended, so that the range may move again.
func (s *Store) DeleteMove(ctx context.Context, r shardrouter.Range) error {
	_, err := s.Exec(ctx, "DELETE FROM "+s.quoted(s.moves)+" WHERE from_shard = ? AND to_shard = ?", r.From, r.To)
	return err
}
