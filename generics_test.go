package shardid

import (
	"context"
	"errors"
	"slices"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Models of the tests of GORM's generics API (gorm.G).
type (
	genUser struct {
		ID   int64 `shardid:""`
		Name string
	}
	// genComment lives beside its user.
	genComment struct {
		ID     int64 `shardid:"colocate:UserID"`
		UserID int64
		User   genUser
		Body   string
	}
)

// TestAGenericsJoinOnASubqueryIsRefusedWithoutAShardClause: gorm.G's join on
// a subquery (clause.JoinTarget.AssociationFrom) is joined by GORM on the ON
// given alone, and its subquery runs on the statement's database only: a
// join not along the key, or along it on an aggregate of every database's
// rows, would read one database's answer. Without a one-shard clause it is
// refused, whether the statement is routed by an ID or over every shard;
// with one, it reads that database, as any statement under the clause does.
func TestAGenericsJoinOnASubqueryIsRefusedWithoutAShardClause(t *testing.T) {
	ctx := context.Background()
	db, p, _ := revRouted(t, &genUser{}, &genComment{})
	users := revOnBoth(t, db, p, func() *genUser { return &genUser{Name: "target"} }, func(u *genUser) int64 { return u.ID })
	comment := genComment{UserID: users[0].ID, Body: "target"}
	must(t, gorm.G[genComment](db).Omit("User").Create(ctx, &comment))

	byName := func(opts ...clause.Expression) ([]genComment, error) {
		return gorm.G[genComment](db, opts...).
			Joins(clause.LeftJoin.AssociationFrom("User", gorm.G[genUser](db).Select("id", "name")),
				func(jb gorm.JoinBuilder, joinTable, curTable clause.Table) error {
					jb.Where("?.name = ?.body", joinTable, curTable) // not along the colocate key
					return nil
				}).
			Where("gen_comments.id = ?", comment.ID).Find(ctx)
	}
	if got, err := byName(); !errors.Is(err, ErrCrossShard) {
		t.Errorf("a join on a subquery, routed by the comment's ID: %+v, %v; want ErrCrossShard", got, err)
	}
	alongKey := func(sub clause.Expression, opts ...clause.Expression) ([]genComment, error) {
		return gorm.G[genComment](db, opts...).
			Joins(clause.InnerJoin.AssociationFrom("User", sub), func(jb gorm.JoinBuilder, joinTable, curTable clause.Table) error {
				jb.Where("?.id = ?.user_id", joinTable, curTable)
				return nil
			}).Find(ctx)
	}
	newest := gorm.G[genUser](db).Select("max(id) AS id, name").Group("name") // of every database, in plain GORM
	if got, err := alongKey(newest, AllShards()); !errors.Is(err, ErrCrossShard) {
		t.Errorf("a join along the key on an aggregating subquery over every shard: %+v, %v; want ErrCrossShard", got, err)
	}
	got, err := alongKey(gorm.G[genUser](db).Select("id", "name"), OnShard(p.Layout().Shard(comment.ID)))
	if err != nil || len(got) != 1 || got[0].ID != comment.ID || got[0].User.ID != users[0].ID {
		t.Errorf("the join under a shard clause: %+v, %v; want the comment with its user, read on their database", got, err)
	}
}

// TestWithResultCountsTheRowsOfEveryDatabase: gorm.WithResult, given to a
// statement the plugin runs in parts over two databases, holds the rows of
// the whole statement, as of one statement on one database: a read's rows,
// an update's, a delete's and a split create's.
func TestWithResultCountsTheRowsOfEveryDatabase(t *testing.T) {
	ctx := context.Background()
	db, p, _ := revRouted(t, &revUser{})
	rows := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "x"} }, func(u *revUser) int64 { return u.ID })
	ids := []int64{rows[0].ID, rows[1].ID}
	counted := func(what string, res interface {
		RowsAffected() (int64, error)
	}, inStruct, want int64) {
		t.Helper()
		n, err := res.RowsAffected()
		if inStruct != want || err != nil || n != want {
			t.Errorf("%s: WithResult holds %d rows, its Result %d (%v); want %d", what, inStruct, n, err, want)
		}
	}

	res := gorm.WithResult()
	found, err := gorm.G[revUser](db, res).Where("id IN ?", ids).Find(ctx)
	must(t, err)
	if len(found) != 2 || res.RowsAffected != 2 {
		t.Errorf("Find over two databases: %d rows, WithResult %d; want 2", len(found), res.RowsAffected)
	}
	res = gorm.WithResult()
	n, err := gorm.G[revUser](db, res).Where("id IN ?", ids).Update(ctx, "name", "y")
	must(t, err)
	counted("Update over two databases", res.Result, res.RowsAffected, 2)
	if n != 2 {
		t.Errorf("Update over two databases returned %d, want 2", n)
	}
	batch := make([]revUser, 8)
	for i, id := range spreadIDs(p.Layout(), len(batch)) {
		batch[i] = revUser{ID: id, Name: "b"}
	}
	res = gorm.WithResult()
	must(t, gorm.G[revUser](db, res).CreateInBatches(ctx, &batch, 100))
	counted("a Create split over two databases", res.Result, res.RowsAffected, int64(len(batch)))
	res = gorm.WithResult()
	n, err = gorm.G[revUser](db, res).Where("id IN ?", ids).Delete(ctx)
	must(t, err)
	counted("Delete over two databases", res.Result, res.RowsAffected, 2)
	if n != 2 {
		t.Errorf("Delete over two databases returned %d, want 2", n)
	}
}

