// Package shardrouter maps logical shards to physical databases.
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
package shardrouter
