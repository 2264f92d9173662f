package integration

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shardid/shardid"
)

// More forms for the differential test's generator (difftest_gen_test.go),
// each a kind of its own that -difftest.skip can leave out by its prefix:
//
//   - HookWhere: updates and deletes of dtNote, whose BeforeUpdate and
//     BeforeDelete hooks add a WHERE condition (and a SET column), over
//     several databases with rows the condition keeps on each.
//   - Fragment(select|having|set|where|from|table|projection): SQL naming a
//     sharded table outside the conditions routing reads: a select list,
//     HAVING, a gorm.Expr value of an update, Where("?", gorm.Expr(...)),
//     clause.From joins, Table("?", clause.Table{...}), a projection struct
//     whose TableName is a sharded table.
//   - PreloadFunc: Preload with a function (order, limit, offset, unscoped,
//     select, a clause) over owners on several databases.
//   - UpsertMany, Save(mixed): upserts of every shape, batches over several
//     databases mixing new and existing rows.
//   - UniqueLater: a batch Create over several databases whose later part
//     collides with a stored row on a unique key.
//
// Notes (dtNote) are made by Create(notes).

// note is mostly a note that exists.
func (g *dtGen) note() int64 { return g.pick(g.s.notes) }

// someNotes is a few notes, or half the time every note (up to 12): an
// update or delete over several databases, with rows the hooks' conditions
// keep on each.
func (g *dtGen) someNotes() []int64 {
	if len(g.s.notes) > 0 && g.r.IntN(2) == 0 {
		return slices.Clone(g.s.notes[:min(len(g.s.notes), 12)])
	}
	return distinct(g.picks(g.s.notes, 5))
}

// someUsers is a few users, distinct, mostly on several databases.
func (g *dtGen) someUsers(n int) []int64 { return distinct(g.picks(g.s.users, n)) }

func distinct(list []int64) []int64 {
	var out []int64
	for _, n := range list {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// hashIndex is the physical database of a hash key's shard, as newRig maps
// the logical shards.
func hashIndex(key string) int {
	h, err := shardid.HashKey(key)
	if err != nil {
		return -1
	}
	layout := shardid.Layout{}.Normalized()
	return int(h%uint64(layout.ShardCount())) * dtPhysical / layout.ShardCount()
}

// usersOff returns up to n users, distinct, none on database k, in creation
// order; small IDs (shard 0) stand in when there are none.
func (g *dtGen) usersOff(k, n int) []int64 {
	var out []int64
	for _, u := range g.s.users {
		if physicalIndex(u) != k && len(out) < n {
			out = append(out, u)
		}
	}
	if len(out) == 0 && physicalIndex(1) != k {
		out = append(out, 1, 2)
	}
	return out
}

func notesText(ns []dtNote) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		var f []string
		if n.ID != 0 {
			f = append(f, fmt.Sprintf("ID: %d", n.ID))
		}
		f = append(f, fmt.Sprintf("UserID: %d, Slug: %q", n.UserID, n.Slug))
		if n.Likes != 0 {
			f = append(f, fmt.Sprintf("Likes: %d", n.Likes))
		}
		if n.Locked {
			f = append(f, "Locked: true")
		}
		parts[i] = "{" + strings.Join(f, ", ") + "}"
	}
	return "[]dtNote{" + strings.Join(parts, ", ") + "}"
}

func usersText(us []dtUser) string {
	parts := make([]string, len(us))
	for i, u := range us {
		if u.ID != 0 {
			parts[i] = fmt.Sprintf("{ID: %d, Name: %q, Age: %d}", u.ID, u.Name, u.Age)
		} else {
			parts[i] = fmt.Sprintf("{Name: %q, Age: %d}", u.Name, u.Age)
		}
	}
	return "[]dtUser{" + strings.Join(parts, ", ") + "}"
}

// newNotes draws notes of owners with fresh slugs: a third locked, a third
// with the 99 likes the delete hook keeps.
func (g *dtGen) newNotes(owners []int64) []dtNote {
	ns := make([]dtNote, len(owners))
	for i, o := range owners {
		ns[i] = dtNote{UserID: o, Slug: fmt.Sprintf("n%d", g.r.IntN(1000)), Likes: []int{0, 1, 99}[g.r.IntN(3)], Locked: g.r.IntN(3) == 0}
	}
	return ns
}

// existingNote is a stored note's key, with new values, or false.
func (g *dtGen) existingNote() (dtNote, bool) {
	if len(g.s.notes) == 0 {
		return dtNote{}, false
	}
	id := g.s.notes[g.r.IntN(len(g.s.notes))]
	return dtNote{ID: id, UserID: g.s.noteOwner[id], Slug: g.s.noteSlug[id], Likes: g.r.IntN(50)}, true
}

// createNotes runs a Create of a copy of ns (a statement runs twice).
func createNotes(e *env, ns []dtNote, do func(db *gorm.DB, ns *[]dtNote) *gorm.DB) outcome {
	list := slices.Clone(ns)
	return e.write(&list, func(db *gorm.DB) *gorm.DB { return do(db, &list) })
}

func createUsersOf(e *env, us []dtUser, do func(db *gorm.DB, us *[]dtUser) *gorm.DB) outcome {
	list := slices.Clone(us)
	return e.write(&list, func(db *gorm.DB) *gorm.DB { return do(db, &list) })
}

// idRow is a projection of a query with an expression.
type idRow struct {
	ID int64
	N  int64
}