// TestWithResultHoldsTheErrorOfTheWholeStatement: a write the plugin runs in
// parts over two databases, one of which fails, leaves in gorm.WithResult the
// error the statement returns, as GORM does for one statement, not the raw
// error of the part that failed.
func TestWithResultHoldsTheErrorOfTheWholeStatement(t *testing.T) {
	ctx := context.Background()
	db, p, _ := revRouted(t, &revUser{})
	taken := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "x"} }, func(u *revUser) int64 { return u.ID })
	batch := []revUser{{ID: taken[0].ID + 1, Name: "new"}, {ID: taken[1].ID, Name: "taken"}} // the second's ID is in use on its database
	res := gorm.WithResult()
	err := gorm.G[revUser](db, res).CreateInBatches(ctx, &batch, 100)
	if err == nil || res.Error == nil || res.Error.Error() != err.Error() {
		t.Errorf("a Create over two databases, one part refused: returned %v, WithResult holds %v; want the same", err, res.Error)
	}
}

// TestGenericsStatementsGoWhereTheirShardIs: gorm.G's create, reads by ID,
// over every shard and under a shard clause given as an option, and its
// writes by ID run where the rows' shards are, as the chainable API's do.
func TestGenericsStatementsGoWhereTheirShardIs(t *testing.T) {
	ctx := context.Background()
	db, p, direct := revRouted(t, &revUser{})
	users := make([]revUser, 6)
	for i, id := range spreadIDs(p.Layout(), len(users)) {
		users[i] = revUser{ID: id, Name: "g"}
	}
	must(t, gorm.G[revUser](db).CreateInBatches(ctx, &users, 100))
	fresh := revUser{Name: "fresh"}
	must(t, gorm.G[revUser](db).Create(ctx, &fresh))
	for _, u := range append(users, fresh) {
		on := p.ShardMap().Physical(p.Layout().Shard(u.ID))
		for k, d := range direct {
			var n int64
			must(t, d.Model(&revUser{}).Where("id = ?", u.ID).Count(&n).Error)
			if (n == 1) != (k == on) {
				t.Errorf("user %d: %d rows on physical %d; its shard is on %d", u.ID, n, k, on)
			}
		}
	}
	ids := []int64{users[0].ID, users[5].ID} // on the two databases
	got, err := gorm.G[revUser](db).Where("id IN ?", ids).Order("id").Find(ctx)
	if err != nil || len(got) != 2 || got[0].ID != ids[0] || got[1].ID != ids[1] {
		t.Errorf("Find by IDs on two databases: %+v, %v", got, err)
	}
	if n, err := gorm.G[revUser](db, AllShards()).Where("name = ?", "g").Count(ctx, "*"); err != nil || n != int64(len(users)) {
		t.Errorf("Count over every shard: %d, %v; want %d", n, err, len(users))
	}
	onFirst := p.ShardMap().Physical(p.Layout().Shard(ids[0]))
	shardOfFirst := p.Layout().Shard(ids[0])
	if listed, err := gorm.G[revUser](db, OnShard(shardOfFirst)).Where("name = ?", "g").Find(ctx); err != nil ||
		len(listed) == 0 || slices.ContainsFunc(listed, func(u revUser) bool { return p.ShardMap().Physical(p.Layout().Shard(u.ID)) != onFirst }) {
		t.Errorf("Find under OnShard(%d): %+v, %v; want the rows of its database only", shardOfFirst, listed, err)
	}
	if _, err := gorm.G[revUser](db).Where("name = ?", "g").Find(ctx); !errors.Is(err, ErrNoShard) {
		t.Errorf("Find naming no shard: %v, want ErrNoShard", err)
	}
	if n, err := gorm.G[revUser](db).Where("id IN ?", ids).Update(ctx, "name", "h"); err != nil || n != 2 {
		t.Errorf("Update by IDs on two databases: %d, %v", n, err)
	}
	if n, err := gorm.G[revUser](db).Where("id IN ?", ids).Delete(ctx); err != nil || n != 2 {
		t.Errorf("Delete by IDs on two databases: %d, %v", n, err)
	}
}

