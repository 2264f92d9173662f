package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"gorm.io/gorm"
)

// MariaDB's UUID type orders a UUID of versions 1 to 5 (of RFC 4122's
// variant) by its segments from last to first, as it stores it
// (nnnnnnnnnnnn-vsss-Vhhh-mmmm-llllllll), and any other by its bytes: the
// merge orders the key of such a column the same way.

// mariadbUUIDKey reports whether column of table is of MariaDB's UUID type
// on a server that orders it as mariadbUUIDOrder does; an older one (before
// 10.10.3 and 10.11.2, which stored every UUID so) is refused.
func mariadbUUIDKey(ctx context.Context, pool gorm.ConnPool, table, column string) (bool, error) {
	var dataType, version string
	err := pool.QueryRowContext(ctx, "SELECT DATA_TYPE, VERSION() FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?", table, column).Scan(&dataType, &version)
	if err != nil || !strings.EqualFold(dataType, "uuid") {
		return false, err
	}
	if !uuidOrderedBySegmentsOfRFCVersionsOnly(version) {
		return true, fmt.Errorf("%w: MariaDB %s orders every UUID by its segments from last to first, which the merge does not reproduce: upgrade to 10.11.2 or later", ErrCrossShard, version)
	}
	return true, nil
}

// uuidOrderedBySegmentsOfRFCVersionsOnly reports whether a MariaDB version
// (as VERSION() gives it) swaps the segments of versions 1 to 5 only.
func uuidOrderedBySegmentsOfRFCVersionsOnly(version string) bool {
	var n [3]int
	for i, part := range strings.SplitN(strings.SplitN(version, "-", 2)[0], ".", 3) {
		n[i], _ = strconv.Atoi(part)
	}
	switch {
	case n[0] != 10:
		return n[0] > 10
	case n[1] == 10:
		return n[2] >= 3
	case n[1] == 11:
		return n[2] >= 2
	}
	return n[1] > 11
}

// mariadbUUIDOrder maps a UUID's order value onto the order of its stored form.
func mariadbUUIDOrder(v orderValue) orderValue {
	var u, stored [16]byte
	binary.BigEndian.PutUint64(u[:8], uint64(v.hi)^signBit)
	binary.BigEndian.PutUint64(u[8:], v.lo)
	if version := u[6] >> 4; version < 1 || version > 5 || u[8]&0xC0 != 0x80 {
		return v
	}
	copy(stored[0:6], u[10:16])
	copy(stored[6:8], u[8:10])
	copy(stored[8:10], u[6:8])
	copy(stored[10:12], u[4:6])
	copy(stored[12:16], u[0:4])
	return orderValue{hi: int64(binary.BigEndian.Uint64(stored[:8]) ^ signBit), lo: binary.BigEndian.Uint64(stored[8:])}
}
