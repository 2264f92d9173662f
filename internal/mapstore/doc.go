// Package mapstore keeps the shared map of logical shards in the plugin's own
// database: the table of map versions every process routes by, the rows in
// which each process notes the version it follows, and the table of the
// moves' state. It is SQL and stored types only, on database/sql, for the
// dialects "mysql" (also MariaDB), "postgres" and "sqlite"; when to read the
// map and what to do with it is its caller's.
//
//	s := mapstore.New(db, "postgres", "shardid_shard_map", time.Second)
//	err := s.Prepare(ctx)                              // the map and processes tables
//	latest, err := s.Latest(ctx)                       // the newest version, or nil
//	err = s.Write(ctx, mapstore.MapOf(m, latest.Version+1)) // fails if another wrote it first
//	err = s.Seen(ctx, latest.Version+1)                // this process follows it
//	behind, err := s.Behind(ctx, latest.Version+1)     // live processes that do not yet
//
// The moves' state is one row per range in [Store.SaveMove]'s table, and
// [Store.LockMove] lets one run at a time work on a move.
package mapstore
