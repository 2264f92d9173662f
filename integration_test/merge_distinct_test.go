package integration

import (
	"errors"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shardid/shardid"
)

// TestDistinctOfAJoinedTablesKeyIsMergedByValue: DISTINCT rows whose "id"
// is a joined table's (NULL for every author without books) are not made
// distinct by the model's key: over several databases they are merged by
// value, as one database answers (one row), or refused (the merge knows the
// model's columns), never returned as one row per database.
func TestDistinctOfAJoinedTablesKeyIsMergedByValue(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		shardCount := r.plugin.Layout().ShardCount()
		for p := range physicalShards {
			must(t, r.db.Clauses(shardid.OnShard(p*shardCount/physicalShards)).Create(&author{Name: "ann"}).Error)
		}
		for name, query := range map[string]func(db *gorm.DB) *gorm.DB{
			"Distinct(books.id, authors.name)": func(db *gorm.DB) *gorm.DB { return db.Distinct("books.id", "authors.name") },
			"clause.Select of books' id": func(db *gorm.DB) *gorm.DB {
				return db.Clauses(clause.Select{Distinct: true, Columns: []clause.Column{{Table: "books", Name: "id"}, {Table: "authors", Name: "name"}}})
			},
		} {
			var rows []map[string]any
			db := r.db.Clauses(shardid.AllShards()).Model(&author{}).Joins("LEFT JOIN books ON books.author_id = authors.id")
			err := query(db).Find(&rows).Error
			if errors.Is(err, shardid.ErrCrossShard) {
				continue // another table's column: not merged by value
			}
			if err != nil || len(rows) != 1 {
				t.Errorf("%s: %v, %d rows %v; one database returns one row", name, err, len(rows), rows)
			}
		}
	})
}
