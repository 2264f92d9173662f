package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/internal/mapstore"
)

// Without Config.Shards no shared map records the ID layout, and the
// plugin's database does: a table of one row, claimed by the first process
// that migrates a sharded model with the plugin. A process of another layout
// is refused there, and at db.Use, before it makes an ID that could equal
// another process's.

const layoutTable = "shardid_layout"

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
	if err := e.noSharedMap(ctx, own); err != nil {
		return err
	}
	mine, _ := json.Marshal(e.storedLayout())
	stored, err := claimToken(ctx, own, e.db.Dialector.Name(), layoutTable+" (id INT NOT NULL PRIMARY KEY, layout VARCHAR(255) NOT NULL)",
		"INSERT INTO "+layoutTable+" (id, layout) VALUES (1, ?)", "SELECT layout FROM "+layoutTable+" WHERE id = 1", string(mine))
	if err != nil {
		return errs.Wrap(err, "recording the ID layout in %s", layoutTable)
	}
	return e.sameLayout(stored)
}

// checkLayout reads the layout the plugin's database records, at db.Use,
// and fails if it is another one. No record (the plugin's AutoMigrate not
// run yet), or none readable, is left to that AutoMigrate: nothing is
// written at db.Use, and statements do not wait on a read.
func (e *Engine) checkLayout(ctx context.Context) error {
	if e.maps != nil {
		return nil
	}
	own, err := e.db.DB()
	if err != nil {
		return nil // a connection of the application's own making: nothing to ask
	}
	if err := e.noSharedMap(ctx, own); err != nil {
		return err
	}
	var stored string
	if own.QueryRowContext(ctx, "SELECT layout FROM "+layoutTable+" WHERE id = 1").Scan(&stored) != nil {
		return nil
	}
	return e.sameLayout(stored)
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

// noSharedMap fails when the plugin's database holds a shared map under
// this process's map table: the processes of that map spread the logical
// shards over physical databases, and this one, without Config.Shards (a
// config that lost them), would put every sharded row on the plugin's own
// database, where the others neither write nor read them. No map there, or
// none readable, passes.
func (e *Engine) noSharedMap(ctx context.Context, own *sql.DB) error {
	stored, err := mapstore.New(own, e.db.Dialector.Name(), e.mapTable(), defaultMapRefresh).Latest(ctx)
	if err != nil || stored == nil {
		return nil
	}
	var names []string
	for _, ph := range stored.Physical {
		if len(ph.Logical) > 0 {
			names = append(names, ph.Name)
		}
	}
	return fmt.Errorf("%w: the plugin's database holds the shared map %s (version %d), by which processes with Config.Shards keep the sharded rows on %s, and this process has no Config.Shards: it would write and read every sharded row on the plugin's database instead; give it the same Config.Shards (or, for sharded models not of that map, a MapTable of its own)",
		ErrInvalidConfig, e.mapTable(), stored.Version, strings.Join(names, ", "))
}
