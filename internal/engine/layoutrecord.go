package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/shardid/shardid/internal/mapstore"
)

// Without Config.Shards no shared map records the ID layout, and the
// plugin's database does: a table of one row, claimed by the first process
// that migrates a sharded model with the plugin. A process of another layout
// is refused there, and at its first ID, before it makes one that could
// equal another process's.

const layoutTable = "shardid_layout"

// layoutRecord is what a process knows of the record.
type layoutRecord struct {
	mu      sync.Mutex
	checked atomic.Bool // read once: this process's IDs may be made
}

// claimLayout records the process's layout in the plugin's database unless
// one is there, and fails unless the one there is the process's.
func (e *Engine) claimLayout(ctx context.Context) error {
	if e.maps != nil {
		return nil // the shared map keeps the layout
	}
	own, err := e.db.DB()
	if err != nil {
		return err
	}
	mine, _ := json.Marshal(e.storedLayout())
	stored, err := claimToken(ctx, own, e.db.Dialector.Name(), layoutTable+" (id INT NOT NULL PRIMARY KEY, layout VARCHAR(255) NOT NULL)",
		"INSERT INTO "+layoutTable+" (id, layout) VALUES (1, ?)", "SELECT layout FROM "+layoutTable+" WHERE id = 1", string(mine))
	if err != nil {
		return fmt.Errorf("shardid: recording the ID layout in %s: %w", layoutTable, err)
	}
	if err := e.sameLayout(stored); err != nil {
		return err
	}
	e.layoutRecord.checked.Store(true)
	return nil
}

// checkLayout reads, once, the layout the plugin's database records, and
// fails if it is another one. No record (the plugin's AutoMigrate not run),
// or none readable, is left to that AutoMigrate: nothing is written here,
// where an application's transaction may hold the database.
func (e *Engine) checkLayout(ctx context.Context) error {
	if e.maps != nil || e.layoutRecord.checked.Load() {
		return nil
	}
	e.layoutRecord.mu.Lock()
	defer e.layoutRecord.mu.Unlock()
	if e.layoutRecord.checked.Load() {
		return nil
	}
	own, err := e.db.DB()
	if err != nil {
		return nil
	}
	var stored string
	if own.QueryRowContext(ctx, "SELECT layout FROM "+layoutTable+" WHERE id = 1").Scan(&stored) == nil {
		if err := e.sameLayout(stored); err != nil {
			return err
		}
	}
	e.layoutRecord.checked.Store(true)
	return nil
}

// sameLayout fails unless stored is this process's layout.
func (e *Engine) sameLayout(stored string) error {
	var theirs mapstore.Layout
	if err := json.Unmarshal([]byte(stored), &theirs); err != nil || theirs != *e.storedLayout() {
		return fmt.Errorf("%w: the IDs of this database were made with the layout %s (table %s), and this process's Config.Layout is %+v: an ID of one could equal an ID of the other; give every process one layout, and keep it",
			ErrInvalidConfig, stored, layoutTable, *e.storedLayout())
	}
	return nil
}