// TestGenericsStatementsInAClausesTransactionNeedTheClauseAsAnOption:
// gorm.G(tx) starts each statement afresh, without the clause that began
// the transaction: one that names no shard is refused, not run on the
// transaction's database only, however many statements holding the clause
// ran before it; given the clause as an option, it runs there and rolls
// back with the transaction.
func TestGenericsStatementsInAClausesTransactionNeedTheClauseAsAnOption(t *testing.T) {
	ctx := context.Background()
	db, p, direct := revRouted(t, &revUser{})
	users := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "ann"} }, func(u *revUser) int64 { return u.ID })
	on := p.ShardMap().Physical(p.Layout().Shard(users[0].ID))
	var onItsDatabase int64
	must(t, direct[on].Model(&revUser{}).Where("name = ?", "ann").Count(&onItsDatabase).Error)
	err := db.Clauses(ByID(users[0].ID)).Transaction(func(tx *gorm.DB) error {
		var viaClause int64
		must(t, tx.Model(&revUser{}).Where("name = ?", "ann").Count(&viaClause).Error)
		if n, err := gorm.G[revUser](tx).Where("name = ?", "ann").Count(ctx, "*"); !errors.Is(err, ErrNoShard) {
			t.Errorf("gorm.G(tx).Count naming no shard: %d, %v; want ErrNoShard", n, err)
		}
		if n, err := gorm.G[revUser](tx, ByID(users[0].ID)).Where("name = ?", "ann").Count(ctx, "*"); err != nil || n != viaClause || n != onItsDatabase {
			t.Errorf("gorm.G(tx, ByID).Count: %d, %v; the clause's own statement %d, its database holds %d", n, err, viaClause, onItsDatabase)
		}
		if n, err := gorm.G[revUser](tx, ByID(users[0].ID)).Where("name = ?", "ann").Update(ctx, "name", "bob"); err != nil || int64(n) != onItsDatabase {
			t.Errorf("gorm.G(tx, ByID).Update: %d, %v; want %d", n, err, onItsDatabase)
		}
		return errors.New("roll back")
	})
	if err == nil || err.Error() != "roll back" {
		t.Fatalf("the transaction: %v", err)
	}
	for k, d := range direct {
		var renamed int64
		must(t, d.Model(&revUser{}).Where("name = ?", "bob").Count(&renamed).Error)
		if renamed != 0 {
			t.Errorf("physical %d holds %d rows the rolled back update renamed", k, renamed)
		}
	}
}

// genOwner's kids are placed by their own IDs, not beside it.
type (
	genOwner struct {
		ID   int64    `shardid:""`
		Kids []genKid `gorm:"foreignKey:OwnerID"`
	}
	genKid struct {
		ID      int64 `shardid:""`
		OwnerID int64
	}
)

// TestAPreloadInAClausesTransactionIsNotReadOnItsDatabaseOnly: a preload
// GORM makes for a statement in a transaction a clause began names no
// shard of its own, and its rows are on every database: it is refused, not
// read on the transaction's database.
func TestAPreloadInAClausesTransactionIsNotReadOnItsDatabaseOnly(t *testing.T) {
	db, p, _ := revRouted(t, &genOwner{}, &genKid{})
	owner := genOwner{}
	must(t, db.Create(&owner).Error)
	kids := make([]genKid, 8)
	for i, id := range spreadIDs(p.Layout(), len(kids)) {
		kids[i] = genKid{ID: id, OwnerID: owner.ID}
	}
	must(t, db.Create(&kids).Error)
	var read genOwner
	err := db.Clauses(ByID(owner.ID)).Transaction(func(tx *gorm.DB) error {
		return tx.Preload("Kids").First(&read, owner.ID).Error
	})
	if !errors.Is(err, ErrNoShard) {
		t.Errorf("a preload of kids on both databases, in the owner's clause's transaction: %d kids, %v; want ErrNoShard", len(read.Kids), err)
	}
}

