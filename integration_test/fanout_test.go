package integration

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// Models of the fan-out suite: a sharded diary whose hooks count the rows
// they ran for, with colocated pages.
type (
	diary struct {
		ID    int64 `shardid:""`
		Name  string
		Rank  int64 `gorm:"not null"`
		Pages []page
	}
	page struct {
		ID      int64 `shardid:"colocate:DiaryID"`
		DiaryID int64
		Text    string
	}
)

// hookCalls counts hook calls per row ID; parts run concurrently.
type hookCalls struct {
	mu    sync.Mutex // protects calls
	calls map[string]map[int64]int
}

var hooks hookCalls

func (h *hookCalls) add(hook string, id int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.calls[hook] == nil {
		h.calls[hook] = map[int64]int{}
	}
	h.calls[hook][id]++
}

// take returns the calls of hook since the last reset, and resets.
func (h *hookCalls) take(hook string) map[int64]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	calls := h.calls[hook]
	delete(h.calls, hook)
	if calls == nil {
		calls = map[int64]int{}
	}
	return calls
}

func (h *hookCalls) reset() {
	h.mu.Lock()
	h.calls = map[string]map[int64]int{}
	h.mu.Unlock()
}

func (d *diary) AfterFind(*gorm.DB) error    { hooks.add("diary.AfterFind", d.ID); return nil }
func (d *diary) BeforeDelete(*gorm.DB) error { hooks.add("diary.BeforeDelete", d.ID); return nil }
func (d *diary) BeforeUpdate(*gorm.DB) error { hooks.add("diary.BeforeUpdate", d.ID); return nil }
func (pg *page) AfterFind(*gorm.DB) error    { hooks.add("page.AfterFind", pg.ID); return nil }

// diaries creates n diaries one at a time (so that the databases' IDs
// interleave), with ranks that repeat and two pages each.
func (r *routing) diaries(t *testing.T, n int) []diary {
	t.Helper()
	fresh(t, r.db, &diary{}, &page{})
	all := make([]diary, n)
	for i := range all {
		all[i] = diary{Name: fmt.Sprintf("d%d", i), Rank: int64(i % 7), Pages: []page{{Text: "p1"}, {Text: "p2"}}}
		must(t, r.db.Create(&all[i]).Error)
	}
	hooks.reset()
	return all
}

// spanning returns n IDs of all taken from the physical databases in turn,
// so that they lie on as many databases as all does (at least three).
func (r *routing) spanning(t *testing.T, all []diary, n int) []int64 {
	t.Helper()
	byDatabase := make([][]int64, physicalShards)
	for _, d := range all {
		k := r.physicalOf(d.ID)
		byDatabase[k] = append(byDatabase[k], d.ID)
	}
	var ids []int64
	on := map[int]bool{}
	for round := 0; len(ids) < n && round < len(all); round++ {
		for k, list := range byDatabase {
			if round < len(list) && len(ids) < n {
				ids, on[k] = append(ids, list[round]), true
			}
		}
	}
	if len(on) < 3 || len(ids) < n {
		t.Fatalf("%d IDs on %d databases, want %d on at least 3", len(ids), len(on), n)
	}
	return ids
}

// statements records the IDs in the SQL of the statements on a table that
// reach a database, as GORM logs them: a fan-out's line holds each part's,
// after the part's database in brackets.
type statements struct {
	table string
	mu    sync.Mutex // protects ids
	ids   [][]int64
}

// idInSQL is an ID as the logged SQL shows it.
var idInSQL = regexp.MustCompile(`\b\d{15,19}\b`)

// partInLine begins a fan-out part's SQL in its statement's logged line.
var partInLine = regexp.MustCompile(`(?:^|; )\[[^\]]+\] `)

