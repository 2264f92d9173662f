// Package mover moves ranges of logical shards between physical databases
// online, as a workflow whose state is a row of the shared map's store, so
// that running a move again resumes it. Each phase is a function that can
// run again: prepare (the target's tables, the source's fence and triggers,
// the target's ID sources advanced), copy (key order, chunks, upsert),
// catch-up (the change log replayed), cutover (the range frozen, the log
// drained, both sides compared, the new map version written); then Cancel
// before the cutover, or Cleanup after it.
//
// The plugin drives it through a [Driver]: its physical databases, its map
// and store, its migrator and ID sources. It knows nothing of the query path.
//
//	var m mover.Mover // one per plugin; its zero value is ready
//	report, err := m.Move(ctx, driver, mover.Request{Logical: mover.Range{From: 6144, To: 8191}, To: "pg-c"})
//	err = m.Cleanup(ctx, driver, report.Logical, nil) // once every process follows the new map
//	running := m.Stats()                                // the moves this process runs
package mover
