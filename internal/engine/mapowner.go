package engine

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/shardid/shardid/internal/errs"
)

// A process whose Config.MapTable is mistyped, or whose plugin database is
// another application's, but whose Config.Shards name the same physical
// databases, would seed and follow a map of its own, and write rows where
// the real map's processes no longer look once a move changed it. So each
// physical database records the map that owns it, the plugin database's
// token and the map table, claimed by the first process that opens it, and
// a process of another map is refused when the database first opens, before
// a statement or a move runs there.

const mapOwnerTable = "shardid_map_owner"

// checkMapOwner records this process's map as the owner of physical
// database name unless one is recorded, and fails unless the one recorded
// is this process's.
func (e *Engine) checkMapOwner(ctx context.Context, name string, physical *sql.DB, dialect, ownToken string) error {
	mine := ownToken + " " + e.mapTable()
	stored, err := claimToken(ctx, physical, dialect, mapOwnerTable+" (id INT NOT NULL PRIMARY KEY, owner VARCHAR(255) NOT NULL)",
		"INSERT INTO "+mapOwnerTable+" (id, owner) VALUES (1, ?)", "SELECT owner FROM "+mapOwnerTable+" WHERE id = 1", mine)
	if err != nil {
		return errs.Wrap(err, "%s: reading the map that owns it", name)
	}
	if stored == mine {
		return nil
	}
	token, table, _ := strings.Cut(stored, " ")
	if token == ownToken {
		return fmt.Errorf("%w: shard %s opens a database of the shared map %s, and this process's Config.MapTable is %s: is it mistyped? Its own map would put the logical shards where the config says, not where moves of %s put them, and write rows where that map's processes do not look. If the database was given to this map on purpose, delete the row of %s there",
			ErrInvalidConfig, name, table, e.mapTable(), table, mapOwnerTable)
	}
	return fmt.Errorf("%w: shard %s opens a database of the shared map %s of another plugin database (token %s; this process's plugin database has %s): is the plugin's DSN another application's or another environment's? This process would follow a map of its own over that map's databases. If the database was given to this map on purpose, delete the row of %s there",
		ErrInvalidConfig, name, table, token, ownToken, mapOwnerTable)
}
