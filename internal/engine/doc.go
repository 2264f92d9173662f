// Package engine routes and runs the statements of a gorm.DB for the shardid
// plugin: the GORM glue, as GORM's own callbacks package is GORM's.
//
// The shardid package hands it the user's Config; [Engine.Initialize]
// registers its callbacks (callbacks.go) before and after GORM's own. Each
// callback reads a statement as GORM built it, asks the planner
// ([github.com/shardid/shardid/shardrouter]) where it runs, and executes the
// plan:
//   - one database: the statement is bound to that database's pool, or
//     checked against its transaction's (route.go);
//   - a Create: IDs are made and the rows split by database (create.go);
//   - several databases: one part per database; a query's parts run at once
//     and are merged (fanout.go, querypart.go, merge.go); a write's run as
//     one, each planned before any writes and written before any commits
//     (execute.go);
//   - sub-statements (preloads, association saves, hooks, subqueries) are
//     routed on their own models (substatement.go, subquery.go), raw SQL by
//     the tables it names (raw.go);
//   - a write refused by a move's fence is held and run again on the new
//     database (moved.go).
//
// Beside the query path: the physical databases, opened on first use
// (shards.go); the shared map, read and refreshed (maprefresh.go); the
// strategies' generators (engine.go); the shard-aware migrator and the mover
// it drives (migrator.gen.go, movedriver.go); and what exporters read:
// statement counts, log lines, spans (metrics.go, logs.go, tracing.go).
package engine
