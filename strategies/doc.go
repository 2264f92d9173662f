// Package strategies makes the 64-bit, shard-aware IDs of shardid.
//
// A [Layout] says how an ID is cut into time, logical shard and sequence bits;
// every int64 strategy keeps the logical shard at the same position, so
// [Layout.Shard] reads it back from any ID:
//
//	layout := strategies.Layout{} // the default 40/13/10 layout from 2025-01-01
//	id := layout.Compose(time.Now(), 42, 7)
//	layout.Shard(id) // 42
//
// The strategies themselves are [Instagram], whose sequence and time come
// from the database the rows are written to; [Snowflake], which makes IDs
// in-process without a round trip, under a worker ID leased from each
// database ([NewLeasedSnowflake]); [Segment], which hands out blocks of a
// counter kept in each database; and [Ticket], which takes tickets from
// ticket servers chosen by consistent hashing. [UUIDs] makes version 7 and 4
// UUIDs that carry the logical shard. Each reports [Stats].
package strategies
