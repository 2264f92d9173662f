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

// LooseKey returns the string a hash key tagged collation:loose is hashed as,
// so that keys its column finds equal share a shard: the key's compatibility
// decomposition without accents, case-folded, with æ, œ, ø, ł, đ, ħ, ŧ and ı
// spelled as Unicode collation compares them, every character beyond the
// Basic Multilingual Plane as one, katakana as hiragana, without the
// characters collation ignores and without trailing spaces.
// ByKey(LooseKey(k)) names the shard of such a key.
func LooseKey(key string) string { return engine.LooseKey(key) }