// TestAGenericsPreloadTakesAShardClauseAsACondition: gorm.G's PreloadBuilder
// has no Clauses, so a preload of children on other databases than their
// owner's is given its shard clause as a condition (pb.Where(AllShards())):
// it reads what the chainable API's Preload given the clause reads. A
// clause given as any statement's condition routes it as db.Clauses does,
// and adds nothing to its SQL: a delete given only it has no condition.
func TestAGenericsPreloadTakesAShardClauseAsACondition(t *testing.T) {
	ctx := context.Background()
	db, p, direct := revRouted(t, &genOwner{}, &genKid{})
	owner := genOwner{}
	must(t, db.Create(&owner).Error)
	kids := make([]genKid, 8)
	for i, id := range spreadIDs(p.Layout(), len(kids)) {
		kids[i] = genKid{ID: id, OwnerID: owner.ID}
	}
	must(t, db.Create(&kids).Error)
	ids := func(ks []genKid) (out []int64) {
		for _, k := range ks {
			out = append(out, k.ID)
		}
		return out
	}

	read, err := gorm.G[genOwner](db).Where("id = ?", owner.ID).
		Preload("Kids", func(pb gorm.PreloadBuilder) error { pb.Where(AllShards()); return nil }).First(ctx)
	if err != nil || len(read.Kids) != len(kids) {
		t.Errorf("a gorm.G preload given AllShards as a condition: %d kids, %v; want %d", len(read.Kids), err, len(kids))
	}
	var plain genOwner
	must(t, db.Preload("Kids", func(tx *gorm.DB) *gorm.DB { return tx.Clauses(AllShards()).Order("id desc").Limit(3) }).First(&plain, owner.ID).Error)
	read, err = gorm.G[genOwner](db).Where("id = ?", owner.ID).
		Preload("Kids", func(pb gorm.PreloadBuilder) error { pb.Where(AllShards()).Order("id desc").Limit(3); return nil }).First(ctx)
	if err != nil || !slices.Equal(ids(read.Kids), ids(plain.Kids)) || len(plain.Kids) != 3 {
		t.Errorf("with an order and a limit: %v, %v; the chainable API's preload read %v", ids(read.Kids), err, ids(plain.Kids))
	}
	first := p.Layout().Shard(kids[0].ID)
	on := p.ShardMap().Physical(first)
	read, err = gorm.G[genOwner](db).Where("id = ?", owner.ID).
		Preload("Kids", func(pb gorm.PreloadBuilder) error { pb.Where(OnShard(first)); return nil }).First(ctx)
	if err != nil || len(read.Kids) == 0 || slices.ContainsFunc(read.Kids, func(k genKid) bool { return p.ShardMap().Physical(p.Layout().Shard(k.ID)) != on }) {
		t.Errorf("a gorm.G preload given OnShard(%d) as a condition: %v, %v; want the kids of its database only", first, ids(read.Kids), err)
	}

	// gorm.G's association operations give their Conditions as one AND group;
	// the kid is beside its owner, whose row the update's subquery reads.
	ownerOn := p.ShardMap().Physical(p.Layout().Shard(owner.ID))
	beside := kids[slices.IndexFunc(kids, func(k genKid) bool {
		return p.ShardMap().Physical(p.Layout().Shard(k.ID)) == ownerOn
	})]
	unlink := clause.Association{Association: "Kids", Type: clause.OpUpdate, Conditions: []clause.Expression{ByID(beside.ID), clause.Eq{Column: "id", Value: beside.ID}},
		Set: []clause.Assignment{{Column: clause.Column{Name: "owner_id"}, Value: 0}}}
	if _, err := gorm.G[genOwner](db).Where("id = ?", owner.ID).Set(unlink).Update(ctx); err != nil {
		t.Errorf("an association's update given ByID among its conditions: %v", err)
	}
	var unlinked int64
	must(t, direct[ownerOn].Model(&genKid{}).Where("id = ? AND owner_id = 0", beside.ID).Count(&unlinked).Error)
	if unlinked != 1 {
		t.Errorf("the association's update left kid %d with its owner on physical %d", beside.ID, ownerOn)
	}

	all, err := gorm.G[genKid](db).Where(AllShards()).Find(ctx)
	if err != nil || len(all) != len(kids) {
		t.Errorf("Find given AllShards as a condition: %d kids, %v; want %d", len(all), err, len(kids))
	}
	if n, err := gorm.G[genKid](db).Where(ByID(kids[0].ID)).Where("owner_id = ?", owner.ID).Update(ctx, "owner_id", owner.ID+1); err != nil || n == 0 {
		t.Errorf("Update given ByID as a condition: %d, %v", n, err)
	}
	for k, d := range direct {
		var moved int64
		must(t, d.Model(&genKid{}).Where("owner_id = ?", owner.ID+1).Count(&moved).Error)
		if (moved > 0) != (k == on) {
			t.Errorf("physical %d holds %d kids the update under ByID(%d) changed; its database is %d", k, moved, kids[0].ID, on)
		}
	}
	if _, err := gorm.G[genKid](db).Where(ByID(kids[0].ID)).Delete(ctx); !errors.Is(err, gorm.ErrMissingWhereClause) {
		t.Errorf("Delete given only ByID as a condition: %v, want gorm.ErrMissingWhereClause", err)
	}
	if n := rowsOn(t, direct, &genKid{}); n != int64(len(kids)) {
		t.Errorf("%d kids left, want %d", n, len(kids))
	}
}
