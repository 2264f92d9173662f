package shardrouter

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

type mergedPhoto struct {
	ID      int64
	Likes   int       `gorm:"not null"`
	Taken   time.Time `gorm:"not null"`
	Views   int       // may be NULL
	Caption string    `gorm:"not null"`
	Price   string    `gorm:"type:decimal(10,2)"`
	Blob    []byte
	Amount  float64    `gorm:"type:decimal(30,4)"` // read rounded
	Ext     int64      `gorm:"type:varchar(20)"`   // digits ordered as text by the database
	Rank    int64      `gorm:"type:bigint unsigned"`
	Weight  float64    `gorm:"type:double precision"`
	Level   namedLevel `gorm:"not null"` // stored as its name, read back as its number
	Code    rot13      `gorm:"not null"` // stored encoded, read back decoded
	Owner   ownID      `gorm:"not null"` // stored as its number
	Status  status     `gorm:"not null"` // stored as it is; its Value refuses other labels
	Shout   upper      `gorm:"not null"` // stored upper-cased, read back as stored
}

// namedLevel is stored as its name: "zeta" for 1, "alpha" for 2.
type namedLevel int

func (l namedLevel) Value() (driver.Value, error) {
	return [...]string{"none", "zeta", "alpha"}[l%3], nil
}
func (l *namedLevel) Scan(v any) error {
	*l = namedLevel(map[string]int{"zeta": 1, "alpha": 2}[fmt.Sprint(v)])
	return nil
}

// rot13 is text stored encoded.
type rot13 string

func (r rot13) Value() (driver.Value, error) { return rotate(string(r)), nil }
func (r *rot13) Scan(v any) error            { *r = rot13(rotate(fmt.Sprint(v))); return nil }

func rotate(s string) string {
	return strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' {
			return 'a' + (c-'a'+13)%26
		}
		return c
	}, s)
}

// ownID is stored as the number it holds.
type ownID int64

func (id ownID) Value() (driver.Value, error) { return int64(id), nil }
func (id *ownID) Scan(v any) error {
	n, ok := v.(int64)
	*id = ownID(n)
	if !ok {
		return fmt.Errorf("not an int64: %v", v)
	}
	return nil
}

// status is stored as it is, and its Value refuses a label it does not know.
type status string

func (s status) Value() (driver.Value, error) {
	if s != "open" && s != "closed" {
		return nil, fmt.Errorf("unknown status %q", string(s))
	}
	return string(s), nil
}
func (s *status) Scan(v any) error { *s = status(fmt.Sprint(v)); return nil }

// upper is stored upper-cased, and read back as stored (it has no Scan).
type upper string

func (u upper) Value() (driver.Value, error) { return strings.ToUpper(string(u)), nil }

