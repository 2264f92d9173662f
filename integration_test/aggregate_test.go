package integration

import (
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// ledgerEntry is the model of the aggregate suite: integers, a nullable
// integer, an exact decimal, text and a time, spread over four databases.
type ledgerEntry struct {
	ID      int64     `shardid:""`
	Account int64     `gorm:"not null"`
	Units   int64     `gorm:"not null"`
	Rating  *int64    // NULL in some rows
	Amount  *string   `gorm:"type:decimal(12,2)"` // NULL in some rows
	Region  string    `gorm:"size:16;not null"`   // a locale's collation: MariaDB's default, ICU's root on PostgreSQL
	Code    string    `gorm:"size:16;not null"`   // a collation that compares bytes (binaryCollation)
	At      time.Time `gorm:"not null"`
}

// aggregates holds the ledger twice: over the plugin's four physical
// databases, and in one database without the plugin (the reference).
type aggregates struct {
	*twin
	b backend
}

func newAggregates(t *testing.T, b backend) *aggregates {
	t.Helper()
	rng := rand.New(rand.NewPCG(18, 18))
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var entries []ledgerEntry
	var place []int
	for i := range 80 {
		e := ledgerEntry{Account: int64(rng.IntN(9) + 1), Units: int64(rng.IntN(1000) - 200), Region: []string{"north", "South", "east"}[rng.IntN(3)],
			Code: []string{"Alpha", "alpha", "beta", "Beta", "gamma", "Gamma"}[rng.IntN(6)],
			At:   base.Add(time.Duration(rng.IntN(100000)) * time.Second)}
		if rng.IntN(4) > 0 {
			rating := int64(rng.IntN(5) + 1)
			e.Rating = &rating
		}
		if b.name != "sqlite" && rng.IntN(5) > 0 { // SQLite keeps no exact decimals
			amount := fmt.Sprintf("%d.%02d", rng.IntN(5000)-1000, rng.IntN(100))
			e.Amount = &amount
		}
		entries, place = append(entries, e), append(place, i*physicalShards/80)
	}
	collation := func(db *gorm.DB) {
		binaryCollation(t, b, db, "ledger_entries", "code")
		if b.name == "postgres" { // a locale's order, as MariaDB's default is
			must(t, db.Exec(`ALTER TABLE ledger_entries ALTER COLUMN region TYPE varchar(16) COLLATE "und-x-icu"`).Error)
		}
	}
	return &aggregates{twin: newTwin(t, b, &ledgerEntry{}, collation, entries, place), b: b}
}

// binaryCollation gives column a collation that compares as bytes do,
// where the dialect's default does not.
func binaryCollation(t *testing.T, b backend, db *gorm.DB, table, column string) {
	t.Helper()
	switch b.name {
	case "mariadb":
		must(t, db.Exec(fmt.Sprintf("ALTER TABLE %s MODIFY %s varchar(16) COLLATE utf8mb4_bin NOT NULL", table, column)).Error)
	case "postgres":
		must(t, db.Exec(fmt.Sprintf(`ALTER TABLE %s ALTER COLUMN %s TYPE varchar(16) COLLATE "C"`, table, column)).Error)
	}
}

// same runs query on one database and over four, and fails unless both
// return the same rows in the same order with the same types.
func (a *aggregates) same(t *testing.T, name string, query func(db *gorm.DB, into any) error, into func() any) {
	t.Helper()
	a.twin.same(t, name, func(db *gorm.DB, into any) *gorm.DB {
		db.Error = query(db, into)
		return db
	}, into)
}

// show prints a result with the Go type of every value.
func show(v any) string {
	rows, ok := reflect.ValueOf(v).Elem().Interface().([]map[string]any)
	if !ok {
		return fmt.Sprintf("%#v", reflect.ValueOf(v).Elem().Interface())
	}
	var out string
	for _, row := range rows {
		keys := make([]string, 0, len(row))
		for k := range row {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out += "{"
		for _, k := range keys {
			value := row[k]
			if b, ok := value.([]byte); ok {
				value = string(b) + " (bytes)"
			}
			out += fmt.Sprintf("%s: %v (%T), ", k, value, row[k])
		}
		out += "} "
	}
	return out
}

func rowMaps() any { return &[]map[string]any{} }
func number() any  { return new(int64) }

// TestAggregatesMergeAsOneDatabase: each merged form over four databases
// returns what one database without the plugin returns.
func TestAggregatesMergeAsOneDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		a := newAggregates(t, b)
		scan := func(sel string) func(db *gorm.DB, into any) error {
			return func(db *gorm.DB, into any) error { return db.Select(sel).Scan(into).Error }
		}
		a.same(t, "count(*) into a number", scan("count(*)"), number)
		a.same(t, "count(1) into a number", scan("count(1)"), number)
		a.same(t, "sum of an integer into a number", scan("sum(units)"), number)
		a.same(t, "count, sum, min, max, avg of an integer", scan("count(*) AS n, sum(units) AS s, min(units) AS lo, max(units) AS hi, avg(units) AS mean"), rowMaps)
		a.same(t, "aggregates of a nullable integer", scan("count(rating) AS n, sum(rating) AS s, avg(rating) AS mean, min(rating) AS lo"), rowMaps)
		a.same(t, "aggregates named by the database", scan("count(*), max(units)"), rowMaps)
		a.same(t, "min and max of a time", scan("min(at) AS first, max(at) AS last"), rowMaps)
		a.same(t, "GROUP BY with count(1)", func(db *gorm.DB, into any) error {
			return db.Select("account, count(1) AS n").Group("account").Order("account").Find(into).Error
		}, rowMaps)
		a.same(t, "GROUP BY with ORDER BY the group", func(db *gorm.DB, into any) error {
			return db.Select("account, count(*) AS n, sum(units) AS total, avg(units) AS mean").Group("account").Order("account").Find(into).Error
		}, rowMaps)
		a.same(t, "GROUP BY, HAVING, ORDER BY an aggregate, LIMIT and OFFSET", func(db *gorm.DB, into any) error {
			return db.Select("account, sum(units) AS total").Group("account").Having("count(*) > ?", 5).
				Order("total desc, account").Limit(4).Offset(1).Find(into).Error
		}, rowMaps)
		a.same(t, "HAVING and ORDER BY an aggregate not selected", func(db *gorm.DB, into any) error {
			return db.Select("account").Group("account").Having("max(units) >= 500 AND min(units) < ?", 100).Order("sum(units), account").Find(into).Error
		}, rowMaps)
		a.same(t, "GROUP BY a nullable column, NULLs where the dialect puts them", func(db *gorm.DB, into any) error {
			return db.Select("rating, count(*) AS n").Group("rating").Order("rating").Find(into).Error
		}, rowMaps)
		a.same(t, "GROUP BY a nullable column, descending", func(db *gorm.DB, into any) error {
			return db.Select("rating, count(*) AS n").Group("rating").Order("rating desc").Find(into).Error
		}, rowMaps)
		a.same(t, "GROUP BY into structs", func(db *gorm.DB, into any) error {
			return db.Select("account, count(*) AS n, max(at) AS last").Group("account").Order("n desc, account").Scan(into).Error
		}, func() any {
			return &[]struct {
				Account int64
				N       int64
				Last    string // SQLite's is text
			}{}
		})
		a.same(t, "Count of a grouped query: its number of groups", func(db *gorm.DB, into any) error {
			return db.Group("account").Count(into.(*int64)).Error
		}, number)
		a.same(t, "DISTINCT values", func(db *gorm.DB, into any) error {
			return db.Distinct("account").Order("account desc").Find(into).Error
		}, func() any { return &[]int64{} })
		a.same(t, "DISTINCT pairs", func(db *gorm.DB, into any) error {
			return db.Distinct("account", "rating").Order("account, rating").Find(into).Error
		}, rowMaps)
		a.same(t, "COUNT(DISTINCT) of a nullable column counts no NULL", scan("count(distinct rating) AS ratings"), rowMaps)
		a.same(t, "Count of DISTINCT values", func(db *gorm.DB, into any) error {
			return db.Distinct("account").Count(into.(*int64)).Error
		}, number)
		a.same(t, "Pluck of DISTINCT values", func(db *gorm.DB, into any) error {
			return db.Distinct().Order("account").Pluck("account", into).Error
		}, func() any { return &[]int64{} })
		a.same(t, "GROUP BY text of a binary collation", func(db *gorm.DB, into any) error {
			return db.Select("code, count(*) AS n, min(units) AS lo").Group("code").Order("code desc").Find(into).Error
		}, rowMaps)
		a.same(t, "DISTINCT text of a binary collation", func(db *gorm.DB, into any) error {
			return db.Distinct("code").Order("code").Find(into).Error
		}, func() any { return &[]string{} })
		a.same(t, "MIN and MAX of text of a binary collation", scan("min(code) AS lo, max(code) AS hi"), rowMaps)
		if b.name != "sqlite" {
			a.same(t, "aggregates of a decimal keep its type and scale", scan("sum(amount) AS s, avg(amount) AS mean, min(amount) AS lo, max(amount) AS hi, count(amount) AS n"), rowMaps)
			a.same(t, "decimal aggregates per group", func(db *gorm.DB, into any) error {
				return db.Select("account, sum(amount) AS s, avg(amount) AS mean").Group("account").Having("sum(amount) > ?", 0).Order("account").Find(into).Error
			}, rowMaps)
		}
	})
}

