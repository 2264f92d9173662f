package shardmigrator

import (
	"fmt"

	"gorm.io/gorm"
)

// sameTable fails when physical database name's handle (db) parsed value's
// table under another name than the plugin's database did: each handle
// keeps the first name a model's TableName() gave it, and the plugin's
// statements use the plugin's database's, so a table made under the other
// would be one no statement reads.
func (m Migrator) sameTable(db *gorm.DB, name string, value any) error {
	there, here := &gorm.Statement{DB: db}, &gorm.Statement{DB: m.db}
	if there.Parse(value) != nil || here.Parse(value) != nil || there.Schema.Table == here.Schema.Table {
		return nil // a value that is no model fails elsewhere, with its own error
	}
	return fmt.Errorf("%w: %s's handle names the table of %T %q, the plugin's database's %q, which the plugin's statements use: "+
		"a TableName() whose answer changed after the model's first use, or a Shard.DB with another NamingStrategy (GORM keeps each handle's first answer); nothing was changed",
		ErrShardsDisagree, name, value, there.Schema.Table, here.Schema.Table)
}

// sameTables is sameTable for every model on every physical database
// (only's alone when given), asked before a migration changes anything.
func (m Migrator) sameTables(models []any, only any, restricted bool) error {
	for k, name := range m.plugin.Physical() {
		if restricted && name != only {
			continue
		}
		tx, err := m.physicalSession(k)
		if err != nil {
			return err
		}
		for _, value := range models {
			if err := m.sameTable(tx, name, value); err != nil {
				return err
			}
		}
	}
	return nil
}