func photoSchema(t *testing.T) *schema.Schema {
	t.Helper()
	s, err := schema.Parse(&mergedPhoto{}, &sync.Map{}, schema.NamingStrategy{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func orderBy(columns ...clause.OrderByColumn) map[string]clause.Clause {
	return map[string]clause.Clause{"ORDER BY": {Expression: clause.OrderBy{Columns: columns}}}
}

// plucked is the clauses of a Pluck of column, ordered by order.
func plucked(column string, order clause.OrderByColumn) map[string]clause.Clause {
	c := orderBy(order)
	c["SELECT"] = clause.Clause{Expression: clause.Select{Columns: []clause.Column{{Name: column}}}}
	return c
}

func byName(name string, desc bool) clause.OrderByColumn {
	return clause.OrderByColumn{Column: clause.Column{Name: name, Raw: true}, Desc: desc}
}

// TestPlanMerge has a row per merge rule of "Every shard at once" in
// docs/routing.md: what is merged, how, and what is refused.
func TestPlanMerge(t *testing.T) {
	s := photoSchema(t)
	rows, one := reflect.TypeOf([]mergedPhoto{}), reflect.TypeOf(mergedPhoto{})
	count := map[string]clause.Clause{"SELECT": {Expression: clause.Expr{SQL: "count(*)"}}}
	limit := 10
	for name, c := range map[string]struct {
		q       Query
		order   string // the merge's order: columns, "desc" marks, "+key" for the tie-breaking key; "" none
		count   bool
		grouped bool   // merged group by group (aggregate_test.go has their rules)
		refused string // a part of the refusal; "" when merged
	}{
		"plain columns, one database after another": {q: Query{Dest: rows, Selects: []string{"id, likes AS n, photos.caption"}}},
		"a struct destination reads the first row":  {q: Query{Dest: one}},
		"a plain Count is summed":                   {q: Query{Dest: reflect.TypeOf(int64(0)), Clauses: count}, count: true},
		"count(column) is summed": {q: Query{Dest: reflect.TypeOf(int64(0)), Clauses: map[string]clause.Clause{
			"SELECT": {Expression: clause.Expr{SQL: "count(?)", Vars: []any{clause.Column{Name: "id"}}}}}}, count: true},
		"a count with LIMIT, which keeps or drops its one row": {q: Query{Dest: reflect.TypeOf(int64(0)), Clauses: map[string]clause.Clause{
			"SELECT": count["SELECT"], "LIMIT": {Expression: clause.Limit{Limit: &limit, Offset: 1}}}}, count: true},
		"another number than a count": {q: Query{Dest: reflect.TypeOf(0.0), Clauses: map[string]clause.Clause{
			"SELECT": {Expression: clause.Expr{SQL: "sum(likes)"}}}}, grouped: true},
		"a number of an expression": {q: Query{Dest: reflect.TypeOf(0.0), Clauses: map[string]clause.Clause{
			"SELECT": {Expression: clause.Expr{SQL: "sum(likes) + 1"}}}}, refused: `the select item "sum(likes) + 1"`},
		"ORDER BY the key": {q: Query{Dest: rows, Clauses: orderBy(byName("id", true))}, order: "id desc"},
		"ORDER BY a NOT NULL integer, the key breaks ties":              {q: Query{Dest: rows, Clauses: orderBy(byName("likes", false))}, order: "likes +key"},
		"ORDER BY a NOT NULL time and the key":                          {q: Query{Dest: rows, Clauses: orderBy(byName("taken desc, id", false))}, order: "taken desc, id"},
		"ORDER BY the key as a column":                                  {q: Query{Dest: rows, Clauses: orderBy(clause.OrderByColumn{Column: clause.Column{Name: "id"}, Desc: true})}, order: "id desc"},
		"ORDER BY raw text, DESC after it":                              {q: Query{Dest: rows, Clauses: orderBy(byName("likes, taken", true))}, order: "likes, taken desc +key"},
		"ORDER BY raw text with its own direction, DESC after it":       {q: Query{Dest: rows, Clauses: orderBy(byName("id asc", true))}, refused: `"id asc" DESC`},
		"ORDER BY into maps":                                            {q: Query{Dest: reflect.TypeOf([]map[string]any{}), Clauses: orderBy(byName("id", false))}, order: "id"},
		"ORDER BY a nullable column, NULLs where the dialect puts them": {q: Query{Dest: rows, Clauses: orderBy(byName("views", false))}, order: "views +key"},
		"ORDER BY text, by a collation read when it runs":               {q: Query{Dest: rows, Clauses: orderBy(byName("caption desc, likes", false))}, order: "caption (text) desc, likes +key"},
		"ORDER BY a type whose Value stores another value":              {q: Query{Dest: rows, Clauses: orderBy(byName("level", false))}, refused: "level: the merge orders"},
		"ORDER BY text whose Value stores it encoded":                   {q: Query{Dest: rows, Clauses: orderBy(byName("code", false))}, refused: "code: the merge orders"},
		"ORDER BY a type whose Value stores the number it holds":        {q: Query{Dest: rows, Clauses: orderBy(byName("owner", false))}, order: "owner +key"},
		"ORDER BY a type whose Value refuses some values":               {q: Query{Dest: rows, Clauses: orderBy(byName("status", false))}, order: "status (text) +key"},
		"ORDER BY a type read back as stored, whatever its Value":       {q: Query{Dest: rows, Clauses: orderBy(byName("shout", false))}, order: "shout (text) +key"},
		"ORDER BY an exact decimal held in a string":                    {q: Query{Dest: rows, Clauses: orderBy(byName("price", false))}, refused: "price: the merge orders"},
		"ORDER BY a decimal read into a float":                          {q: Query{Dest: rows, Clauses: orderBy(byName("amount", false))}, refused: "amount: the merge orders"},
		"ORDER BY digits in text read into an integer":                  {q: Query{Dest: rows, Clauses: orderBy(byName("ext", false))}, refused: "from a column of type varchar(20)"},
		"ORDER BY an integer column declared with its type":             {q: Query{Dest: rows, Clauses: orderBy(byName("rank", false))}, order: "rank +key"},
		"ORDER BY a float column declared with its type":                {q: Query{Dest: rows, Clauses: orderBy(byName("weight", false))}, order: "weight +key"},
		"ORDER BY bytes":                         {q: Query{Dest: rows, Clauses: orderBy(byName("blob", false))}, refused: "blob: the merge orders"},
		"ORDER BY an expression":                 {q: Query{Dest: rows, Clauses: orderBy(byName("likes * 2", false))}, refused: `right: "likes * 2"`},
		"ORDER BY another table's column":        {q: Query{Dest: rows, Clauses: orderBy(byName("users.id", false))}, refused: "users.id: a column of another table"},
		"ORDER BY a column of the table's alias": {q: Query{Dest: rows, Table: "p", Clauses: orderBy(byName("p.likes desc", false))}, order: "likes desc +key"},
		"ORDER BY a column of another alias":     {q: Query{Dest: rows, Table: "p", Clauses: orderBy(byName("u.likes", false))}, refused: "u.likes: a column of another table"},
		"ORDER BY a column not selected":         {q: Query{Dest: rows, Selects: []string{"id"}, Clauses: orderBy(byName("likes", false))}, refused: "likes: the column is not selected"},
		"ORDER BY a column that a joined table's column of its name is selected as":  {q: Query{Dest: rows, Joined: true, Selects: []string{"merged_photos.id, users.likes"}, Clauses: orderBy(byName("likes", false))}, refused: "likes: the select list gives the column's name to another value"},
		"ORDER BY the table's column, a joined table's column of its name selected":  {q: Query{Dest: rows, Joined: true, Selects: []string{"merged_photos.id, users.likes AS likes"}, Clauses: orderBy(byName("merged_photos.likes", false))}, refused: "likes: the database orders by the table's column"},
		"ORDER BY the table's own qualified column beside a joined table's other":    {q: Query{Dest: rows, Joined: true, Selects: []string{"merged_photos.id, merged_photos.likes, users.views AS seen"}, Clauses: orderBy(byName("likes", false))}, order: "likes +key"},
		"ORDER BY a column, a joined table's key selected: ties in the parts' order": {q: Query{Dest: rows, Joined: true, Selects: []string{"merged_photos.likes, users.id"}, Clauses: orderBy(byName("likes", false))}, order: "likes"},
		"ORDER BY into rows of another type":                                         {q: Query{Dest: reflect.TypeOf([]struct{ ID int64 }{}), Clauses: orderBy(byName("id", false))}, refused: "into rows of"},
		"ORDER BY a column, the key not selected: ties in the parts' order":          {q: Query{Dest: rows, Selects: []string{"likes, views"}, Clauses: orderBy(byName("likes", false))}, order: "likes"},
		"Pluck of the column it is ordered by":                                       {q: Query{Dest: reflect.TypeOf([]int{}), Clauses: plucked("likes", byName("likes desc", false))}, order: "likes desc"},
		"Pluck of the key, ordered by it":                                            {q: Query{Dest: reflect.TypeOf([]int64{}), Clauses: plucked("id", byName("id", false))}, order: "id"},
		"Pluck of a time ordered by it":                                              {q: Query{Dest: reflect.TypeOf([]time.Time{}), Clauses: plucked("taken", byName("taken", false))}, order: "taken"},
		"Pluck into a database/sql Null wrapper of its kind":                         {q: Query{Dest: reflect.TypeOf([]sql.NullInt64{}), Clauses: plucked("likes", byName("likes", false))}, order: "likes"},
		"Pluck into sql.Null[T] of its kind":                                         {q: Query{Dest: reflect.TypeOf([]*sql.Null[int32]{}), Clauses: plucked("likes", byName("likes", false))}, order: "likes"},
		"Pluck of a number into text, which orders otherwise":                        {q: Query{Dest: reflect.TypeOf([]string{}), Clauses: plucked("likes", byName("likes", false))}, refused: "into rows of string"},
		"Pluck of a time into text":                                                  {q: Query{Dest: reflect.TypeOf([]string{}), Clauses: plucked("taken", byName("taken", false))}, refused: "into rows of string"},
		"Pluck of text into a Null wrapper of a number":                              {q: Query{Dest: reflect.TypeOf([]sql.NullInt64{}), Clauses: plucked("caption", byName("caption", false))}, refused: "into rows of sql.NullInt64"},
		"Pluck of a number into a float":                                             {q: Query{Dest: reflect.TypeOf([]float64{}), Clauses: plucked("likes", byName("likes", false))}, refused: "into rows of float64"},
		"ORDER BY a position in the select list":                                     {q: Query{Dest: rows, Selects: []string{"id, likes"}, Clauses: orderBy(byName("2 desc", false))}, refused: "2: a position in the select list"},
		"Pluck of another column than it is ordered by":                              {q: Query{Dest: reflect.TypeOf([]string{}), Clauses: plucked("caption", byName("likes", false))}, refused: "likes: the column is not selected"},
		"Pluck of a column ordered by it and another":                                {q: Query{Dest: reflect.TypeOf([]int{}), Selects: []string{"likes", "views"}, Clauses: plucked("likes", byName("likes", false))}, refused: "into rows of int"},
		"DISTINCT rows with the key: one database after another":                     {q: Query{Dest: rows, Distinct: true}},
		"DISTINCT values": {q: Query{Dest: rows, Distinct: true, Selects: []string{"likes"}}, grouped: true},
		"DISTINCT written in Select: distinct values":            {q: Query{Dest: rows, Selects: []string{"DISTINCT likes"}}, grouped: true},
		"DISTINCT written in Select over lines: distinct values": {q: Query{Dest: rows, Selects: []string{" distinct\n likes, views"}}, grouped: true},
		"DISTINCT written in a Pluck's column: distinct values": {q: Query{Dest: reflect.TypeOf([]int{}), Clauses: map[string]clause.Clause{
			"SELECT": {Expression: clause.Select{Columns: []clause.Column{{Name: "DISTINCT likes", Raw: true}}}}}}, grouped: true},
		"DISTINCT written with the key: one database after another":        {q: Query{Dest: rows, Selects: []string{"DISTINCT id, likes"}}},
		"DISTINCT written in the first of Select's items: distinct values": {q: Query{Dest: rows, Selects: []string{"DISTINCT likes", "views"}}, grouped: true},
		"DISTINCT ON is no DISTINCT":                                       {q: Query{Dest: rows, Selects: []string{"DISTINCT ON (owner) owner, likes"}}, refused: "DISTINCT ON (owner)"},
		"DISTINCTROW is no DISTINCT":                                       {q: Query{Dest: rows, Selects: []string{"DISTINCTROW likes"}}, refused: "DISTINCTROW likes"},
		"a Count beside DISTINCT written in Select counts every row":       {q: Query{Dest: reflect.TypeOf(int64(0)), Selects: []string{"DISTINCT likes"}, Clauses: count}, count: true},
		"GROUP BY without columns":                                         {q: Query{Dest: rows, Clauses: map[string]clause.Clause{"GROUP BY": {}}}, refused: "HAVING without GROUP BY"},
		"an aggregate in the select list":                                  {q: Query{Dest: rows, Selects: []string{"max(likes)"}}, grouped: true},
		"a function the merge does not know":                               {q: Query{Dest: rows, Selects: []string{"lower(caption)"}}, refused: `the select item "lower(caption)"`},
		"a subquery in a condition's SQL": {q: Query{Dest: rows, Clauses: map[string]clause.Clause{"WHERE": {Expression: clause.Where{Exprs: []clause.Expression{
			clause.Expr{SQL: "id IN (SELECT photo_id FROM likes)"}}}}}}, refused: "a subquery in a condition's SQL"},
		"a table expression":                  {q: Query{Dest: rows, TableExpr: &clause.Expr{SQL: "(SELECT * FROM photos) p"}}, refused: "a table expression"},
		"a destination that is not a pointer": {q: Query{}, refused: "needs a pointer destination"},
		"a destination that cannot be merged": {q: Query{Dest: reflect.TypeOf("")}, refused: "cannot be merged into a string"},
	} {
		t.Run(name, func(t *testing.T) {
			c.q.Schema, c.q.Key = s, s.PrioritizedPrimaryField
			merge := PlanMerge(c.q)
			if c.refused != "" {
				if !strings.Contains(merge.Refused, c.refused) {
					t.Fatalf("refused %q, want it to say %q", merge.Refused, c.refused)
				}
				return
			}
			if merge.Refused != "" {
				t.Fatalf("refused: %s", merge.Refused)
			}
			if (merge.Aggregate != nil) != c.grouped {
				t.Fatalf("merged group by group: %v, want %v", merge.Aggregate != nil, c.grouped)
			}
			if merge.Count != c.count {
				t.Fatalf("count %v, want %v", merge.Count, c.count)
			}
			var order []string
			if merge.Order != nil {
				for _, col := range merge.Order.Columns {
					item := col.Field.DBName
					if col.Text {
						item += " (text)"
					}
					if col.Desc {
						item += " desc"
					}
					order = append(order, item)
				}
				if merge.Order.TieKey {
					order[len(order)-1] += " +key"
				}
			}
			if got := strings.Join(order, ", "); got != c.order {
				t.Fatalf("order %q, want %q", got, c.order)
			}
		})
	}
}

// TestADistinctWrittenBesideGORMsDistinctIsLeftAsWritten: Distinct() and a
// select list that starts with DISTINCT send DISTINCT twice, the database's
// error on one database as on several: the merge does not read one of them
// away, so each part sends the select list as written.
func TestADistinctWrittenBesideGORMsDistinctIsLeftAsWritten(t *testing.T) {
	s := photoSchema(t)
	for name, q := range map[string]Query{
		"Select": {Dest: reflect.TypeOf([]mergedPhoto{}), Distinct: true, Selects: []string{"DISTINCT likes"}},
		"Pluck": {Dest: reflect.TypeOf([]int{}), Clauses: map[string]clause.Clause{
			"SELECT": {Expression: clause.Select{Distinct: true, Columns: []clause.Column{{Name: "DISTINCT likes", Raw: true}}}}}},
	} {
		q.Schema, q.Key = s, s.PrioritizedPrimaryField
		merge := PlanMerge(q)
		if merge.Refused == "" && (merge.Aggregate == nil || len(merge.Aggregate.Items) == 0 || merge.Aggregate.Items[0].SQL != "DISTINCT likes") {
			t.Errorf("%s: the parts select %+v, want the list as written", name, merge.Aggregate)
		}
	}
}

func TestPlanMergeWindowsTheMergedRows(t *testing.T) {
	s := photoSchema(t)
	limit := 20
	merge := PlanMerge(Query{Schema: s, Key: s.PrioritizedPrimaryField, Dest: reflect.TypeOf([]mergedPhoto{}),
		Clauses: map[string]clause.Clause{"LIMIT": {Expression: clause.Limit{Limit: &limit, Offset: 40}}}})
	if merge.Refused != "" || !merge.Limited || merge.Limit != 20 || merge.Offset != 40 {
		t.Fatalf("merge %+v", merge)
	}
}

// TestPlanMergeOrdersByTheTablesColumnQualifiedWithoutItsSchema: a select
// item qualified by the model's table without the schema its TableName
// gives (widgets.n of app.widgets) is the table's own column, ordered by
// as one; another table's column of that name is not.
func TestPlanMergeOrdersByTheTablesColumnQualifiedWithoutItsSchema(t *testing.T) {
	s := *photoSchema(t)
	s.Table = "app.merged_photos"
	rows := reflect.TypeOf([]mergedPhoto{})
	own := PlanMerge(Query{Schema: &s, Key: s.PrioritizedPrimaryField, Table: s.Table, Dest: rows, Joined: true,
		Selects: []string{"merged_photos.id, merged_photos.likes"}, Clauses: orderBy(byName("likes", false))})
	if own.Refused != "" || own.Order == nil || !own.Order.TieKey {
		t.Fatalf("ordered by the table's likes, qualified without its schema: %+v", own)
	}
	other := PlanMerge(Query{Schema: &s, Key: s.PrioritizedPrimaryField, Table: s.Table, Dest: rows, Joined: true,
		Selects: []string{"merged_photos.id, users.likes"}, Clauses: orderBy(byName("likes", false))})
	if !strings.Contains(other.Refused, "gives the column's name to another value") {
		t.Fatalf("ordered by likes, another table's selected: refused %q", other.Refused)
	}
	distinct := PlanMerge(Query{Schema: &s, Key: s.PrioritizedPrimaryField, Table: s.Table, Dest: rows, Joined: true, Distinct: true,
		Selects: []string{"merged_photos.id, merged_photos.likes"}})
	if distinct.Refused != "" || distinct.Aggregate != nil {
		t.Fatalf("DISTINCT rows with the key qualified without the schema: %+v, want one database's rows after another's", distinct)
	}
}

// TestColumnsQualifiedByATableInASchema: a column of a model whose table
// is in a schema (app.users) is its own written as users.id,
// app.users.id or "app"."users"."id"; other.users.id is another table's.
func TestColumnsQualifiedByATableInASchema(t *testing.T) {
	for text, want := range map[string]bool{
		"id":                     true,
		"users.id":               true,
		"app.users.id":           true,
		`"app"."users"."id"`:     true,
		` "app" . users . "id" `: true,
		"other.users.id":         false,
		"app.other.id":           false,
		"x.app.users.id":         false,
	} {
		if _, ok := itemColumn(text, "app.users"); ok != want {
			t.Errorf("itemColumn(%q) of app.users: %v, want %v", text, ok, want)
		}
		if o, ok := parseOperand("max("+text+")", "app.users"); ok != want || ok && o.arg != "id" {
			t.Errorf("max(%s) of app.users: %+v %v, want %v", text, o, ok, want)
		}
	}
	// A table of no schema is not one of a schema named.
	if _, ok := itemColumn("app.users.id", "users"); ok {
		t.Errorf("app.users.id read as a column of users")
	}
}
