package shardid

import (
	"fmt"
	"regexp"
	"strings"

	"gorm.io/gorm"
)

// tableAfterKeyword finds the tables a SQL text names after FROM, JOIN, INTO,
// UPDATE and TABLE, quoted or not, with or without a schema.
var tableAfterKeyword = regexp.MustCompile("(?i)\\b(?:from|join|into|update|table)\\s+(?:[`\"]?\\w+[`\"]?\\.)?[`\"]?(\\w+)")

// routeRaw routes raw SQL (db.Raw, db.Exec): to the shard its clause names,
// or else to the plugin's own database, which it refuses for SQL that names a
// sharded table.
func (p *Plugin) routeRaw(db *gorm.DB) error {
	stmt := db.Statement
	if v, ok := stmt.Settings.Load(hintSettingKey{}); ok {
		h := v.(shardHint)
		if h.kind == hintAll {
			return fmt.Errorf("%w: AllShards does not apply to raw SQL; run it with OnShard(n) once per shard", ErrNoShard)
		}
		s, err := p.hintShard(h)
		if err != nil {
			return err
		}
		return p.bind(db, p.physicalOf(s))
	}
	if inTransaction(stmt.ConnPool) {
		return nil // the transaction's database, chosen when it began
	}
	sql := stmt.SQL.String()
	for _, match := range tableAfterKeyword.FindAllStringSubmatch(sql, -1) {
		if model, ok := p.shardedTables.Load(strings.ToLower(match[1])); ok {
			return &FieldError{Model: model.(string), Field: "table " + match[1], Err: ErrNoShard,
				Detail: "raw SQL on a sharded table needs db.Clauses(shardid.ByID(id)), shardid.OnShard(n) or shardid.ByKey(key)"}
		}
	}
	return nil
}