// TestAggregateRowsAndRow: Rows and Row of a merged query read as one
// database's.
func TestAggregateRowsAndRow(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		a := newAggregates(t, b)
		read := func(db *gorm.DB) ([][2]int64, int64, int64) {
			rows, err := db.Model(&ledgerEntry{}).Select("account, count(*)").Group("account").Order("account").Rows()
			must(t, err)
			defer rows.Close()
			var groups [][2]int64
			for rows.Next() {
				var g [2]int64
				must(t, rows.Scan(&g[0], &g[1]))
				groups = append(groups, g)
			}
			must(t, rows.Err())
			var n, total sql.NullInt64
			must(t, db.Model(&ledgerEntry{}).Select("count(*), sum(units)").Row().Scan(&n, &total))
			return groups, n.Int64, total.Int64
		}
		wantGroups, wantN, wantTotal := read(a.one)
		gotGroups, gotN, gotTotal := read(a.sharded)
		if !reflect.DeepEqual(wantGroups, gotGroups) || wantN != gotN || wantTotal != gotTotal {
			t.Errorf("one database: %v %d %d; four: %v %d %d", wantGroups, wantN, wantTotal, gotGroups, gotN, gotTotal)
		}
	})
}

// TestAggregatesNotExactAreRefused: what the merge cannot make equal to one
// database's answer fails with ErrCrossShard and says why.
func TestAggregatesNotExactAreRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		a := newAggregates(t, b)
		for name, query := range map[string]func(db *gorm.DB) error{
			"an expression over aggregates": func(db *gorm.DB) error { var n int64; return db.Select("sum(units) * 2").Scan(&n).Error },
			"GROUP_CONCAT-like functions": func(db *gorm.DB) error {
				var rows []map[string]any
				return db.Select("account, max(lower(region))").Group("account").Find(&rows).Error
			},
			"a column neither grouped nor aggregated": func(db *gorm.DB) error {
				var rows []map[string]any
				return db.Select("account, units").Group("account").Find(&rows).Error
			},
			"HAVING on something other than a comparison": func(db *gorm.DB) error {
				var rows []map[string]any
				return db.Select("account").Group("account").Having("count(*) BETWEEN 1 AND 3").Find(&rows).Error
			},
		} {
			err := query(a.sharded.Model(&ledgerEntry{}))
			if !errors.Is(err, shardid.ErrCrossShard) {
				t.Errorf("%s: %v, want ErrCrossShard", name, err)
			}
		}
		// Text of a locale's collation: case-insensitive on MariaDB, ICU's
		// root on PostgreSQL; SQLite's BINARY compares bytes.
		var regions []string
		err := a.sharded.Model(&ledgerEntry{}).Distinct("region").Order("region").Find(&regions).Error
		if b.name == "sqlite" {
			must(t, err)
			if !slices.Equal(regions, []string{"South", "east", "north"}) {
				t.Errorf("DISTINCT region on SQLite: %q", regions)
			}
			return
		}
		collation := map[string]string{"mariadb": "utf8mb4_general_ci", "postgres": "und-x-icu"}[b.name]
		if !errors.Is(err, shardid.ErrCrossShard) || !strings.Contains(err.Error(), collation) {
			t.Errorf("DISTINCT region ORDER BY region: %v, want ErrCrossShard naming %s", err, collation)
		}
		if b.name == "postgres" { // a deterministic collation groups as bytes: DISTINCT without ORDER BY merges
			var want []string
			must(t, a.one.Model(&ledgerEntry{}).Distinct("region").Find(&want).Error)
			regions = nil
			must(t, a.sharded.Model(&ledgerEntry{}).Distinct("region").Find(&regions).Error)
			slices.Sort(want)
			slices.Sort(regions)
			if !slices.Equal(want, regions) {
				t.Errorf("DISTINCT region: one database %q, four %q", want, regions)
			}
		}
	})
}