func (s *statements) LogMode(logger.LogLevel) logger.Interface { return s }
func (s *statements) Info(context.Context, string, ...any)     {}
func (s *statements) Warn(context.Context, string, ...any)     {}
func (s *statements) Error(context.Context, string, ...any)    {}
func (s *statements) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	line, _ := fc()
	for _, sql := range partInLine.Split(line, -1) {
		if !strings.Contains(sql, s.table) || strings.HasPrefix(strings.ToUpper(strings.TrimSpace(sql)), "INSERT") {
			continue
		}
		var ids []int64
		for _, text := range idInSQL.FindAllString(sql, -1) {
			id, _ := strconv.ParseInt(text, 10, 64)
			ids = append(ids, id)
		}
		s.mu.Lock()
		s.ids = append(s.ids, ids)
		s.mu.Unlock()
	}
}

// record returns the routing's database logging to a recorder of the
// statements on table.
func (r *routing) record(table string) (*gorm.DB, *statements) {
	s := &statements{table: table}
	return r.db.Session(&gorm.Session{Logger: s}), s
}

func (s *statements) take() [][]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.ids
	s.ids = nil
	return ids
}

// mustSplit fails unless the statements were one per physical database of
// ids, each carrying only the IDs of its own database, every ID once.
func (r *routing) mustSplit(t *testing.T, form string, parts [][]int64, ids []int64) {
	t.Helper()
	databases := map[int]bool{}
	for _, id := range ids {
		databases[r.physicalOf(id)] = true
	}
	if len(parts) != len(databases) {
		t.Fatalf("%s: %d statements for %d databases: %v", form, len(parts), len(databases), parts)
	}
	var all []int64
	for _, part := range parts {
		part = slices.Compact(slices.Sorted(slices.Values(part))) // a part's list may repeat its last ID, to share the others' SQL
		for _, id := range part {
			if r.physicalOf(id) != r.physicalOf(part[0]) {
				t.Fatalf("%s: a part carries IDs of two databases: %v", form, part)
			}
		}
		all = append(all, part...)
	}
	slices.Sort(all)
	want := slices.Sorted(slices.Values(ids))
	if !slices.Equal(all, want) {
		t.Fatalf("%s: the parts carry %v, want %v", form, all, want)
	}
}

