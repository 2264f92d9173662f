// Package fence is the source database's part of an online move of a range
// of logical shards: triggers on every sharded table log the writes of the
// range while it is copied (capturing), then refuse them once it is frozen,
// so that no process can write there whatever shard map it holds.
//
// It works on database/sql for the dialects "mysql" (also MariaDB),
// "postgres" and "sqlite". The order of a move:
//
//	f := fence.Fence{Dialect: "postgres", ShardBits: 13, SequenceBits: 10}
//	err := f.Prepare(ctx, db)                       // the fence and change-log tables
//	err = f.Install(ctx, db, fence.Table{Name: "users", Key: "id", Kind: fence.KeyInt64})
//	err = f.Open(ctx, db, fence.Range{From: 6144, To: 8191}, "pg-c") // capture; then copy
//	changes, err := f.Changes(ctx, db, 1000)         // replay, then Forget them
//	err = f.Freeze(ctx, db, fence.Range{From: 6144, To: 8191})      // refuse; drain the log
//	err = f.Close(ctx, db, fence.Range{From: 6144, To: 8191})       // after cleanup
//
// A refused write fails with an error that [MovedShard] recognises.
package fence
