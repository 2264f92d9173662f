package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"gorm.io/gorm"
)

// MariaDB's UUID type orders a UUID whose seventh byte is 0x01 to 0x5F
// (versions 1 to 5, and 0 but the nil UUID's) and whose ninth has its top
// bit set (variants 10x, 110, 111) by its segments from last to first, as it
// stores it (nnnnnnnnnnnn-vsss-Vhhh-mmmm-llllllll), and any other by its
// bytes: the merge orders the key of such a column the same way.

// mariadbUUIDKey reports whether column of table is of MariaDB's UUID type,
// on a server that orders it as mariadbUUIDOrder does: releases before
// 10.10.6 and 10.11.5 swapped other UUIDs too, by rules that changed
// between them, and are refused.
func mariadbUUIDKey(ctx context.Context, pool gorm.ConnPool, parts []string, column string) (bool, error) {
	var dataType, version string
	where, args := mysqlColumn(parts, column)
	err := pool.QueryRowContext(ctx, "SELECT DATA_TYPE, VERSION() FROM information_schema.COLUMNS WHERE "+where, args...).Scan(&dataType, &version)
	if err != nil || !strings.EqualFold(dataType, "uuid") {
		return false, err
	}
	if !uuidOrderedBySegmentsOfRFCVersionsOnly(version) {
		return true, fmt.Errorf("%w: ORDER BY a key of MariaDB's UUID type over several physical databases: MariaDB %s orders UUIDs by a rule of its own release, which the merge does not reproduce (it does that of 10.10.6, 10.11.5 and later)", ErrCrossShard, version)
	}
	return true, nil
}

// uuidOrderedBySegmentsOfRFCVersionsOnly reports whether a MariaDB version
// (as VERSION() gives it) orders UUIDs as mariadbUUIDOrder does.
func uuidOrderedBySegmentsOfRFCVersionsOnly(version string) bool {
	var n [3]int
	for i, part := range strings.SplitN(strings.SplitN(version, "-", 2)[0], ".", 3) {
		n[i], _ = strconv.Atoi(part)
	}
	switch {
	case n[0] != 10:
		return n[0] > 10
	case n[1] == 10:
		return n[2] >= 6
	case n[1] == 11:
		return n[2] >= 5
	}
	return n[1] > 11
}

// mariadbUUIDOrder maps a UUID's order value onto the order of its stored form.
func mariadbUUIDOrder(v orderValue) orderValue {
	var u, stored [16]byte
	binary.BigEndian.PutUint64(u[:8], uint64(v.hi)^signBit)
	binary.BigEndian.PutUint64(u[8:], v.lo)
	if u[6] < 0x01 || u[6] > 0x5F || u[8]&0x80 == 0 {
		return v
	}
	copy(stored[0:6], u[10:16])
	copy(stored[6:8], u[8:10])
	copy(stored[8:10], u[6:8])
	copy(stored[10:12], u[4:6])
	copy(stored[12:16], u[0:4])
	return orderValue{hi: int64(binary.BigEndian.Uint64(stored[:8]) ^ signBit), lo: binary.BigEndian.Uint64(stored[8:])}
}