// TestFanOutPartsCarryTheirOwnRows: each part of a fan-out asks its database
// only for the IDs it holds, and a write of rows given as a slice gives each
// part only its rows, so each row's hooks run once.
func TestFanOutPartsCarryTheirOwnRows(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		all := r.diaries(t, 40)
		ids := r.spanning(t, all, 10)
		db, rec := r.record("diaries")

		var found []diary
		must(t, db.Find(&found, ids).Error)
		r.mustSplit(t, "Find(&xs, ids)", rec.take(), ids)
		if len(found) != 10 {
			t.Fatalf("Find(&xs, ids): %d rows", len(found))
		}
		found = nil
		must(t, db.Where("id IN ?", ids).Find(&found).Error)
		r.mustSplit(t, `Where("id IN ?")`, rec.take(), ids)
		found = nil
		must(t, db.Where(clause.IN{Column: clause.Column{Name: "id"}, Values: []any{ids[0], ids[1], ids[2], ids[3], ids[4], ids[5], ids[6], ids[7], ids[8], ids[9]}}).Find(&found).Error)
		r.mustSplit(t, "clause.IN", rec.take(), ids)
		found = nil
		must(t, db.Where(map[string]any{"id": ids}).Find(&found).Error)
		r.mustSplit(t, "clause.Eq with a list", rec.take(), ids)
		if len(found) != 10 {
			t.Fatalf("clause.Eq with a list: %d rows", len(found))
		}
		hooks.take("diary.AfterFind")

		// Updates by IN list: once per database, each with its own IDs.
		must(t, db.Model(&diary{}).Where("id IN ?", ids[:5]).Update("name", "by list").Error)
		r.mustSplit(t, "Update by IN list", rec.take(), ids[:5])
		if calls := hooks.take("diary.BeforeUpdate"); len(calls) != 1 || calls[0] != 1 {
			t.Fatalf("BeforeUpdate of the model struct ran %v times, want once", calls)
		}

		// Rows given as a slice: each row's hooks once, every row written.
		rows := slices.Clone(all[10:30])
		must(t, r.db.Model(&rows).Update("name", "each once").Error)
		if calls := hooks.take("diary.BeforeUpdate"); len(calls) != len(rows) || slices.ContainsFunc(slices.Collect(mapValues(calls)), func(n int) bool { return n != 1 }) {
			t.Fatalf("BeforeUpdate over a slice: %v, want once for each of %d rows", calls, len(rows))
		}
		for _, d := range rows {
			var name string
			must(t, r.direct[r.physicalOf(d.ID)].Model(&diary{}).Where("id = ?", d.ID).Pluck("name", &name).Error)
			if name != "each once" {
				t.Fatalf("row %d is named %q after the update", d.ID, name)
			}
		}
		pointers := []*diary{&rows[0], &rows[1], &rows[2], &rows[3], &rows[4], &rows[5]}
		must(t, r.db.Delete(&pointers).Error)
		if calls := hooks.take("diary.BeforeDelete"); len(calls) != len(pointers) || slices.ContainsFunc(slices.Collect(mapValues(calls)), func(n int) bool { return n != 1 }) {
			t.Fatalf("BeforeDelete over a slice of pointers: %v, want once for each of %d rows", calls, len(pointers))
		}
		rest := rows[6:]
		must(t, r.db.Delete(&rest).Error)
		if calls := hooks.take("diary.BeforeDelete"); len(calls) != len(rest) || slices.ContainsFunc(slices.Collect(mapValues(calls)), func(n int) bool { return n != 1 }) {
			t.Fatalf("BeforeDelete over a slice: %v, want once for each of %d rows", calls, len(rest))
		}
		for _, d := range rows {
			if found := r.where(t, &diary{}, d.ID); len(found) != 0 {
				t.Fatalf("deleted row %d is still on %v", d.ID, found)
			}
		}
		// The rows of other databases are untouched by a part.
		var left int64
		for _, db := range r.direct {
			var n int64
			must(t, db.Model(&diary{}).Count(&n).Error)
			left += n
		}
		if left != int64(len(all)-len(rows)) {
			t.Fatalf("%d diaries left, want %d", left, len(all)-len(rows))
		}
	})
}

