package shardrouter

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

var (
	keyedUsers  = Keyed{Table: "users", Key: "id"}
	keyedPhotos = Keyed{Table: "photos", Key: "id", Colocate: "user_id"}
)

func shardedByTable(table string) (Keyed, bool) {
	for _, k := range []Keyed{keyedUsers, keyedPhotos} {
		if strings.EqualFold(k.Table, table) {
			return k, true
		}
	}
	return Keyed{}, false
}

// TestColocatedJoin has a row per rule of "Joins and SQL in conditions" in
// docs/routing.md for a join written as SQL.
func TestColocatedJoin(t *testing.T) {
	for name, c := range map[string]struct {
		from Keyed
		sql  string
		want bool
	}{
		"the photos of a user":                 {keyedUsers, "JOIN photos ON photos.user_id = users.id", true},
		"the user of a photo":                  {keyedPhotos, "JOIN users ON users.id = photos.user_id", true},
		"quoted, aliased, the sides swapped":   {keyedPhotos, "LEFT JOIN `users` AS u ON `photos`.`user_id` = `u`.`id`", true},
		"not along the colocate column":        {keyedPhotos, "JOIN users ON users.id = photos.id", false},
		"a table the plugin does not know":     {keyedPhotos, "JOIN albums ON albums.id = photos.user_id", false},
		"a self join":                          {keyedPhotos, "JOIN photos p ON p.user_id = photos.id", false},
		"two equalities":                       {keyedUsers, "JOIN photos ON photos.user_id = users.id AND photos.id = 1", false},
		"the equality in parentheses":          {keyedPhotos, "JOIN users ON ( users.id = photos.user_id )", true},
		"two equalities in parentheses":        {keyedUsers, "JOIN photos ON (photos.user_id = users.id AND photos.id = 1)", false},
		"parentheses around part of it":        {keyedUsers, "JOIN photos ON (photos.user_id = users.id) OR (1 = 1)", false},
		"a right join, which keeps unmatched":  {keyedPhotos, "RIGHT JOIN users ON users.id = photos.user_id", false},
		"one side names neither table":         {keyedUsers, "JOIN photos ON photos.user_id = other.id", false},
		"tables named with their schema":       {Keyed{Table: "app.photos", Key: "id", Colocate: "user_id"}, `JOIN "app"."users" ON "app"."users".id = app.photos.user_id`, true},
		"a schema on the joined table only":    {Keyed{Table: "app.users", Key: "id"}, "JOIN app.photos p ON p.user_id = users.id", true},
		"a self join across schemas":           {Keyed{Table: "app.photos", Key: "id", Colocate: "user_id"}, "JOIN other.photos p ON p.user_id = app.photos.id", false},
		"a schema-named side off the colocate": {Keyed{Table: "app.photos", Key: "id", Colocate: "user_id"}, "JOIN app.users ON app.users.id = app.photos.id", false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := ColocatedJoin(c.from, c.sql, shardedByTable); got != c.want {
				t.Fatalf("ColocatedJoin = %v, want %v", got, c.want)
			}
		})
	}
}

// TestJoinTableJoin: a many2many join table joins along its owner's key, or
// is read as any other sharded table.
func TestJoinTableJoin(t *testing.T) {
	for sql, want := range map[string]bool{
		"JOIN user_groups ON user_groups.user_id = users.id":       true,
		"JOIN user_groups ON (user_groups.user_id = users.id)":     true,
		"LEFT JOIN user_groups ug ON users.id = ug.user_id":        true,
		"JOIN user_groups ug ON ug.group_id = users.id":            false,
		"JOIN user_groups ug ON ug.group_id = 1":                   false,
		"CROSS JOIN user_groups ug":                                false,
		"JOIN user_groups ON user_groups.user_id = users.other_id": false,
	} {
		if got := JoinTableJoin(keyedUsers, "user_groups", "user_id", sql); got != want {
			t.Errorf("%q: %v, want %v", sql, got, want)
		}
	}
	// Tables of a schema (GORM's TablePrefix "app."), qualified or not in the SQL.
	for sql, want := range map[string]bool{
		"JOIN app.user_groups ON app.user_groups.user_id = app.users.id": true,
		`JOIN "app"."user_groups" ug ON ug.user_id = users.id`:           true,
		"JOIN app.user_groups ug ON ug.group_id = app.users.id":          false,
	} {
		if got := JoinTableJoin(Keyed{Table: "app.users", Key: "id"}, "app.user_groups", "user_id", sql); got != want {
			t.Errorf("%q: %v, want %v", sql, got, want)
		}
	}
}

