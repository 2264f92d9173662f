package shardid

import "github.com/shardid/shardid/internal/engine"

// TagName is the struct tag that marks a field as a shardid ID:
//
//	ID int64 `shardid:"strategy:snowflake;colocate:UserID"`
const TagName = engine.TagName

// HashKey returns the hash that the tag option hash:Field uses: FNV-1a 64 of
// the key's canonical bytes. A string hashes as its UTF-8 bytes, a []byte as
// itself, any signed integer as its int64 value in 8 big-endian bytes, any
// unsigned integer as its uint64 value likewise, and a [16]byte (such as
// uuid.UUID) as its 16 bytes. The key's logical shard is
// HashKey(key) % ShardCount.
func HashKey(key any) (uint64, error) { return engine.HashKey(key) }