func mapValues(m map[int64]int) func(func(int) bool) {
	return func(yield func(int) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

// TestFanOutReturning: RETURNING over several databases gives the rows of
// every part, into the caller's slice.
func TestFanOutReturning(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		all := r.diaries(t, 40)
		ids := r.spanning(t, all, 12)
		idsOf := func(rows []diary) []int64 {
			var got []int64
			for _, d := range rows {
				got = append(got, d.ID)
			}
			slices.Sort(got)
			return got
		}
		want := func(ids []int64) []int64 { return slices.Sorted(slices.Values(ids)) }

		if b.name != "mariadb" { // MariaDB has DELETE ... RETURNING, not UPDATE ... RETURNING
			var updated []diary
			must(t, r.db.Model(&updated).Clauses(clause.Returning{}).Where("id IN ?", ids[:6]).Update("name", "returned").Error)
			if got := idsOf(updated); !slices.Equal(got, want(ids[:6])) {
				t.Fatalf("UPDATE ... RETURNING over several databases returned %v, want %v", got, want(ids[:6]))
			}
			for _, d := range updated {
				if d.Name != "returned" {
					t.Fatalf("a returned row is named %q", d.Name)
				}
			}
		}

		var deleted []diary
		must(t, r.db.Clauses(clause.Returning{}).Where("id IN ?", ids[:6]).Delete(&deleted).Error)
		if got := idsOf(deleted); !slices.Equal(got, want(ids[:6])) {
			t.Fatalf("DELETE ... RETURNING over several databases returned %v, want %v", got, want(ids[:6]))
		}
		for _, id := range ids[:6] {
			if found := r.where(t, &diary{}, id); len(found) != 0 {
				t.Fatalf("row %d was not deleted, it is on %v", id, found)
			}
		}
		// Rows given: each part deletes its own, and the caller's slice holds what came back.
		given := make([]diary, 0, 6)
		for _, d := range all {
			if slices.Contains(ids[6:], d.ID) {
				given = append(given, diary{ID: d.ID})
			}
		}
		must(t, r.db.Clauses(clause.Returning{}).Delete(&given).Error)
		if got := idsOf(given); !slices.Equal(got, want(ids[6:])) {
			t.Fatalf("Delete(&rows) RETURNING: %v, want %v", got, want(ids[6:]))
		}
		for _, d := range given {
			if d.Name == "" {
				t.Fatalf("Delete(&rows) RETURNING: row %d came back without its columns", d.ID)
			}
		}

		// Refused before anything runs: RETURNING rows of several databases into one struct.
		var untouched []diary
		for _, d := range all {
			if !slices.Contains(ids, d.ID) {
				untouched = append(untouched, d)
			}
		}
		rest := r.spanning(t, untouched, 20)
		var one diary
		if err := r.db.Clauses(clause.Returning{}).Where("id IN ?", rest).Delete(&one).Error; !errors.Is(err, shardid.ErrCrossShard) {
			t.Fatalf("RETURNING into one struct: got %v, want ErrCrossShard", err)
		}
		for _, id := range rest {
			if len(r.where(t, &diary{}, id)) != 1 {
				t.Fatalf("the refused delete removed row %d", id)
			}
		}

		// RETURNING some columns into an empty slice: GORM appends the
		// rows, as for every column.
		columns := clause.Returning{Columns: []clause.Column{{Name: "id"}, {Name: "name"}}}
		if b.name != "mariadb" {
			var renamed []diary
			must(t, r.db.Model(&renamed).Clauses(columns).Where("id IN ?", rest).Update("name", "some columns").Error)
			if got := idsOf(renamed); !slices.Equal(got, want(rest)) || renamed[0].Name != "some columns" {
				t.Fatalf("UPDATE ... RETURNING id, name over several databases returned %v, want %v", renamed, want(rest))
			}
		}
		var gone []diary
		must(t, r.db.Clauses(columns).Where("id IN ?", rest).Delete(&gone).Error)
		if got := idsOf(gone); !slices.Equal(got, want(rest)) || gone[0].Name == "" {
			t.Fatalf("DELETE ... RETURNING id, name over several databases returned %v, want %v", gone, want(rest))
		}
	})
}

// TestFanOutWriteWithLimitIsRefused: MySQL sends an update's or delete's
// LIMIT (GORM builds it there only), which each database would apply to its
// own rows: over several databases such a write is refused, and writes
// nothing. Where GORM does not send it, the write runs as without the plugin.
func TestFanOutWriteWithLimitIsRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		r.diaries(t, 20)
		all := r.db.Clauses(shardid.AllShards()).Session(&gorm.Session{})
		update := all.Model(&diary{}).Where("name <> ?", "limited").Order("id").Limit(3).Update("name", "limited")
		deleted := all.Where("name <> ?", "limited").Order("id").Limit(3).Delete(&diary{})
		if b.name != "mariadb" {
			must(t, update.Error)
			must(t, deleted.Error)
			return
		}
		for what, err := range map[string]error{"update": update.Error, "delete": deleted.Error} {
			if !errors.Is(err, shardid.ErrCrossShard) {
				t.Errorf("%s with LIMIT over several databases: %v, want ErrCrossShard", what, err)
			}
		}
		if n := r.count(t, &diary{}, "name = ?", "limited"); n != 0 {
			t.Errorf("the refused update wrote %d rows", n)
		}
		if n := r.count(t, &diary{}); n != 20 {
			t.Errorf("after the refused delete, %d rows of 20", n)
		}
	})
}

