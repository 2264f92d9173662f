package strategies

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/google/uuid"
)

// UUIDs makes version 7 and version 4 UUIDs (RFC 9562) with google/uuid and
// writes the logical shard into the low ShardBits of their random part, so
// that a row keyed by a UUID routes like one keyed by an int64 ID. Version 7
// UUIDs are monotonic within a millisecond (google/uuid's 12-bit sub-
// millisecond counter, process-wide), which the shard bits below it leave
// intact; the random bits left are 62-ShardBits (v7) and 122-ShardBits (v4).
// A UUIDs is safe for concurrent use.
type UUIDs struct {
	shardMask uint64
	v7, v4    atomic.Uint64 // issued
}

// NewUUIDs returns the UUID maker for layout.
func NewUUIDs(layout Layout) (*UUIDs, error) {
	l := layout.Normalized()
	if l.ShardBits > 48 {
		return nil, fmt.Errorf("%w: %d shard bits do not fit the random bits of a UUID (at most 48)", ErrInvalidLayout, l.ShardBits)
	}
	return &UUIDs{shardMask: 1<<l.ShardBits - 1}, nil
}

// Stats reports the UUIDs of version made so far; UUIDs never wait.
func (u *UUIDs) Stats(version int) Stats {
	if version == 7 {
		return Stats{Issued: u.v7.Load()}
	}
	return Stats{Issued: u.v4.Load()}
}

// New returns a UUID of version 7 or 4 in logical shard shard (taken modulo
// the shard count).
func (u *UUIDs) New(version int, shard int) (uuid.UUID, error) {
	var id uuid.UUID
	var err error
	switch version {
	case 7:
		id, err = uuid.NewV7()
	case 4:
		id, err = uuid.NewRandom()
	default:
		return id, fmt.Errorf("strategies: UUID version %d (7 or 4)", version)
	}
	if err != nil {
		return id, err
	}
	if version == 7 {
		u.v7.Add(1)
	} else {
		u.v4.Add(1)
	}
	low := binary.BigEndian.Uint64(id[8:])
	binary.BigEndian.PutUint64(id[8:], low&^u.shardMask|uint64(shard)&u.shardMask)
	return id, nil
}

// Shard returns the logical shard written into id by New.
func (u *UUIDs) Shard(id uuid.UUID) int {
	return int(binary.BigEndian.Uint64(id[8:]) & u.shardMask)
}
