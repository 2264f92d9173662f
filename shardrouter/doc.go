// Package shardrouter maps logical shards to physical databases, and plans
// where a statement runs.
//
// A [Map] is built once from the logical ranges each physical database holds,
// validated (every logical shard mapped exactly once), and then answers
// lookups without allocating:
//
//	m, err := shardrouter.NewMap(8192, []shardrouter.Physical{
//		{Name: "pg-a", Logical: []shardrouter.Range{{From: 0, To: 4095}}},
//		{Name: "pg-b", Logical: []shardrouter.Range{{From: 4096, To: 8191}}},
//	})
//	m.Physical(5000) // 1: pg-b
//
// A [Router] holds the current map and swaps it atomically, so a logical
// shard can be moved while statements are being routed.
//
// The planner decides, as pure functions of the map and of a statement as
// GORM binds it, with no I/O:
//   - [PlanRoute]: the databases a statement needs, by its shard clause, its
//     conditions on the key columns and its rows, as a [Set] (no ceiling on
//     the databases; a set of one allocates nothing), or why it is refused;
//   - [PlanRows] and [OneDatabase]: the rows of a Create per database;
//   - [PlanParts]: what each database of a statement over several is asked,
//     its own values of every list on a key column, and the frozen copies it
//     skips;
//   - [PlanMerge]: how the parts of a query merge (an allowlist), or why
//     they cannot;
//   - [PlanRaw]: whether SQL known only as text runs where it would;
//   - [CheckAssignments], [CheckUpsert]: what a write may do to the columns
//     that place a row;
//   - [ColocatedJoin], [CheckSQLTables], [ColocatedAlong]: which joins and
//     SQL in conditions stay on one database.
//
// The shardid plugin's callbacks build these plans and execute them.
package shardrouter
