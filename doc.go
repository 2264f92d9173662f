// Package shardid is a GORM plugin that gives every row of a tagged model a
// 64-bit, time-ordered primary key carrying the row's logical shard, before
// the row is inserted.
//
// Register it once, and tag the ID fields:
//
//	ids := shardid.New(shardid.Config{})
//	db.Use(ids)
//	ids.AutoMigrate(db, &User{}, &Photo{}) // sharded tables on every physical database
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
// The tag is `shardid:"strategy:NAME;colocate:Field;hash:Field;collation:loose"`,
// every part optional (collation:loose with hash only, for a column that
// compares loosely: see LooseKey). The strategies are "instagram" (the default: the sequence and the
// time come from the database the row is written to), "snowflake"
// (in-process, with a worker ID leased from each database), "segment" (blocks
// of a counter in each database), "ticket" (ticket servers behind consistent
// hashing) and, for string or [16]byte fields, "uuidv7" and "uuidv4"; see
// package [github.com/shardid/shardid/strategies]. [Plugin.Stats] reports
// their counters. A model without the tag is left exactly as GORM makes it.
//
// With [Config].Shards, the logical shards are spread over several physical
// databases and every statement on a sharded model (one whose primary key is
// tagged) goes to the database of its shard: by the IDs in its conditions, by
// a clause ([OnShard], [ByID], [ByKey], [AllShards]), or, inside a transaction
// begun with a clause, to that transaction's database. A statement whose shard
// cannot be known fails with [ErrNoShard]; one that would leave its
// transaction's database fails with [ErrCrossShard]. [Plugin.Migrator] and
// [Plugin.AutoMigrate] migrate sharded models on every physical database;
// db.Dialector, db.Migrator() and db.AutoMigrate stay GORM's own.
//
// The logical shard of any ID is [Layout.Shard]: (id >> SequenceBits) &
// (2^ShardBits - 1). Errors are the sentinels of this package, tested with
// errors.Is; [FieldError] carries the model and field.
package shardid