var dtFormOps = []dtOp{
	// ---- a transaction across shards: all of it or none, savepoints on every database ----
	{3, func(g *dtGen) dtStmt {
		list := g.someNotes()
		inner := g.r.IntN(2) == 0 // a nested Transaction that rolls back to its savepoint
		end := g.r.IntN(3)        // 0 commit, 1 the callback's error, 2 a statement that fails
		text := fmt.Sprintf(`db.Clauses(shardid.AcrossShards()).Transaction(func(tx) { likes+1 on each of %s; nested rolled back: %v; end #%d })`, q(list), inner, end)
		return dtStmt{fmt.Sprintf("AcrossShards #%d", end), text, func(e *env) outcome {
			db := e.db
			if !e.ref {
				db = db.Clauses(shardid.AcrossShards())
			}
			err := db.Transaction(func(tx *gorm.DB) error {
				for i, id := range list {
					if inner && i == len(list)-1 {
						_ = tx.Transaction(func(tx2 *gorm.DB) error {
							if err := tx2.Model(&dtNote{}).Where("id = ?", id).Update("likes", gorm.Expr("likes + 1")).Error; err != nil {
								return err
							}
							return errors.New("inner")
						})
						continue
					}
					if err := tx.Model(&dtNote{}).Where("id = ?", id).Update("likes", gorm.Expr("likes + 1")).Error; err != nil {
						return err
					}
				}
				switch end {
				case 1:
					return errors.New("the callback fails")
				case 2:
					return tx.Exec("SELECT 1 FROM dt_no_such_table").Error
				}
				return nil
			})
			return outcome{err: err}
		}}
	}},

	// ---- notes ----
	{4, func(g *dtGen) dtStmt {
		// Two notes per user, one the hooks keep (locked, 99 likes, or both):
		// each database the users are on has rows on both sides of the hooks' conditions.
		var ns []dtNote
		for _, n := range g.newNotes(g.someUsers(4)) {
			kept := n
			kept.Slug += "k"
			n.Likes, n.Locked = g.r.IntN(2), false
			switch g.r.IntN(3) {
			case 0:
				kept.Likes, kept.Locked = g.r.IntN(2), true
			case 1:
				kept.Likes, kept.Locked = 99, false
			default:
				kept.Likes, kept.Locked = 99, true
			}
			ns = append(ns, n, kept)
		}
		return dtStmt{"Create(notes)", fmt.Sprintf("db.Create(&%s)", notesText(ns)), func(e *env) outcome {
			return createNotes(e, ns, func(db *gorm.DB, ns *[]dtNote) *gorm.DB { return db.Create(ns) })
		}}
	}},

	// ---- hooks that add conditions ----
	{7, func(g *dtGen) dtStmt {
		list := g.someNotes()
		owners := distinct(g.picks(g.s.users, 4))
		for _, n := range list[:min(len(list), 3)] {
			if owner, ok := g.s.noteOwner[n]; ok {
				owners = append(owners, owner)
			}
		}
		owners = distinct(owners)
		id := g.note()
		// Notes as read, with the likes they have: the hooks add a condition per row.
		var read []dtNote
		for _, n := range list {
			read = append(read, dtNote{ID: n, UserID: g.s.noteOwner[n], Slug: g.s.noteSlug[n], Likes: g.s.noteLikes[n]})
		}
		how := g.r.IntN(15)
		var ex dtNote
		if how == 9 {
			var ok bool
			if ex, ok = g.existingNote(); !ok {
				how = 0
			}
		}
		if (how == 10 || how == 11) && !g.returning() {
			how -= 10 // MariaDB's dialector builds no RETURNING
		}
		texts := []string{
			fmt.Sprintf(`db.Model(&dtNote{}).Where("id IN ?", %s).Update("likes", gorm.Expr("likes + 1"))`, q(list)),
			fmt.Sprintf(`db.Model(&dtNote{}).Where("user_id IN ?", %s).Updates(map[string]any{"likes": 5})`, q(owners)),
			`db.Clauses(shardid.AllShards()).Model(&dtNote{}).Where("likes < ?", 50).Update("likes", gorm.Expr("likes + 1"))`,
			fmt.Sprintf(`db.Model(&[]dtNote{ IDs %s }).Update("likes", 7)`, q(list)),
			fmt.Sprintf(`db.Where("id IN ?", %s).Delete(&dtNote{})`, q(list)),
			fmt.Sprintf(`db.Where("user_id IN ?", %s).Delete(&dtNote{})`, q(owners)),
			fmt.Sprintf(`db.Delete(&[]dtNote{ IDs %s })`, q(list)),
			`db.Clauses(shardid.AllShards()).Where("likes >= ?", 1).Delete(&dtNote{})`,
			fmt.Sprintf(`db.Model(&dtNote{}).Where("id IN ?", %s).Updates(&dtNote{Likes: 3})`, q(list)),
			fmt.Sprintf(`db.Save(&dtNote{ID: %d, UserID: %d, Slug: %q, Likes: %d}) // locked: the update finds nothing, Save upserts`, ex.ID, ex.UserID, ex.Slug, ex.Likes),
			fmt.Sprintf(`db.Clauses(clause.Returning{}).Model(&ns).Where("id IN ?", %s).Update("likes", 8) // an empty slice: no hook runs`, q(list)),
			fmt.Sprintf(`db.Clauses(clause.Returning{}).Where("id IN ?", %s).Delete(&ns)`, q(list)),
			fmt.Sprintf(`db.Model(&dtNote{ID: %d}).Update("likes", 1)`, id),
			fmt.Sprintf(`db.Delete(&%s) // as read: each row's hook checks its likes`, notesText(read)),
			fmt.Sprintf(`db.Model(&%s).Update("locked", true) // as read: each row's hook checks its likes`, notesText(read)),
		}
		return dtStmt{fmt.Sprintf("HookWhere(notes) #%d", how), texts[how], func(e *env) outcome {
			read := slices.Clone(read)
			db := e.db
			notes := func() []dtNote {
				ns := make([]dtNote, len(list))
				for i, id := range list {
					ns[i].ID = id
				}
				return ns
			}
			switch how {
			case 0:
				return res(db.Model(&dtNote{}).Where("id IN ?", list).Update("likes", gorm.Expr("likes + 1")), nil, true)
			case 1:
				return res(db.Model(&dtNote{}).Where("user_id IN ?", owners).Updates(map[string]any{"likes": 5}), nil, true)
			case 2:
				return res(db.Clauses(shardid.AllShards()).Model(&dtNote{}).Where("likes < ?", 50).Update("likes", gorm.Expr("likes + 1")), nil, true)
			case 3:
				ns := notes()
				return res(db.Model(&ns).Update("likes", 7), nil, true)
			case 4:
				return res(db.Where("id IN ?", list).Delete(&dtNote{}), nil, true)
			case 5:
				return res(db.Where("user_id IN ?", owners).Delete(&dtNote{}), nil, true)
			case 6:
				ns := notes()
				return res(db.Delete(&ns), nil, true)
			case 7:
				return res(db.Clauses(shardid.AllShards()).Where("likes >= ?", 1).Delete(&dtNote{}), nil, true)
			case 8:
				return res(db.Model(&dtNote{}).Where("id IN ?", list).Updates(&dtNote{Likes: 3}), nil, true)
			case 9:
				n := ex
				return e.write(&n, func(db *gorm.DB) *gorm.DB { return db.Save(&n) })
			case 10:
				var ns []dtNote
				return res(db.Clauses(clause.Returning{}).Model(&ns).Where("id IN ?", list).Update("likes", 8), &ns, false)
			case 11:
				var ns []dtNote
				return res(db.Clauses(clause.Returning{}).Where("id IN ?", list).Delete(&ns), &ns, false)
			case 12:
				return res(db.Model(&dtNote{ID: id}).Update("likes", 1), nil, true)
			case 13:
				return res(db.Delete(&read), nil, true)
			}
			return res(db.Model(&read).Update("locked", true), nil, true)
		}}
	}},

	{4, func(g *dtGen) dtStmt {
		list := distinct(g.picks(g.s.photos, 5))
		if len(g.s.photos) > 0 && g.r.IntN(2) == 0 {
			list = slices.Clone(g.s.photos[:min(len(g.s.photos), 12)])
		}
		var owners []int64
		for _, p := range list {
			if owner, ok := g.s.photoOwner[p]; ok && !slices.Contains(owners, owner) {
				owners = append(owners, owner)
			}
		}
		if len(owners) == 0 {
			owners = []int64{g.user()}
		}
		how := g.r.IntN(9)
		if how >= 7 {
			how = 0 // pins a third of the time
		}
		if how == 6 && !g.returning() {
			how = 1
		}
		texts := []string{
			fmt.Sprintf(`db.Model(&dtPhoto{}).Where("id IN ?", %s).Update("likes", 99) // pinned: BeforeDelete keeps them`, q(list[:(len(list)+1)/2])),
			fmt.Sprintf(`db.Where("id IN ?", %s).Delete(&dtPhoto{})`, q(list)),
			fmt.Sprintf(`db.Where("user_id IN ?", %s).Delete(&dtPhoto{})`, q(owners)),
			`db.Clauses(shardid.AllShards()).Where("likes >= ?", 0).Delete(&dtPhoto{})`,
			fmt.Sprintf(`db.Delete(&[]dtPhoto{ IDs %s })`, q(list)),
			fmt.Sprintf(`db.Unscoped().Where("id IN ?", %s).Delete(&dtPhoto{})`, q(list)),
			fmt.Sprintf(`db.Clauses(clause.Returning{}).Where("id IN ?", %s).Delete(&ps)`, q(list)),
		}
		return dtStmt{fmt.Sprintf("HookWhere(photos) #%d", how), texts[how], func(e *env) outcome {
			db := e.db
			switch how {
			case 0:
				return res(db.Model(&dtPhoto{}).Where("id IN ?", list[:(len(list)+1)/2]).Update("likes", 99), nil, true)
			case 1:
				return res(db.Where("id IN ?", list).Delete(&dtPhoto{}), nil, true)
			case 2:
				return res(db.Where("user_id IN ?", owners).Delete(&dtPhoto{}), nil, true)
			case 3:
				return res(db.Clauses(shardid.AllShards()).Where("likes >= ?", 0).Delete(&dtPhoto{}), nil, true)
			case 4:
				ps := make([]dtPhoto, len(list))
				for i, id := range list {
					ps[i].ID = id
				}
				return res(db.Delete(&ps), nil, true)
			case 5:
				return res(db.Unscoped().Where("id IN ?", list).Delete(&dtPhoto{}), nil, true)
			}
			var ps []dtPhoto
			return res(db.Clauses(clause.Returning{}).Where("id IN ?", list).Delete(&ps), &ps, false)
		}}
	}},

	// ---- SQL naming sharded tables outside the conditions ----
	{2, func(g *dtGen) dtStmt {
		id, list := g.user(), g.someUsers(5)
		how := g.r.IntN(5)
		texts := []string{
			fmt.Sprintf(`db.Model(&dtUser{}).Select("id, (SELECT count(*) FROM dt_users) AS n").Where("id = ?", %d).Scan(&row)`, id),
			fmt.Sprintf(`db.Model(&dtUser{}).Select("id, (SELECT count(*) FROM dt_photos) AS n").Where("id = ?", %d).Scan(&row)`, id),
			fmt.Sprintf(`db.Model(&dtUser{}).Select("id, (SELECT count(*) FROM dt_photos WHERE dt_photos.user_id = dt_users.id) AS n").Where("id IN ?", %s).Find(&rows)`, q(list)),
			fmt.Sprintf(`db.Model(&dtUser{}).Select("id, (SELECT count(*) FROM dt_users AS u2 WHERE u2.age < dt_users.age) AS n").Where("id = ?", %d).Scan(&row)`, id),
			`db.Clauses(shardid.AllShards()).Model(&dtUser{}).Select("id, (SELECT count(*) FROM dt_photos WHERE dt_photos.user_id = dt_users.id) AS n").Find(&rows)`,
		}
		return dtStmt{fmt.Sprintf("Fragment(select) #%d", how), texts[how], func(e *env) outcome {
			db := e.db
			var row idRow
			var rows []idRow
			switch how {
			case 0:
				return res(db.Model(&dtUser{}).Select("id, (SELECT count(*) FROM dt_users) AS n").Where("id = ?", id).Scan(&row), &row, true)
			case 1:
				return res(db.Model(&dtUser{}).Select("id, (SELECT count(*) FROM dt_photos) AS n").Where("id = ?", id).Scan(&row), &row, true)
			case 2:
				return res(db.Model(&dtUser{}).Select("id, (SELECT count(*) FROM dt_photos WHERE dt_photos.user_id = dt_users.id) AS n").Where("id IN ?", list).Find(&rows), &rows, false)
			case 3:
				return res(db.Model(&dtUser{}).Select("id, (SELECT count(*) FROM dt_users AS u2 WHERE u2.age < dt_users.age) AS n").Where("id = ?", id).Scan(&row), &row, true)
			}
			return res(db.Clauses(shardid.AllShards()).Model(&dtUser{}).Select("id, (SELECT count(*) FROM dt_photos WHERE dt_photos.user_id = dt_users.id) AS n").Find(&rows), &rows, false)
		}}
	}},
	{1, func(g *dtGen) dtStmt {
		uid, list := g.user(), g.someUsers(5)
		how := g.r.IntN(5)
		type group struct {
			UserID int64
			N      int64
		}
		texts := []string{
			fmt.Sprintf(`db.Model(&dtPhoto{}).Select("user_id, count(*) AS n").Where("user_id = ?", %d).Group("user_id").Having("count(*) < (SELECT count(*) FROM dt_users)").Scan(&rows)`, uid),
			fmt.Sprintf(`db.Model(&dtPhoto{}).Select("user_id, count(*) AS n").Where("user_id = ?", %d).Group("user_id").Having("count(*) * 2 > (SELECT count(*) FROM dt_photos)").Scan(&rows)`, uid),
			fmt.Sprintf(`db.Model(&dtPhoto{}).Select("user_id, count(*) AS n").Where("user_id IN ?", %s).Group("user_id").Having("count(*) >= (SELECT count(*) FROM dt_profiles)").Find(&rows)`, q(list)),
			fmt.Sprintf(`db.Model(&dtPhoto{}).Select("user_id, count(*) AS n").Where("user_id = ?", %d).Group("user_id").Having("count(*) <= (?)", db.Model(&dtUser{}).Select("count(*)")).Scan(&rows)`, uid),
			fmt.Sprintf(`db.Model(&dtPhoto{}).Select("user_id, count(*) AS n").Where("user_id = ?", %d).Group("user_id").Having("?", gorm.Expr("count(*) * 2 > (SELECT count(*) FROM dt_photos)")).Scan(&rows)`, uid),
		}
		return dtStmt{fmt.Sprintf("Fragment(having) #%d", how), texts[how], func(e *env) outcome {
			db := e.db
			var rows []group
			m := db.Model(&dtPhoto{}).Select("user_id, count(*) AS n")
			switch how {
			case 0:
				return res(m.Where("user_id = ?", uid).Group("user_id").Having("count(*) < (SELECT count(*) FROM dt_users)").Scan(&rows), &rows, false)
			case 1:
				return res(m.Where("user_id = ?", uid).Group("user_id").Having("count(*) * 2 > (SELECT count(*) FROM dt_photos)").Scan(&rows), &rows, false)
			case 2:
				return res(m.Where("user_id IN ?", list).Group("user_id").Having("count(*) >= (SELECT count(*) FROM dt_profiles)").Find(&rows), &rows, false)
			case 3:
				return res(m.Where("user_id = ?", uid).Group("user_id").Having("count(*) <= (?)", db.Model(&dtUser{}).Select("count(*)")).Scan(&rows), &rows, false)
			}
			return res(m.Where("user_id = ?", uid).Group("user_id").Having("?", gorm.Expr("count(*) * 2 > (SELECT count(*) FROM dt_photos)")).Scan(&rows), &rows, false)
		}}
	}},
	{2, func(g *dtGen) dtStmt {
		id, uid, other, list, notes := g.user(), g.user(), g.user(), g.someUsers(5), g.someNotes()
		how := g.r.IntN(9)
		texts := []string{
			fmt.Sprintf(`db.Model(&dtUser{ID: %d}).Update("age", gorm.Expr("(SELECT count(*) FROM dt_photos)"))`, id),
			fmt.Sprintf(`db.Model(&dtUser{}).Where("id IN ?", %s).Updates(map[string]any{"age": gorm.Expr("(SELECT count(*) FROM dt_photos WHERE dt_photos.user_id = dt_users.id)")})`, q(list)),
			fmt.Sprintf(`db.Model(&dtPhoto{}).Where("user_id = ?", %d).UpdateColumn("likes", gorm.Expr("(SELECT count(*) FROM dt_users)"))`, uid),
			fmt.Sprintf(`db.Model(&dtPhoto{}).Where("user_id = ?", %d).UpdateColumn("likes", gorm.Expr("likes + (SELECT count(*) FROM dt_photos AS p2)"))`, uid),
			fmt.Sprintf(`db.Model(&dtUser{ID: %d}).Updates(map[string]any{"name": gorm.Expr("(SELECT max(url) FROM dt_photos)")})`, id),
			`db.Clauses(shardid.AllShards()).Model(&dtUser{}).Where("age > ?", 60).Update("age", gorm.Expr("(SELECT count(*) FROM dt_users AS u2)"))`,
			fmt.Sprintf(`db.Model(&dtNote{}).Where("id IN ?", %s).Update("likes", gorm.Expr("(SELECT count(*) FROM dt_photos WHERE dt_photos.user_id = dt_notes.user_id)"))`, q(notes)),
			fmt.Sprintf(`db.Model(&dtUser{ID: %d}).Update("age", db.Model(&dtPhoto{}).Select("count(*)").Where("user_id = ?", %d))`, id, id),
			fmt.Sprintf(`db.Model(&dtUser{ID: %d}).Update("age", db.Model(&dtUser{}).Select("age").Where("id = ?", %d))`, id, other),
		}
		return dtStmt{fmt.Sprintf("Fragment(set) #%d", how), texts[how], execOnly(func(db *gorm.DB) *gorm.DB {
			switch how {
			case 0:
				return db.Model(&dtUser{ID: id}).Update("age", gorm.Expr("(SELECT count(*) FROM dt_photos)"))
			case 1:
				return db.Model(&dtUser{}).Where("id IN ?", list).Updates(map[string]any{"age": gorm.Expr("(SELECT count(*) FROM dt_photos WHERE dt_photos.user_id = dt_users.id)")})
			case 2:
				return db.Model(&dtPhoto{}).Where("user_id = ?", uid).UpdateColumn("likes", gorm.Expr("(SELECT count(*) FROM dt_users)"))
			case 3:
				return db.Model(&dtPhoto{}).Where("user_id = ?", uid).UpdateColumn("likes", gorm.Expr("likes + (SELECT count(*) FROM dt_photos AS p2)"))
			case 4:
				return db.Model(&dtUser{ID: id}).Updates(map[string]any{"name": gorm.Expr("(SELECT max(url) FROM dt_photos)")})
			case 5:
				return db.Clauses(shardid.AllShards()).Model(&dtUser{}).Where("age > ?", 60).Update("age", gorm.Expr("(SELECT count(*) FROM dt_users AS u2)"))
			case 6:
				return db.Model(&dtNote{}).Where("id IN ?", notes).Update("likes", gorm.Expr("(SELECT count(*) FROM dt_photos WHERE dt_photos.user_id = dt_notes.user_id)"))
			case 7:
				return db.Model(&dtUser{ID: id}).Update("age", db.Model(&dtPhoto{}).Select("count(*)").Where("user_id = ?", id))
			}
			return db.Model(&dtUser{ID: id}).Update("age", db.Model(&dtUser{}).Select("age").Where("id = ?", other))
		})}
	}},
	{2, func(g *dtGen) dtStmt {
		id, uid, list, likes := g.user(), g.user(), g.someUsers(5), g.r.IntN(3)
		how := g.r.IntN(7)
		texts := []string{
			fmt.Sprintf(`db.Where("id = ?", %d).Where("?", gorm.Expr("EXISTS (SELECT 1 FROM dt_photos WHERE dt_photos.user_id = dt_users.id)")).Find(&us)`, id),
			fmt.Sprintf(`db.Where("id IN ?", %s).Where("?", gorm.Expr("EXISTS (SELECT 1 FROM dt_photos WHERE likes > ?)", %d)).Find(&us)`, q(list), likes),
			fmt.Sprintf(`db.Where("id = ?", %d).Where("age <= (SELECT max(age) FROM dt_users)").Find(&us)`, id),
			fmt.Sprintf(`db.Where("user_id = ?", %d).Where("likes <= (?)", db.Model(&dtPhoto{}).Select("max(likes)")).Find(&ps)`, uid),
			fmt.Sprintf(`db.Where("id = ?", %d).Not("?", gorm.Expr("EXISTS (SELECT 1 FROM dt_accounts)")).Find(&us)`, id),
			fmt.Sprintf(`db.Where("id IN ?", %s).Where("?", gorm.Expr("NOT EXISTS (SELECT 1 FROM dt_users AS u2 WHERE u2.age > dt_users.age)")).Find(&us)`, q(list)),
			fmt.Sprintf(`db.Where("user_id IN ?", %s).Where("?", gorm.Expr("EXISTS (SELECT 1 FROM dt_notes WHERE dt_notes.user_id = dt_photos.user_id)")).Delete(&dtPhoto{})`, q(list)),
		}
		return dtStmt{fmt.Sprintf("Fragment(where) #%d", how), texts[how], func(e *env) outcome {
			db := e.db
			var us []dtUser
			var ps []dtPhoto
			switch how {
			case 0:
				return res(db.Where("id = ?", id).Where("?", gorm.Expr("EXISTS (SELECT 1 FROM dt_photos WHERE dt_photos.user_id = dt_users.id)")).Find(&us), &us, false)
			case 1:
				return res(db.Where("id IN ?", list).Where("?", gorm.Expr("EXISTS (SELECT 1 FROM dt_photos WHERE likes > ?)", likes)).Find(&us), &us, false)
			case 2:
				return res(db.Where("id = ?", id).Where("age <= (SELECT max(age) FROM dt_users)").Find(&us), &us, false)
			case 3:
				return res(db.Where("user_id = ?", uid).Where("likes <= (?)", db.Model(&dtPhoto{}).Select("max(likes)")).Find(&ps), &ps, false)
			case 4:
				return res(db.Where("id = ?", id).Not("?", gorm.Expr("EXISTS (SELECT 1 FROM dt_accounts)")).Find(&us), &us, false)
			case 5:
				return res(db.Where("id IN ?", list).Where("?", gorm.Expr("NOT EXISTS (SELECT 1 FROM dt_users AS u2 WHERE u2.age > dt_users.age)")).Find(&us), &us, false)
			}
			return res(db.Where("user_id IN ?", list).Where("?", gorm.Expr("EXISTS (SELECT 1 FROM dt_notes WHERE dt_notes.user_id = dt_photos.user_id)")).Delete(&dtPhoto{}), nil, true)
		}}
	}},
	{2, func(g *dtGen) dtStmt {
		id, list := g.user(), g.someUsers(5)
		how := g.r.IntN(8)
		join := func(table, on string) clause.From {
			return clause.From{Joins: []clause.Join{{Type: clause.LeftJoin, Table: clause.Table{Name: table}, ON: clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: on}}}}}}
		}
		type pair struct {
			ID  int64
			Pid *int64
		}
		texts := []string{
			fmt.Sprintf(`db.Model(&dtUser{}).Clauses(clause.From{Joins: LEFT JOIN dt_photos ON dt_photos.user_id = dt_users.id}).Select("dt_users.id, dt_photos.id AS pid").Where("dt_users.id = ?", %d).Scan(&rows)`, id),
			fmt.Sprintf(`db.Model(&dtUser{}).Clauses(clause.From{Joins: LEFT JOIN dt_accounts ON dt_accounts.id = dt_users.id}).Select("dt_users.id, dt_accounts.id AS pid").Where("dt_users.id = ?", %d).Scan(&rows)`, id),
			fmt.Sprintf(`db.Model(&dtUser{}).Clauses(clause.From{Joins: LEFT JOIN dt_photos ON dt_photos.user_id = dt_users.id}).Select("dt_users.id, dt_photos.id AS pid").Where("dt_users.id IN ?", %s).Find(&rows)`, q(list)),
			fmt.Sprintf(`db.Model(&dtUser{}).Clauses(clause.From{Joins: LEFT JOIN dt_labels ON dt_labels.id = dt_users.age}).Select("dt_users.id, dt_labels.id AS pid").Where("dt_users.id = ?", %d).Scan(&rows)`, id),
			fmt.Sprintf(`db.Model(&dtUser{}).Clauses(clause.From{Tables: dt_users, dt_photos}).Select("dt_users.id, dt_photos.id AS pid").Where("dt_users.id = ?", %d).Where("dt_photos.user_id = dt_users.id").Scan(&rows)`, id),
			fmt.Sprintf(`db.Joins("JOIN dt_photos ON dt_photos.user_id = dt_users.id").Where("dt_users.id IN ?", %s).Find(&us)`, q(list)),
			fmt.Sprintf(`db.Model(&dtUser{}).Joins("JOIN dt_photos ON dt_photos.user_id = dt_users.id").Select("dt_users.id, dt_photos.id AS pid").Where("dt_users.id = ?", %d).Where("dt_photos.likes >= ?", 0).Scan(&rows)`, id),
			fmt.Sprintf(`db.Model(&dtUser{}).Joins("JOIN dt_users AS u2 ON u2.age < dt_users.age").Select("dt_users.id, u2.id AS pid").Where("dt_users.id = ?", %d).Scan(&rows)`, id),
		}
		return dtStmt{fmt.Sprintf("Fragment(from) #%d", how), texts[how], func(e *env) outcome {
			m := e.db.Model(&dtUser{})
			var rows []pair
			switch how {
			case 0:
				return res(m.Clauses(join("dt_photos", "dt_photos.user_id = dt_users.id")).Select("dt_users.id, dt_photos.id AS pid").Where("dt_users.id = ?", id).Scan(&rows), &rows, false)
			case 1:
				return res(m.Clauses(join("dt_accounts", "dt_accounts.id = dt_users.id")).Select("dt_users.id, dt_accounts.id AS pid").Where("dt_users.id = ?", id).Scan(&rows), &rows, false)
			case 2:
				return res(m.Clauses(join("dt_photos", "dt_photos.user_id = dt_users.id")).Select("dt_users.id, dt_photos.id AS pid").Where("dt_users.id IN ?", list).Find(&rows), &rows, false)
			case 3:
				return res(m.Clauses(join("dt_labels", "dt_labels.id = dt_users.age")).Select("dt_users.id, dt_labels.id AS pid").Where("dt_users.id = ?", id).Scan(&rows), &rows, false)
			case 4:
				return res(m.Clauses(clause.From{Tables: []clause.Table{{Name: "dt_users"}, {Name: "dt_photos"}}}).Select("dt_users.id, dt_photos.id AS pid").Where("dt_users.id = ?", id).Where("dt_photos.user_id = dt_users.id").Scan(&rows), &rows, false)
			case 5:
				var us []dtUser
				return res(e.db.Joins("JOIN dt_photos ON dt_photos.user_id = dt_users.id").Where("dt_users.id IN ?", list).Find(&us), &us, false)
			case 6:
				return res(m.Joins("JOIN dt_photos ON dt_photos.user_id = dt_users.id").Select("dt_users.id, dt_photos.id AS pid").Where("dt_users.id = ?", id).Where("dt_photos.likes >= ?", 0).Scan(&rows), &rows, false)
			}
			return res(m.Joins("JOIN dt_users AS u2 ON u2.age < dt_users.age").Select("dt_users.id, u2.id AS pid").Where("dt_users.id = ?", id).Scan(&rows), &rows, false)
		}}
	}},
	{1, func(g *dtGen) dtStmt {
		id, uid, list := g.user(), g.user(), g.someUsers(4)
		how := g.r.IntN(5)
		texts := []string{
			fmt.Sprintf(`db.Table("?", clause.Table{Name: "dt_users"}).Select("id", "name", "age").Where("id = ?", %d).Find(&[]map[string]any{})`, id),
			fmt.Sprintf(`db.Table("?", clause.Table{Name: "dt_users"}).Where("id = ?", %d).Update("age", 1)`, id),
			fmt.Sprintf(`db.Table("(?) AS t", db.Model(&dtUser{}).Select("id", "name").Where("id = ?", %d)).Find(&[]map[string]any{})`, id),
			fmt.Sprintf(`db.Table("dt_users").Where("id IN ?", %s).Update("age", 2)`, q(list)),
			fmt.Sprintf(`db.Table("dt_photos AS p").Where("p.user_id = ?", %d).Count(&n)`, uid),
		}
		return dtStmt{fmt.Sprintf("Fragment(table) #%d", how), texts[how], func(e *env) outcome {
			db := e.db
			var rows []map[string]any
			switch how {
			case 0:
				return res(db.Table("?", clause.Table{Name: "dt_users"}).Select("id", "name", "age").Where("id = ?", id).Find(&rows), &rows, false)
			case 1:
				return res(db.Table("?", clause.Table{Name: "dt_users"}).Where("id = ?", id).Update("age", 1), nil, true)
			case 2:
				return res(db.Table("(?) AS t", db.Model(&dtUser{}).Select("id", "name").Where("id = ?", id)).Find(&rows), &rows, false)
			case 3:
				return res(db.Table("dt_users").Where("id IN ?", list).Update("age", 2), nil, true)
			}
			var n int64
			return res(db.Table("dt_photos AS p").Where("p.user_id = ?", uid).Count(&n), n, true)
		}}
	}},
	{1, func(g *dtGen) dtStmt {
		id, list := g.user(), g.someUsers(4)
		how := g.r.IntN(5)
		texts := []string{
			fmt.Sprintf(`db.Where("id = ?", %d).Find(&[]dtUserName{})`, id),
			fmt.Sprintf(`db.Model(&dtUserName{ID: %d}).Update("name", "proj")`, id),
			fmt.Sprintf(`db.Where("id IN ?", %s).Delete(&dtUserName{}) // a hard delete: the projection has no DeletedAt`, q(list)),
			fmt.Sprintf(`db.First(&dtUserName{}, %d)`, id),
			fmt.Sprintf(`db.Model(&dtUser{}).Where("id = ?", %d).Find(&[]dtUserName{})`, id),
		}
		return dtStmt{fmt.Sprintf("Fragment(projection) #%d", how), texts[how], func(e *env) outcome {
			db := e.db
			var rows []dtUserName
			switch how {
			case 0:
				return res(db.Where("id = ?", id).Find(&rows), &rows, false)
			case 1:
				return res(db.Model(&dtUserName{ID: id}).Update("name", "proj"), nil, true)
			case 2:
				return res(db.Where("id IN ?", list).Delete(&dtUserName{}), nil, true)
			case 3:
				var row dtUserName
				return res(db.First(&row, id), &row, true)
			}
			return res(db.Model(&dtUser{}).Where("id = ?", id).Find(&rows), &rows, false)
		}}
	}},

	// ---- Preload with a function ----
	{4, func(g *dtGen) dtStmt {
		id, list, photos := g.user(), g.someUsers(5), distinct(g.picks(g.s.photos, 4))
		how := g.r.IntN(13)
		type pre struct {
			text string
			name string
			f    func(tx *gorm.DB) *gorm.DB
		}
		pres := []pre{
			{`tx.Order("id desc").Limit(1)`, "Photos", func(tx *gorm.DB) *gorm.DB { return tx.Order("id desc").Limit(1) }},
			{`tx.Order("id").Offset(1).Limit(2)`, "Photos", func(tx *gorm.DB) *gorm.DB { return tx.Order("id").Offset(1).Limit(2) }},
			{`tx.Where("likes >= ?", 0).Order("id desc")`, "Photos", func(tx *gorm.DB) *gorm.DB { return tx.Where("likes >= ?", 0).Order("id desc") }},
			{`tx.Order("likes desc, id").Limit(2)`, "Photos", func(tx *gorm.DB) *gorm.DB { return tx.Order("likes desc, id").Limit(2) }}, // a nullable column: NULLs where the dialect puts them
			{`tx.Unscoped().Order("id desc").Limit(2)`, "Photos", func(tx *gorm.DB) *gorm.DB { return tx.Unscoped().Order("id desc").Limit(2) }},
			{`tx.Select("id", "user_id", "likes").Order("id desc").Limit(2)`, "Photos", func(tx *gorm.DB) *gorm.DB { return tx.Select("id", "user_id", "likes").Order("id desc").Limit(2) }},
			{`tx.Order("id desc").Limit(2)`, "Photos", func(tx *gorm.DB) *gorm.DB { return tx.Order("id desc").Limit(2) }}, // over AllShards owners
			{`tx.Clauses(shardid.AllShards()).Order("id desc").Limit(1)`, "Photos", func(tx *gorm.DB) *gorm.DB { return tx.Clauses(shardid.AllShards()).Order("id desc").Limit(1) }},
			{`tx.Order("id desc").Limit(1)`, "Profile", func(tx *gorm.DB) *gorm.DB { return tx.Order("id desc").Limit(1) }},
			{`tx.Order("id desc").Limit(1)`, "Tags", func(tx *gorm.DB) *gorm.DB { return tx.Order("id desc").Limit(1) }},
			{`tx.Order("id").Limit(1)`, "Labels", func(tx *gorm.DB) *gorm.DB { return tx.Order("id").Limit(1) }},
			{`tx.Order("id desc").Limit(1)`, "Photos", func(tx *gorm.DB) *gorm.DB { return tx.Order("id desc").Limit(1) }}, // one owner
			{fmt.Sprintf(`tx.Where("id IN ?", %s)`, q(photos)), "Photos", func(tx *gorm.DB) *gorm.DB { return tx.Where("id IN ?", photos) }},
		}
		p := pres[how]
		text := fmt.Sprintf(`db.Preload(%q, func(tx *gorm.DB) *gorm.DB { return %s }).Find(&us, %s)`, p.name, p.text, q(list))
		switch how {
		case 6:
			text = fmt.Sprintf(`db.Clauses(shardid.AllShards()).Preload(%q, func(tx *gorm.DB) *gorm.DB { return %s }).Find(&us)`, p.name, p.text)
		case 11:
			text = fmt.Sprintf(`db.Preload(%q, func(tx *gorm.DB) *gorm.DB { return %s }).First(&u, %d)`, p.name, p.text, id)
		}
		return dtStmt{fmt.Sprintf("PreloadFunc #%d", how), text, func(e *env) outcome {
			var us []dtUser
			switch how {
			case 6:
				return res(e.db.Clauses(shardid.AllShards()).Preload(p.name, p.f).Find(&us), &us, false)
			case 11:
				var u dtUser
				return res(e.db.Preload(p.name, p.f).First(&u, id), &u, true)
			}
			return res(e.db.Preload(p.name, p.f).Find(&us, list), &us, false)
		}}
	}},

	// ---- upserts ----
	{4, func(g *dtGen) dtStmt {
		how := g.r.IntN(10)
		// Users: some stored (by ID, new values), some new, distinct.
		var us []dtUser
		for _, id := range g.someUsers(3) {
			us = append(us, dtUser{ID: id, Name: g.name(), Age: g.age()})
		}
		for range g.r.IntN(3) + 1 {
			us = append(us, dtUser{Name: g.name(), Age: g.age()})
		}
		g.r.Shuffle(len(us), func(i, j int) { us[i], us[j] = us[j], us[i] })
		// Notes: some stored keys (user and slug, no ID), some stored IDs, some new.
		var ns []dtNote
		for range g.r.IntN(3) + 1 {
			if n, ok := g.existingNote(); ok {
				if g.r.IntN(2) == 0 {
					n.ID = 0
				}
				if !slices.ContainsFunc(ns, func(o dtNote) bool { return o.UserID == n.UserID && o.Slug == n.Slug }) {
					ns = append(ns, n)
				}
			}
		}
		ns = append(ns, g.newNotes(g.picks(g.s.users, 3))...)
		// Photos: some stored (sometimes with another user), some new.
		var ps []dtPhoto
		for _, pid := range distinct(g.picks(g.s.photos, 3)) {
			owner := g.s.photoOwner[pid]
			if owner == 0 || g.r.IntN(4) == 0 {
				owner = g.user()
			}
			ps = append(ps, dtPhoto{ID: pid, UserID: owner, URL: "up.jpg", Likes: g.r.IntN(9)})
		}
		for _, owner := range g.picks(g.s.users, 2) {
			ps = append(ps, dtPhoto{UserID: owner, URL: "new.jpg"})
		}
		// Accounts: stored emails and new ones.
		var as []dtAccount
		for range g.r.IntN(4) + 2 {
			e := fmt.Sprintf("u%d@x.io", g.r.IntN(30))
			if len(g.s.emails) > 0 && g.r.IntN(2) == 0 {
				e = g.s.emails[g.r.IntN(len(g.s.emails))]
			}
			if !slices.ContainsFunc(as, func(a dtAccount) bool { return a.Email == e }) {
				as = append(as, dtAccount{Email: e, Balance: g.r.IntN(100)})
			}
		}
		byID := []clause.Column{{Name: "id"}}
		byKey := []clause.Column{{Name: "user_id"}, {Name: "slug"}}
		type form struct {
			text string
			run  func(e *env) outcome
		}
		users := func(c clause.OnConflict) func(e *env) outcome {
			return func(e *env) outcome {
				return createUsersOf(e, us, func(db *gorm.DB, us *[]dtUser) *gorm.DB { return db.Clauses(c).Create(us) })
			}
		}
		notes := func(c clause.OnConflict) func(e *env) outcome {
			return func(e *env) outcome {
				return createNotes(e, ns, func(db *gorm.DB, ns *[]dtNote) *gorm.DB { return db.Clauses(c).Create(ns) })
			}
		}
		// GORM scans the rows RETURNING gives back into the rows of the batch
		// in turn, counting a row whose key is set as one returned: when the
		// database returns fewer rows than the batch has (DoNothing over a
		// conflict, DoUpdates whose Where is false), the reference, whose keys
		// are all preset and whose schema has the key auto-incremented (the
		// plugin's is not), gives RowsAffected as the batch's length and may
		// write a returned key into another row. No application sees that
		// reference (its new rows' keys are zero), so these forms compare the
		// error, the hooks and the rows stored, not RowsAffected nor the
		// returned values.
		unreturned := func(run func(e *env) outcome) func(e *env) outcome {
			return func(e *env) outcome {
				o := run(e)
				o.rows, o.out = 0, "(not compared)"
				return o
			}
		}
		forms := []form{
			{fmt.Sprintf(`db.Clauses(clause.OnConflict{DoNothing: true}).Create(&%s)`, usersText(us)), unreturned(users(clause.OnConflict{DoNothing: true}))},
			{fmt.Sprintf(`db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&%s)`, usersText(us)), users(clause.OnConflict{UpdateAll: true})},
			{fmt.Sprintf(`db.Clauses(clause.OnConflict{Columns: id, DoUpdates: clause.AssignmentColumns([]string{"name", "age"})}).Create(&%s)`, usersText(us)),
				users(clause.OnConflict{Columns: byID, DoUpdates: clause.AssignmentColumns([]string{"name", "age"})})},
			{fmt.Sprintf(`db.Clauses(clause.OnConflict{Columns: user_id, slug, DoUpdates: clause.AssignmentColumns([]string{"likes"})}).Create(&%s)`, notesText(ns)),
				notes(clause.OnConflict{Columns: byKey, DoUpdates: clause.AssignmentColumns([]string{"likes"})})},
			{fmt.Sprintf(`db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&%s)`, notesText(ns)), notes(clause.OnConflict{UpdateAll: true})},
			{fmt.Sprintf(`db.Clauses(clause.OnConflict{DoNothing: true}).Create(&%s)`, notesText(ns)), unreturned(notes(clause.OnConflict{DoNothing: true}))},
			{fmt.Sprintf(`db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&%s)`, photosText(ps)), func(e *env) outcome {
				list := slices.Clone(ps)
				return e.write(&list, func(db *gorm.DB) *gorm.DB { return db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&list) })
			}},
			{fmt.Sprintf(`db.Clauses(clause.OnConflict{Columns: id, DoUpdates: clause.Assignments(map[string]any{"age": gorm.Expr("dt_users.age + 1")})}).Create(&%s)`, usersText(us)),
				users(clause.OnConflict{Columns: byID, DoUpdates: clause.Assignments(map[string]any{"age": gorm.Expr("dt_users.age + 1")})})},
			{fmt.Sprintf(`db.Clauses(clause.OnConflict{Columns: id, DoUpdates: clause.AssignmentColumns([]string{"name"}), Where: dt_users.age < 50}).Create(&%s)`, usersText(us)),
				unreturned(users(clause.OnConflict{Columns: byID, DoUpdates: clause.AssignmentColumns([]string{"name"}), Where: clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "dt_users.age < ?", Vars: []any{50}}}}}))},
			{fmt.Sprintf(`db.Clauses(clause.OnConflict{Columns: email, DoUpdates: clause.AssignmentColumns([]string{"balance"})}).Create(&%s)`, accountsText(as)), func(e *env) outcome {
				list := slices.Clone(as)
				return e.write(&list, func(db *gorm.DB) *gorm.DB {
					return db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "email"}}, DoUpdates: clause.AssignmentColumns([]string{"balance"})}).Create(&list)
				})
			}},
		}
		return dtStmt{fmt.Sprintf("UpsertMany #%d", how), forms[how].text, forms[how].run}
	}},
	{2, func(g *dtGen) dtStmt {
		how := g.r.IntN(3)
		var us []dtUser
		for _, id := range g.someUsers(2) {
			us = append(us, dtUser{ID: id, Name: "s" + g.name(), Age: g.age()})
		}
		us = append(us, dtUser{Name: g.name(), Age: g.age()})
		var ns []dtNote
		if n, ok := g.existingNote(); ok {
			ns = append(ns, n)
		}
		ns = append(ns, g.newNotes(g.picks(g.s.users, 2))...)
		var ps []dtPhoto
		for _, pid := range distinct(g.picks(g.s.photos, 2)) {
			if owner, ok := g.s.photoOwner[pid]; ok {
				ps = append(ps, dtPhoto{ID: pid, UserID: owner, URL: "saved.jpg", Likes: 3})
			}
		}
		ps = append(ps, dtPhoto{UserID: g.user(), URL: "saved-new.jpg"})
		texts := []string{fmt.Sprintf("db.Save(&%s)", usersText(us)), fmt.Sprintf("db.Save(&%s)", notesText(ns)), fmt.Sprintf("db.Save(&%s)", photosText(ps))}
		return dtStmt{fmt.Sprintf("Save(mixed) #%d", how), texts[how], func(e *env) outcome {
			switch how {
			case 0:
				return createUsersOf(e, us, func(db *gorm.DB, us *[]dtUser) *gorm.DB { return db.Save(us) })
			case 1:
				return createNotes(e, ns, func(db *gorm.DB, ns *[]dtNote) *gorm.DB { return db.Save(ns) })
			}
			list := slices.Clone(ps)
			return e.write(&list, func(db *gorm.DB) *gorm.DB { return db.Save(&list) })
		}}
	}},

	// ---- a unique key failing in a later part ----
	{3, func(g *dtGen) dtStmt {
		how := g.r.IntN(5)
		var ns []dtNote
		var as []dtAccount
		var us []dtUser
		var ps []dtPhoto
		switch how {
		case 0, 3: // notes: new ones on other databases first, the collider (a stored note's user and slug) last
			n, ok := g.existingNote()
			if !ok {
				n = dtNote{UserID: g.user(), Slug: "dup"}
				ns = append(ns, n) // collides with the last row instead
			}
			n.ID = 0
			ns = append(g.newNotes(g.usersOff(physicalIndex(n.UserID), 3)), ns...)
			if how == 3 { // the collider first: its part is the first
				ns = append([]dtNote{n}, ns...)
			} else {
				ns = append(ns, n)
			}
		case 1: // accounts: new emails hashing to other databases first, a stored email last
			dup := fmt.Sprintf("u%d@x.io", g.r.IntN(30))
			if len(g.s.emails) > 0 {
				dup = g.s.emails[g.r.IntN(len(g.s.emails))]
			} else {
				as = append(as, dtAccount{Email: dup, Balance: 1})
			}
			for i := g.r.IntN(1000); len(as) < 4 && i < 100000; i++ {
				e := fmt.Sprintf("v%d@x.io", i)
				if hashIndex(e) != hashIndex(dup) && !slices.Contains(g.s.emails, e) {
					as = append([]dtAccount{{Email: e, Balance: 2}}, as...)
				}
			}
			as = append(as, dtAccount{Email: dup, Balance: 3})
		case 2: // users: new ones, then a stored user's ID
			for range g.r.IntN(4) + 2 {
				us = append(us, dtUser{Name: g.name(), Age: g.age()})
			}
			us = append(us, dtUser{ID: g.user(), Name: "dup"})
		case 4: // photos: new ones of users on other databases, then a stored photo's ID with its owner
			pid := g.photo()
			owner := g.s.photoOwner[pid]
			if owner == 0 {
				owner = g.user()
			}
			for _, u := range g.usersOff(physicalIndex(owner), 3) {
				ps = append(ps, dtPhoto{UserID: u, URL: "u.jpg"})
			}
			ps = append(ps, dtPhoto{ID: pid, UserID: owner, URL: "dup.jpg"})
		}
		texts := []string{fmt.Sprintf("db.Create(&%s) // the last row's user and slug are stored", notesText(ns)),
			fmt.Sprintf("db.Create(&%s) // the last email is stored", accountsText(as)),
			fmt.Sprintf("db.Create(&%s) // the last ID is stored", usersText(us)),
			fmt.Sprintf("db.Create(&%s) // the first row's user and slug are stored", notesText(ns)),
			fmt.Sprintf("db.Create(&%s) // the last ID is stored", photosText(ps)),
		}
		return dtStmt{fmt.Sprintf("UniqueLater #%d", how), texts[how], func(e *env) outcome {
			switch how {
			case 0, 3:
				return createNotes(e, ns, func(db *gorm.DB, ns *[]dtNote) *gorm.DB { return db.Create(ns) })
			case 1:
				list := slices.Clone(as)
				return e.write(&list, func(db *gorm.DB) *gorm.DB { return db.Create(&list) })
			case 2:
				return createUsersOf(e, us, func(db *gorm.DB, us *[]dtUser) *gorm.DB { return db.Create(us) })
			}
			list := slices.Clone(ps)
			return e.write(&list, func(db *gorm.DB) *gorm.DB { return db.Create(&list) })
		}}
	}},
}