// TestFanOutMergeAllowlist: what a query over several databases may merge is
// an allowlist: plain columns, counts, the five aggregates, GROUP BY and
// HAVING, DISTINCT, the model's own columns in ORDER BY (text by a
// collation that compares bytes), LIMIT and OFFSET; the rest is refused.
// aggregate_test.go checks that what merges equals one database's answer.
func TestFanOutMergeAllowlist(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		diaries := r.diaries(t, 20)
		all := r.db.Clauses(shardid.AllShards()).Session(&gorm.Session{})
		var rows []diary
		var maps []map[string]any
		var n int64
		var ranks []int64
		unknown := "group_concat(name) AS n"
		if b.name == "postgres" {
			unknown = "string_agg(name, ',') AS n"
		}
		for form, tx := range map[string]*gorm.DB{
			"an aggregate the merge does not know": all.Model(&diary{}).Select(unknown).Find(&maps),
			"an expression over an aggregate":      all.Model(&diary{}).Select("sum(rank) + 1 AS n").Find(&maps),
			"a window function":                    all.Model(&diary{}).Select("count(*) over () AS n").Find(&maps),
			"a column and a window":                all.Model(&diary{}).Select("name, rank() over (order by id) AS r").Find(&maps),
			"a function of a column":               all.Model(&diary{}).Select("lower(name) AS name").Find(&rows),
			"an expression with values":            all.Model(&diary{}).Select("id + ? AS id", 1).Find(&maps),
			"an order on a joined table":           all.Joins("JOIN pages ON pages.diary_id = diaries.id").Order("pages.id desc").Limit(3).Find(&rows),
			"an order on an expression":            all.Order("length(name)").Find(&rows),
			"an order by clause.Expr":              all.Order(clause.OrderBy{Expression: clause.Expr{SQL: "rank * ?", Vars: []any{2}}}).Find(&rows),
			"a subquery in a condition":            all.Where("id IN (SELECT max(id) FROM diaries)").Find(&rows),
			"a derived table":                      all.Table("(SELECT * FROM diaries) AS diaries").Find(&rows),
			"an order on what is not selected":     all.Select("id, name").Order("rank").Limit(3).Find(&rows),
			"an order on what is omitted":          all.Omit("rank").Order("rank").Limit(3).Find(&rows),
		} {
			if !errors.Is(tx.Error, shardid.ErrCrossShard) {
				t.Errorf("%s: got %v, want ErrCrossShard", form, tx.Error)
			}
		}
		// Merged: a Pluck of the column it orders by, and ties without the
		// key, in the parts' order.
		var ids []int64
		for _, d := range diaries {
			ids = append(ids, d.ID)
		}
		slices.Sort(ids)
		must(t, all.Model(&diary{}).Order("id").Limit(3).Pluck("id", &ranks).Error)
		if !slices.Equal(ranks, ids[:3]) {
			t.Errorf("an ordered Pluck of the key: %v, want %v", ranks, ids[:3])
		}
		rows = nil
		must(t, all.Select("rank").Order("rank desc").Limit(4).Find(&rows).Error)
		if got := len(rows); got != 4 || rows[0].Rank != 6 || rows[1].Rank != 6 || rows[2].Rank != 5 || rows[3].Rank != 5 {
			t.Errorf("ties without the key selected: %+v, want ranks 6, 6, 5, 5", rows)
		}
		// Text orders by the column's collation: MariaDB's default and a
		// locale's on PostgreSQL do not compare bytes, SQLite's BINARY does.
		if b.name == "postgres" {
			for _, d := range r.direct {
				must(t, d.Exec(`ALTER TABLE diaries ALTER COLUMN name TYPE text COLLATE "und-x-icu"`).Error)
			}
		}
		if err := all.Order("name").Limit(3).Find(&rows).Error; errors.Is(err, shardid.ErrCrossShard) != (b.name != "sqlite") {
			t.Errorf("an order on text: %v", err)
		}
		// A count's one row, which LIMIT and OFFSET keep or drop.
		must(t, all.Model(&diary{}).Limit(3).Count(&n).Error)
		if n != int64(len(diaries)) {
			t.Errorf("Count with a limit: %d, want %d", n, len(diaries))
		}
		// What the allowlist lets through.
		for form, tx := range map[string]*gorm.DB{
			"an aggregate":              all.Model(&diary{}).Select("sum(rank) AS n").Find(&maps),
			"GROUP BY":                  all.Model(&diary{}).Select("rank").Group("rank").Find(&maps),
			"HAVING":                    all.Model(&diary{}).Select("rank").Group("rank").Having("count(*) > ?", 1).Find(&maps),
			"DISTINCT":                  all.Model(&diary{}).Distinct("rank").Find(&maps),
			"DISTINCT Pluck":            all.Model(&diary{}).Distinct().Pluck("rank", &ranks),
			"Count of DISTINCT":         all.Model(&diary{}).Distinct("rank").Count(&n),
			"Count with GROUP BY":       all.Model(&diary{}).Group("rank").Count(&n),
			"a maximum into a number":   all.Model(&diary{}).Select("max(id)").Find(&n),
			"plain columns":             all.Select("id, name").Order("id desc").Limit(3).Find(&rows),
			"qualified columns":         all.Select("diaries.id", "diaries.rank AS rank").Order("diaries.rank desc, id").Find(&rows),
			"a count":                   all.Model(&diary{}).Count(&n),
			"a count of a column":       all.Model(&diary{}).Select("name").Count(&n),
			"a NOT NULL integer order":  all.Order("rank").Offset(3).Limit(5).Find(&rows),
			"a join ordered by the key": all.Joins("JOIN pages ON pages.diary_id = diaries.id").Order("diaries.id").Limit(3).Find(&rows),
		} {
			if tx.Error != nil {
				t.Errorf("%s: %v", form, tx.Error)
			}
		}
		must(t, all.Model(&diary{}).Count(&n).Error)
		if n != 20 {
			t.Fatalf("AllShards Count = %d, want 20", n)
		}
	})
}

