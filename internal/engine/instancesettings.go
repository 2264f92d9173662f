package engine

import (
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// keepInstanceSettings lets the hooks of part, a copy of statement made to
// run on one database, read with InstanceGet what InstanceSet gave the
// statement: GORM keys such settings by the statement's address, which the
// copy does not share.
func keepInstanceSettings(statement, part *gorm.Statement) {
	from, to := fmt.Sprintf("%p", statement), fmt.Sprintf("%p", part)
	if from == to {
		return
	}
	part.Settings.Range(func(k, v any) bool {
		if key, ok := k.(string); ok && strings.HasPrefix(key, from) {
			part.Settings.Store(to+key[len(from):], v)
		}
		return true
	})
}