func photosText(ps []dtPhoto) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		if p.ID != 0 {
			parts[i] = fmt.Sprintf("{ID: %d, UserID: %d, URL: %q, Likes: %d}", p.ID, p.UserID, p.URL, p.Likes)
		} else {
			parts[i] = fmt.Sprintf("{UserID: %d, URL: %q}", p.UserID, p.URL)
		}
	}
	return "[]dtPhoto{" + strings.Join(parts, ", ") + "}"
}

func accountsText(as []dtAccount) string {
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = fmt.Sprintf("{Email: %q, Balance: %d}", a.Email, a.Balance)
	}
	return "[]dtAccount{" + strings.Join(parts, ", ") + "}"
}

// groupedRead draws a read over every shard that the plugin merges group by
// group (aggregates, GROUP BY and HAVING, DISTINCT, COUNT(DISTINCT)) or
// orders by nullable and text columns, or refuses: text grouped or ordered
// by a collation that does not compare bytes (the MariaDB and PostgreSQL
// defaults order by locale), an expression over aggregates.
func (g *dtGen) groupedRead() dtStmt {
	at, limit, offset := g.r.IntN(3)+1, g.r.IntN(5)+1, g.r.IntN(3)
	forms := []struct {
		text    string
		ordered bool
		run     func(db *gorm.DB, into *[]map[string]any) *gorm.DB
	}{
		{fmt.Sprintf(`Model(&dtPhoto{}).Select("user_id, count(*) AS n, sum(likes) AS total, avg(likes) AS mean, min(likes) AS lo, max(likes) AS hi").Group("user_id").Having("count(*) >= ?", %d).Order("total desc, user_id").Limit(%d).Offset(%d)`, at, limit, offset), true,
			func(db *gorm.DB, into *[]map[string]any) *gorm.DB {
				return db.Model(&dtPhoto{}).Select("user_id, count(*) AS n, sum(likes) AS total, avg(likes) AS mean, min(likes) AS lo, max(likes) AS hi").
					Group("user_id").Having("count(*) >= ?", at).Order("total desc, user_id").Limit(limit).Offset(offset).Scan(into)
			}},
		{`Model(&dtUser{}).Select("age, count(*) AS n, max(id) AS last").Group("age").Order("age desc")`, true, func(db *gorm.DB, into *[]map[string]any) *gorm.DB {
			return db.Model(&dtUser{}).Select("age, count(*) AS n, max(id) AS last").Group("age").Order("age desc").Scan(into)
		}},
		{`Model(&dtUser{}).Select("avg(age) AS a, sum(age) AS s, count(*) AS n, min(age) AS lo")`, true, func(db *gorm.DB, into *[]map[string]any) *gorm.DB {
			return db.Model(&dtUser{}).Select("avg(age) AS a, sum(age) AS s, count(*) AS n, min(age) AS lo").Scan(into)
		}},
		{`Model(&dtPhoto{}).Distinct("user_id", "likes").Order("likes, user_id")`, true, func(db *gorm.DB, into *[]map[string]any) *gorm.DB {
			return db.Model(&dtPhoto{}).Distinct("user_id", "likes").Order("likes, user_id").Scan(into)
		}},
		{`Model(&dtPhoto{}).Select("count(distinct user_id) AS users")`, true, func(db *gorm.DB, into *[]map[string]any) *gorm.DB {
			return db.Model(&dtPhoto{}).Select("count(distinct user_id) AS users").Scan(into)
		}},
		{`Model(&dtUser{}).Select("name, count(*) AS n").Group("name").Having("count(*) > 1")`, false, func(db *gorm.DB, into *[]map[string]any) *gorm.DB {
			return db.Model(&dtUser{}).Select("name, count(*) AS n").Group("name").Having("count(*) > 1").Scan(into)
		}},
		{fmt.Sprintf(`Model(&dtUser{}).Select("id, name, age").Order("age desc, name, id").Limit(%d)`, limit), true, func(db *gorm.DB, into *[]map[string]any) *gorm.DB {
			return db.Model(&dtUser{}).Select("id, name, age").Order("age desc, name, id").Limit(limit).Find(into)
		}},
		{`Model(&dtAccount{}).Select("max(balance) - min(balance) AS spread")`, true, func(db *gorm.DB, into *[]map[string]any) *gorm.DB {
			return db.Model(&dtAccount{}).Select("max(balance) - min(balance) AS spread").Scan(into)
		}},
	}
	how := g.r.IntN(len(forms))
	f := forms[how]
	counts := []string{"Group", "Distinct"}
	if g.r.IntN(4) == 0 { // GORM's Count of a grouped query and of DISTINCT values
		which := g.r.IntN(2)
		return dtStmt{fmt.Sprintf("AllShards grouped Count #%d", which), fmt.Sprintf(`db.Clauses(shardid.AllShards()).Model(&dtPhoto{}).%s("user_id").Count(&n)`, counts[which]), func(e *env) outcome {
			var n int64
			db := e.db.Clauses(shardid.AllShards()).Model(&dtPhoto{})
			if which == 0 {
				return res(db.Group("user_id").Count(&n), n, true)
			}
			return res(db.Distinct("user_id").Count(&n), n, true)
		}}
	}
	return dtStmt{fmt.Sprintf("AllShards grouped #%d", how), "db.Clauses(shardid.AllShards())." + f.text + ".Scan(&rows) (Find for #6)", func(e *env) outcome {
		var rows []map[string]any
		tx := f.run(e.db.Clauses(shardid.AllShards()), &rows)
		return res(tx, typedRows(rows), f.ordered)
	}}
}

// typedRows writes each row's values with their Go types, which a merge
// must keep (decimal text stays text, a count an integer).
func typedRows(rows []map[string]any) []string {
	out := make([]string, len(rows))
	for i, row := range rows {
		keys := make([]string, 0, len(row))
		for k := range row {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			out[i] += fmt.Sprintf("%s:%s(%T) ", k, cell(k, row[k]), row[k])
		}
	}
	return out
}
