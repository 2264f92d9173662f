// Package shardid is a GORM plugin that gives every row of a tagged model a
// 64-bit, time-ordered primary key carrying the row's logical shard, before
// the row is inserted.
//
// Register it once, and tag the ID fields:
//
//	db.Use(shardid.New(shardid.Config{}))
//
//	type User struct {
//		ID   int64 `shardid:""`                // default strategy, shard picked uniformly
//		Name string
//	}
//	type Photo struct {
//		ID     shardid.ID `shardid:"colocate:UserID"` // same logical shard as its user
//		UserID int64
//	}
//
// The tag is `shardid:"strategy:NAME;colocate:Field;hash:Field"`, every part
// optional. The strategies are "instagram" (the default: the sequence and the
// time come from the database the row is written to) and "snowflake"
// (in-process, with a worker ID per process); see package
// [github.com/shardid/shardid/strategies]. A model without the tag is left
// exactly as GORM makes it.
//
// The logical shard of any ID is [Layout.Shard]: (id >> SequenceBits) &
// (2^ShardBits - 1). Errors are the sentinels of this package, tested with
// errors.Is; [FieldError] carries the model and field.
package shardid