// TestFanOutMergeOrder: parts are merged in the query's order with OFFSET
// and LIMIT over the whole, exactly as a sort of all rows gives them, ties
// broken by the key.
func TestFanOutMergeOrder(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		all := r.diaries(t, 60)
		all2 := r.db.Clauses(shardid.AllShards()).Session(&gorm.Session{})
		byKey := func(a, b diary) int { return cmpInt(a.ID, b.ID) }
		cases := []struct {
			order  string
			cmp    func(a, b diary) int
			offset int
			limit  int
		}{
			{"id", byKey, 0, -1},
			{"id desc", func(a, b diary) int { return byKey(b, a) }, 7, 11},
			{"id", byKey, 55, 20},
			{"rank", func(a, b diary) int { return cmpOr(cmpInt(a.Rank, b.Rank), byKey(a, b)) }, 5, 17},
			{"rank desc, id desc", func(a, b diary) int { return cmpOr(cmpInt(b.Rank, a.Rank), byKey(b, a)) }, 0, 25},
			{"rank desc", func(a, b diary) int { return cmpOr(cmpInt(b.Rank, a.Rank), byKey(a, b)) }, 30, 30},
			{"diaries.rank, diaries.id desc", func(a, b diary) int { return cmpOr(cmpInt(a.Rank, b.Rank), byKey(b, a)) }, 1, 1},
		}
		for _, c := range cases {
			want := slices.Clone(all)
			slices.SortFunc(want, c.cmp)
			want = want[min(c.offset, len(want)):]
			if c.limit >= 0 {
				want = want[:min(c.limit, len(want))]
			}
			var got []diary
			q := all2.Order(c.order)
			if c.offset > 0 {
				q = q.Offset(c.offset)
			}
			if c.limit >= 0 {
				q = q.Limit(c.limit)
			}
			must(t, q.Find(&got).Error)
			if len(got) != len(want) {
				t.Fatalf("ORDER BY %s OFFSET %d LIMIT %d: %d rows, want %d", c.order, c.offset, c.limit, len(got), len(want))
			}
			for i := range want {
				if got[i].ID != want[i].ID {
					t.Fatalf("ORDER BY %s OFFSET %d LIMIT %d: row %d is %d, want %d", c.order, c.offset, c.limit, i, got[i].ID, want[i].ID)
				}
			}
		}
		// Into maps, and First/Last.
		sorted := slices.Clone(all)
		slices.SortFunc(sorted, byKey)
		var maps []map[string]any
		must(t, all2.Model(&diary{}).Order("id desc").Limit(3).Find(&maps).Error)
		if len(maps) != 3 || fmt.Sprint(maps[0]["id"]) != fmt.Sprint(sorted[59].ID) {
			t.Fatalf("maps in key order: %v", maps)
		}
		var last diary
		must(t, all2.Last(&last).Error)
		if last.ID != sorted[59].ID {
			t.Fatalf("Last = %d, want %d", last.ID, sorted[59].ID)
		}
	})
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// TestFanOutHooksOnReturnedRows: AfterFind and preloads run once, on the
// rows the merge returns, not on the rows each database sent.
func TestFanOutHooksOnReturnedRows(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		all := r.diaries(t, 30)
		sorted := slices.Clone(all)
		slices.SortFunc(sorted, func(a, b diary) int { return cmpInt(a.ID, b.ID) })
		db, rec := r.record("pages")

		var got []diary
		must(t, db.Clauses(shardid.AllShards()).Preload("Pages").Order("id").Limit(1).Find(&got).Error)
		if len(got) != 1 || got[0].ID != sorted[0].ID || len(got[0].Pages) != 2 {
			t.Fatalf("Order(id).Limit(1) with Preload: %+v", got)
		}
		if calls := hooks.take("diary.AfterFind"); len(calls) != 1 || calls[sorted[0].ID] != 1 {
			t.Fatalf("diary AfterFind ran for %v, want once for %d", calls, sorted[0].ID)
		}
		if calls := hooks.take("page.AfterFind"); len(calls) != 2 {
			t.Fatalf("page AfterFind ran for %v, want the returned diary's two pages", calls)
		}
		preloads := rec.take()
		if len(preloads) != 1 || len(preloads[0]) != 1 || preloads[0][0] != sorted[0].ID {
			t.Fatalf("the preload asked for %v, want only diary %d", preloads, sorted[0].ID)
		}

		// A page of rows: hooks and preloads for exactly those.
		got = nil
		must(t, r.db.Clauses(shardid.AllShards()).Preload("Pages").Order("id desc").Offset(4).Limit(5).Find(&got).Error)
		want := map[int64]int{}
		for _, d := range sorted[30-9 : 30-4] {
			want[d.ID] = 1
		}
		if calls := hooks.take("diary.AfterFind"); fmt.Sprint(calls) != fmt.Sprint(want) {
			t.Fatalf("diary AfterFind ran for %v, want %v", calls, want)
		}
		if calls := hooks.take("page.AfterFind"); len(calls) != 10 {
			t.Fatalf("page AfterFind ran for %d pages, want 10", len(calls))
		}
		for _, d := range got {
			if len(d.Pages) != 2 {
				t.Fatalf("diary %d has %d pages preloaded", d.ID, len(d.Pages))
			}
		}
		// First over all databases: one row, one hook.
		var first diary
		must(t, r.db.Clauses(shardid.AllShards()).First(&first).Error)
		if calls := hooks.take("diary.AfterFind"); len(calls) != 1 || calls[sorted[0].ID] != 1 || first.ID != sorted[0].ID {
			t.Fatalf("First: %d, AfterFind ran for %v", first.ID, calls)
		}
		// Nothing found: no hook, ErrRecordNotFound as on one database.
		err := r.db.Clauses(shardid.AllShards()).Where("name = ?", "nobody").First(&first).Error
		if !errors.Is(err, gorm.ErrRecordNotFound) || len(hooks.take("diary.AfterFind")) != 0 {
			t.Fatalf("First of nothing: %v", err)
		}
	})
}