func TestCheckSQLTables(t *testing.T) {
	sharded := func(table string) bool { _, ok := shardedByTable(table); return ok }
	for name, c := range map[string]struct {
		tables  []string
		clause  bool
		refusal SQLTableRefusal
	}{
		"a sharded table without a clause":        {tables: []string{"photos"}, refusal: ShardedWithoutClause},
		"a sharded table with a one-shard clause": {tables: []string{"photos"}, clause: true},
		"an unsharded table":                      {tables: []string{"countries"}, clause: true, refusal: NotSharded},
		"the first table that refuses":            {tables: []string{"photos", "countries"}, clause: true, refusal: NotSharded},
	} {
		t.Run(name, func(t *testing.T) {
			if _, refusal := CheckSQLTables(c.tables, sharded, c.clause); refusal != c.refusal {
				t.Fatalf("refusal %d, want %d", refusal, c.refusal)
			}
		})
	}
}

func TestConditionSQLFindsSubqueriesAtAnyDepth(t *testing.T) {
	exprs := []clause.Expression{
		clause.Expr{SQL: "name = ?"},
		clause.AndConditions{Exprs: []clause.Expression{clause.Expr{SQL: "id IN (SELECT id FROM users)"}}},
		clause.NotConditions{Exprs: []clause.Expression{clause.NamedExpr{SQL: "EXISTS (select 1 FROM photos)"}}},
	}
	if got := ConditionSQL(exprs); !slices.Equal(got, []string{"id IN (SELECT id FROM users)", "EXISTS (select 1 FROM photos)"}) {
		t.Fatalf("ConditionSQL = %q", got)
	}
}

type joinUser struct {
	ID     int64
	Photos []joinPhoto `gorm:"foreignKey:UserID"`
}

type joinPhoto struct {
	ID     int64
	UserID int64
	User   *joinUser
	Likes  []joinLike `gorm:"foreignKey:PhotoID"`
}

type joinLike struct {
	ID      int64
	PhotoID int64
}

func TestColocatedAlong(t *testing.T) {
	cache := &sync.Map{}
	users, err := schema.Parse(&joinUser{}, cache, schema.NamingStrategy{})
	if err != nil {
		t.Fatal(err)
	}
	photos, err := schema.Parse(&joinPhoto{}, cache, schema.NamingStrategy{})
	if err != nil {
		t.Fatal(err)
	}
	likes, err := schema.Parse(&joinLike{}, cache, schema.NamingStrategy{})
	if err != nil {
		t.Fatal(err)
	}
	userKey, photoKey, photoUser := users.LookUpField("ID"), photos.LookUpField("ID"), photos.LookUpField("UserID")
	if !ColocatedAlong(photos.Relationships.Relations["User"], photoKey, photoUser, userKey, nil) {
		t.Error("a photo belongs to its user along its colocate column")
	}
	if !ColocatedAlong(users.Relationships.Relations["Photos"], userKey, nil, photoKey, photoUser) {
		t.Error("a user has its photos along their colocate column")
	}
	if ColocatedAlong(photos.Relationships.Relations["Likes"], photoKey, photoUser, likes.LookUpField("ID"), nil) {
		t.Error("likes without a colocate column are not beside their photo")
	}
	if ColocatedAlong(photos.Relationships.Relations["User"], nil, nil, userKey, nil) {
		t.Error("an unsharded model is beside nothing")
	}
	if path, ok := RelationPath(photos, "User.Photos"); !ok || len(path) != 2 {
		t.Errorf("RelationPath(User.Photos) = %v, %v", path, ok)
	}
	if _, ok := RelationPath(photos, "Album"); ok {
		t.Error("RelationPath found a relationship photos do not have")
	}
}