// TestOrderByAnyColumnMergesAsOneDatabase: rows over four databases ordered
// by a nullable column (NULLs where the dialect puts them), several
// columns, descending, or text of a collation that compares bytes, named
// by the table's alias too, come in the order one database gives; text of
// another collation is refused, naming it.
func TestOrderByAnyColumnMergesAsOneDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		a := newAggregates(t, b)
		entries := func() any { return &[]ledgerEntry{} }
		for _, order := range []string{"rating, id", "rating desc, units, id", "code, at desc, id", "units desc, id"} {
			a.same(t, "ORDER BY "+order, func(db *gorm.DB, into any) error { return db.Order(order).Find(into).Error }, entries)
			a.same(t, "ORDER BY "+order+" LIMIT 7 OFFSET 9", func(db *gorm.DB, into any) error {
				return db.Order(order).Limit(7).Offset(9).Find(into).Error
			}, entries)
		}
		a.same(t, "ORDER BY the table's alias", func(db *gorm.DB, into any) error {
			return db.Table("ledger_entries AS e").Order("e.code, e.at desc").Find(into).Error
		}, entries)
		var rows []ledgerEntry
		err := a.sharded.Order("region, id").Find(&rows).Error
		if b.name == "sqlite" {
			must(t, err) // BINARY
			return
		}
		collation := map[string]string{"mariadb": "utf8mb4_general_ci", "postgres": "und-x-icu"}[b.name]
		if !errors.Is(err, shardid.ErrCrossShard) || !strings.Contains(err.Error(), collation) {
			t.Errorf("ORDER BY region: %v, want ErrCrossShard naming %s", err, collation)
		}
	})
}
