package integration

import (
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shardid/shardid"
)

// dtStmt is one generated statement: what it is, as Go-like text, and how to
// run it on either side.
type dtStmt struct {
	op, text string
	run      func(e *env) outcome
}

// dtState is what the generator knows of the rows, from the plugin's run.
type dtState struct {
	users, photos, profiles, accounts, labels, tags []int64
	photoOwner, tagOwner                            map[int64]int64
	emails, docs                                    []string
	notes                                           []int64
	noteOwner                                       map[int64]int64
	noteSlug                                        map[int64]string
	noteLikes                                       map[int64]int
}

// dtGen draws statements.
type dtGen struct {
	r       *rand.Rand
	s       dtState
	backend string
	ops     []dtOp
	total   int
	skip    []string // prefixes of kinds not to draw
}

type dtOp struct {
	weight int
	make   func(g *dtGen) dtStmt
}

// newGen draws from dtOps; skip lists prefixes of the kinds (dtStmt.op) to
// leave out, comma-separated.
func newGen(r *rand.Rand, backend, skip string) *dtGen {
	g := &dtGen{r: r, backend: backend, ops: slices.Concat(dtOps, dtFormOps)}
	for p := range strings.SplitSeq(skip, ",") {
		if p = strings.TrimSpace(p); p != "" {
			g.skip = append(g.skip, p)
		}
	}
	for _, op := range g.ops {
		g.total += op.weight
	}
	return g
}

// field reads column col of a canonical row.
func field(row, col string) string {
	for part := range strings.SplitSeq(row, " ") {
		if v, ok := strings.CutPrefix(part, col+"="); ok {
			return v
		}
	}
	return ""
}

func ids(rows []string) []int64 {
	var out []int64
	for _, row := range rows {
		if n, err := strconv.ParseInt(field(row, "id"), 10, 64); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// learn takes the IDs and keys of the rows the plugin's run holds.
func (g *dtGen) learn(s snapshot) {
	g.s = dtState{photoOwner: map[int64]int64{}, tagOwner: map[int64]int64{}, noteOwner: map[int64]int64{}, noteSlug: map[int64]string{}, noteLikes: map[int64]int{}}
	g.s.users = ids(s.union(0))
	for _, row := range s.union(1) {
		id, _ := strconv.ParseInt(field(row, "id"), 10, 64)
		owner, _ := strconv.ParseInt(field(row, "user_id"), 10, 64)
		g.s.photos = append(g.s.photos, id)
		g.s.photoOwner[id] = owner
	}
	g.s.profiles = ids(s.union(2))
	for _, row := range s.union(3) {
		g.s.accounts = append(g.s.accounts, mustInt(field(row, "id")))
		g.s.emails = append(g.s.emails, field(row, "email"))
	}
	for _, row := range s.union(4) {
		g.s.docs = append(g.s.docs, field(row, "id"))
	}
	g.s.labels = ids(s.union(5))
	for _, row := range s.union(7) {
		id := mustInt(field(row, "id"))
		g.s.tags = append(g.s.tags, id)
		g.s.tagOwner[id] = mustInt(field(row, "owner_id"))
	}
	for _, row := range s.union(9) {
		id := mustInt(field(row, "id"))
		g.s.notes = append(g.s.notes, id)
		g.s.noteOwner[id] = mustInt(field(row, "user_id"))
		g.s.noteSlug[id] = field(row, "slug")
		g.s.noteLikes[id] = int(mustInt(field(row, "likes")))
	}
	// Creation order (IDs are time-ordered), so that a seed replays alike.
	for _, list := range [][]int64{g.s.users, g.s.photos, g.s.profiles, g.s.labels, g.s.tags, g.s.notes} {
		slices.Sort(list)
	}
	slices.Sort(g.s.docs)
	slices.Sort(g.s.emails)
}

func mustInt(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }

// next draws a statement of a kind not skipped.
func (g *dtGen) next() dtStmt {
	for {
		s := g.draw()
		if !slices.ContainsFunc(g.skip, func(p string) bool { return strings.HasPrefix(s.op, p) }) {
			return s
		}
	}
}

func (g *dtGen) draw() dtStmt {
	n := g.r.IntN(g.total)
	for _, op := range g.ops {
		if n < op.weight {
			return op.make(g)
		}
		n -= op.weight
	}
	panic("unreachable")
}

// pick returns a random element of list, mostly; sometimes (and when list is
// empty) an ID that no row has: a neighbour of a real one (same shard), or a
// small number.
func (g *dtGen) pick(list []int64) int64 {
	if len(list) == 0 || g.r.IntN(12) == 0 {
		if len(list) > 0 && g.r.IntN(2) == 0 {
			if n := list[g.r.IntN(len(list))] ^ 1; n > 0 {
				return n // never 0: Save and FirstOrCreate of a zero key create, which the reference could not mirror
			}
		}
		return int64(g.r.IntN(3) + 1)
	}
	return list[g.r.IntN(len(list))]
}

func (g *dtGen) picks(list []int64, n int) []int64 {
	out := make([]int64, 1+g.r.IntN(n))
	for i := range out {
		out[i] = g.pick(list)
	}
	return out
}

func (g *dtGen) user() int64  { return g.pick(g.s.users) }
func (g *dtGen) photo() int64 { return g.pick(g.s.photos) }
func (g *dtGen) label() int64 { return g.pick(g.s.labels) }

// email is mostly one that a row has; sometimes it differs from one only in
// case, which dtAccount's BeforeCreate hook folds (and MariaDB's default
// collation ignores).
func (g *dtGen) email() string {
	e := fmt.Sprintf("u%d@x.io", g.r.IntN(30))
	if len(g.s.emails) > 0 && g.r.IntN(3) > 0 {
		e = g.s.emails[g.r.IntN(len(g.s.emails))]
	}
	if g.r.IntN(8) == 0 {
		e = strings.ToUpper(e[:1]) + e[1:]
	}
	return e
}

func (g *dtGen) doc() string {
	if len(g.s.docs) > 0 && g.r.IntN(8) > 0 {
		return g.s.docs[g.r.IntN(len(g.s.docs))]
	}
	return "0190a0b0-0000-7000-8000-000000000001"
}

var dtNames = []string{"ann", "bob", "cy", "dan", "eve"}

func (g *dtGen) name() string { return dtNames[g.r.IntN(len(dtNames))] }
func (g *dtGen) age() int     { return g.r.IntN(60) + 10 }

// returning reports whether the backend's GORM dialector builds RETURNING.
func (g *dtGen) returning() bool { return g.backend != "mariadb" }

// q is the text of an int64 list.
func q(list []int64) string {
	parts := make([]string, len(list))
	for i, n := range list {
		parts[i] = strconv.FormatInt(n, 10)
	}
	return "[]int64{" + strings.Join(parts, ", ") + "}"
}

// find runs a query into a fresh slice of T.
func find[T any](ordered bool, do func(db *gorm.DB, dest *[]T) *gorm.DB) func(e *env) outcome {
	return func(e *env) outcome {
		var dest []T
		return res(do(e.db, &dest), &dest, ordered)
	}
}

// one runs a query into a fresh T.
func one[T any](do func(db *gorm.DB, dest *T) *gorm.DB) func(e *env) outcome {
	return func(e *env) outcome {
		var dest T
		return res(do(e.db, &dest), &dest, true)
	}
}

// exec runs a statement that returns nothing but RowsAffected.
func execOnly(do func(db *gorm.DB) *gorm.DB) func(e *env) outcome {
	return func(e *env) outcome { return res(do(e.db), nil, true) }
}

var errRollback = errors.New("rollback on purpose")

var dtOps = []dtOp{
	// ---- creates ----
	{6, func(g *dtGen) dtStmt {
		name, age := g.name(), g.age()
		return dtStmt{"Create(user)", fmt.Sprintf("db.Create(&dtUser{Name: %q, Age: %d})", name, age), func(e *env) outcome {
			u := dtUser{Name: name, Age: age}
			return e.write(&u, func(db *gorm.DB) *gorm.DB { return db.Create(&u) })
		}}
	}},
	{4, func(g *dtGen) dtStmt {
		name, n := g.name(), g.r.IntN(3)+1
		bio := "hi"
		if g.r.IntN(4) == 0 {
			bio = "audit" // its AfterCreate writes a dtLabel
		}
		return dtStmt{"Create(user+assocs)", fmt.Sprintf("db.Create(&dtUser{Name: %q, Photos: %d photos, Profile: &dtProfile{Bio: %q}})", name, n, bio), func(e *env) outcome {
			u := dtUser{Name: name, Profile: &dtProfile{Bio: bio}}
			for i := range n {
				u.Photos = append(u.Photos, dtPhoto{URL: fmt.Sprintf("p%d.jpg", i)})
			}
			return e.write(&u, func(db *gorm.DB) *gorm.DB { return db.Create(&u) })
		}}
	}},
	{2, func(g *dtGen) dtStmt {
		name, label := g.name(), g.label()
		return dtStmt{"Create(user+many2many)", fmt.Sprintf("db.Create(&dtUser{Name: %q, Labels: []dtLabel{{ID: %d}, {Name: \"new\"}}})", name, label), func(e *env) outcome {
			u := dtUser{Name: name, Labels: []dtLabel{{ID: label, Name: "old"}, {Name: "new"}}}
			return e.write(&u, func(db *gorm.DB) *gorm.DB { return db.Create(&u) })
		}}
	}},
	{4, func(g *dtGen) dtStmt {
		n, batch := g.r.IntN(5)+2, g.r.IntN(3)+1
		inBatches := g.r.IntN(2) == 0
		text := fmt.Sprintf("db.Create(&[]dtUser{%d users})", n)
		if inBatches {
			text = fmt.Sprintf("db.CreateInBatches(&[]dtUser{%d users}, %d)", n, batch)
		}
		return dtStmt{"Create(users)", text, func(e *env) outcome {
			us := make([]dtUser, n)
			for i := range us {
				us[i] = dtUser{Name: dtNames[i%len(dtNames)], Age: 20 + i}
			}
			return e.write(&us, func(db *gorm.DB) *gorm.DB {
				if inBatches {
					return db.CreateInBatches(&us, batch)
				}
				return db.Create(&us)
			})
		}}
	}},
	{6, func(g *dtGen) dtStmt {
		uid := g.user()
		return dtStmt{"Create(photo)", fmt.Sprintf("db.Create(&dtPhoto{UserID: %d, URL: \"a.jpg\"})", uid), func(e *env) outcome {
			p := dtPhoto{UserID: uid, URL: "a.jpg"}
			return e.write(&p, func(db *gorm.DB) *gorm.DB { return db.Create(&p) })
		}}
	}},
	{3, func(g *dtGen) dtStmt {
		owners := g.picks(g.s.users, 3)
		return dtStmt{"Create(photos)", fmt.Sprintf("db.Create(&[]dtPhoto{ UserID of each: %s })", q(owners)), func(e *env) outcome {
			ps := make([]dtPhoto, len(owners))
			for i, o := range owners {
				ps[i] = dtPhoto{UserID: o, URL: "b.jpg"}
			}
			return e.write(&ps, func(db *gorm.DB) *gorm.DB { return db.Create(&ps) })
		}}
	}},
	{2, func(g *dtGen) dtStmt {
		name := g.name()
		return dtStmt{"Save(new user)", fmt.Sprintf("db.Save(&dtUser{Name: %q})", name), func(e *env) outcome {
			u := dtUser{Name: name}
			return e.write(&u, func(db *gorm.DB) *gorm.DB {
				if e.ref {
					// Save of a zero key is Create (finisher_api.go); with the key preset it would update first.
					return db.Create(&u)
				}
				return db.Save(&u)
			})
		}}
	}},
	{3, func(g *dtGen) dtStmt {
		uid := g.user()
		return dtStmt{"FirstOrCreate(photo)", fmt.Sprintf("db.Clauses(shardid.ByID(%d)).Where(dtPhoto{UserID: %d, URL: \"f.jpg\"}).FirstOrCreate(&p)", uid, uid), func(e *env) outcome {
			var p dtPhoto
			return e.write(&p, func(db *gorm.DB) *gorm.DB {
				return db.Clauses(shardid.ByID(uid)).Where(dtPhoto{UserID: uid, URL: "f.jpg"}).FirstOrCreate(&p)
			})
		}}
	}},
	{3, func(g *dtGen) dtStmt {
		email, bal := g.email(), g.r.IntN(100)
		return dtStmt{"Create(account)", fmt.Sprintf("db.Create(&dtAccount{Email: %q, Balance: %d})", email, bal), func(e *env) outcome {
			a := dtAccount{Email: email, Balance: bal}
			return e.write(&a, func(db *gorm.DB) *gorm.DB { return db.Create(&a) })
		}}
	}},
	{2, func(g *dtGen) dtStmt {
		email := g.email()
		return dtStmt{"FirstOrCreate(account)", fmt.Sprintf("db.Where(dtAccount{Email: %q}).FirstOrCreate(&a)", email), func(e *env) outcome {
			var a dtAccount
			return e.write(&a, func(db *gorm.DB) *gorm.DB { return db.Where(dtAccount{Email: email}).FirstOrCreate(&a) })
		}}
	}},
	{3, func(g *dtGen) dtStmt {
		email, bal := g.email(), g.r.IntN(100)
		return dtStmt{"Upsert(account)", fmt.Sprintf("db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: \"email\"}}, DoUpdates: clause.AssignmentColumns([]string{\"balance\"})}).Create(&dtAccount{Email: %q, Balance: %d})", email, bal), func(e *env) outcome {
			a := dtAccount{Email: email, Balance: bal}
			return e.write(&a, func(db *gorm.DB) *gorm.DB {
				return db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "email"}}, DoUpdates: clause.AssignmentColumns([]string{"balance"})}).Create(&a)
			})
		}}
	}},
	{2, func(g *dtGen) dtStmt {
		uid, name := g.user(), g.name()
		return dtStmt{"Upsert(user by id)", fmt.Sprintf("db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&dtUser{ID: %d, Name: %q})", uid, name), func(e *env) outcome {
			u := dtUser{ID: uid, Name: name}
			return e.write(&u, func(db *gorm.DB) *gorm.DB { return db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&u) })
		}}
	}},
	{3, func(g *dtGen) dtStmt {
		n := g.r.IntN(3) + 1
		return dtStmt{"Create(docs)", fmt.Sprintf("db.Create(&[]dtDoc{%d docs})", n), func(e *env) outcome {
			ds := make([]dtDoc, n)
			for i := range ds {
				ds[i] = dtDoc{Title: "t", Pages: i}
			}
			return e.write(&ds, func(db *gorm.DB) *gorm.DB { return db.Create(&ds) })
		}}
	}},
	{3, func(g *dtGen) dtStmt {
		name := g.name()
		return dtStmt{"Create(label)", fmt.Sprintf("db.Create(&dtLabel{Name: %q})", name), func(e *env) outcome {
			l := dtLabel{Name: name}
			return e.write(&l, func(db *gorm.DB) *gorm.DB { return db.Create(&l) })
		}}
	}},

	// ---- queries ----
	{4, func(g *dtGen) dtStmt {
		id := g.user()
		how := []string{"First", "Take", "Last"}[g.r.IntN(3)]
		return dtStmt{how + "(user, id)", fmt.Sprintf("db.%s(&u, %d)", how, id), one(func(db *gorm.DB, u *dtUser) *gorm.DB {
			switch how {
			case "First":
				return db.First(u, id)
			case "Take":
				return db.Take(u, id)
			}
			return db.Last(u, id)
		})}
	}},
	{3, func(g *dtGen) dtStmt {
		list := g.picks(g.s.users, 4)
		return dtStmt{"Find(users, ids)", fmt.Sprintf("db.Find(&us, %s)", q(list)), find(false, func(db *gorm.DB, us *[]dtUser) *gorm.DB { return db.Find(us, list) })}
	}},
	{3, func(g *dtGen) dtStmt {
		id := g.user()
		form := g.r.IntN(4)
		texts := []string{`db.Where("id = ?", %d).Find(&us)`, `db.Where(&dtUser{ID: %d}).Find(&us)`, `db.Where(map[string]any{"id": %d}).Find(&us)`, `db.Find(&us, "id = ?", %d)`}
		return dtStmt{fmt.Sprintf("Where(id) forms #%d", form), fmt.Sprintf(texts[form], id), find(false, func(db *gorm.DB, us *[]dtUser) *gorm.DB {
			switch form {
			case 0:
				return db.Where("id = ?", id).Find(us)
			case 1:
				return db.Where(&dtUser{ID: id}).Find(us)
			case 2:
				return db.Where(map[string]any{"id": id}).Find(us)
			}
			return db.Find(us, "id = ?", id)
		})}
	}},
	{3, func(g *dtGen) dtStmt {
		list := g.picks(g.s.users, 5)
		desc := g.r.IntN(2) == 0
		order := "id"
		if desc {
			order = "id desc"
		}
		limit := g.r.IntN(4) + 1
		return dtStmt{"Where(IN).Order.Limit", fmt.Sprintf("db.Where(\"id IN ?\", %s).Order(%q).Limit(%d).Find(&us)", q(list), order, limit), find(true, func(db *gorm.DB, us *[]dtUser) *gorm.DB {
			return db.Where("id IN ?", list).Order(order).Limit(limit).Find(us)
		})}
	}},
	{2, func(g *dtGen) dtStmt {
		a, b := g.user(), g.user()
		return dtStmt{"Where.Or", fmt.Sprintf("db.Where(\"id = ?\", %d).Or(\"id = ?\", %d).Find(&us)", a, b), find(false, func(db *gorm.DB, us *[]dtUser) *gorm.DB {
			return db.Where("id = ?", a).Or("id = ?", b).Find(us)
		})}
	}},
	{2, func(g *dtGen) dtStmt {
		list, name := g.picks(g.s.users, 4), g.name()
		return dtStmt{"Where(IN).Not", fmt.Sprintf("db.Where(\"id IN ?\", %s).Not(\"name = ?\", %q).Find(&us)", q(list), name), find(false, func(db *gorm.DB, us *[]dtUser) *gorm.DB {
			return db.Where("id IN ?", list).Not("name = ?", name).Find(us)
		})}
	}},
	{4, func(g *dtGen) dtStmt {
		desc := g.r.IntN(2) == 0
		order := "id"
		if desc {
			order = "id desc"
		}
		limit, offset := g.r.IntN(5)+1, g.r.IntN(4)
		return dtStmt{"AllShards.Order.Limit.Offset", fmt.Sprintf("db.Clauses(shardid.AllShards()).Order(%q).Limit(%d).Offset(%d).Find(&us)", order, limit, offset), find(true, func(db *gorm.DB, us *[]dtUser) *gorm.DB {
			return db.Clauses(shardid.AllShards()).Order(order).Limit(limit).Offset(offset).Find(us)
		})}
	}},
	{3, func(g *dtGen) dtStmt {
		age := g.age()
		return dtStmt{"AllShards.Where", fmt.Sprintf("db.Clauses(shardid.AllShards()).Where(\"age > ?\", %d).Find(&us)", age), find(false, func(db *gorm.DB, us *[]dtUser) *gorm.DB {
			return db.Clauses(shardid.AllShards()).Where("age > ?", age).Find(us)
		})}
	}},
	{3, func(g *dtGen) dtStmt {
		unscoped := g.r.IntN(3) == 0
		return dtStmt{"AllShards.Count", fmt.Sprintf("db.Clauses(shardid.AllShards()).Model(&dtPhoto{}) (Unscoped: %v) .Count(&n)", unscoped), func(e *env) outcome {
			var n int64
			db := e.db.Clauses(shardid.AllShards())
			if unscoped {
				db = db.Unscoped()
			}
			return res(db.Model(&dtPhoto{}).Count(&n), n, true)
		}}
	}},
	{2, func(g *dtGen) dtStmt {
		return dtStmt{"AllShards.Pluck", "db.Clauses(shardid.AllShards()).Model(&dtUser{}).Pluck(\"name\", &names)", find(false, func(db *gorm.DB, names *[]string) *gorm.DB {
			return db.Clauses(shardid.AllShards()).Model(&dtUser{}).Pluck("name", names)
		})}
	}},
	{2, func(g *dtGen) dtStmt {
		list := g.picks(g.s.users, 4)
		return dtStmt{"Count(IN)", fmt.Sprintf("db.Model(&dtUser{}).Where(\"id IN ?\", %s).Count(&n)", q(list)), func(e *env) outcome {
			var n int64
			return res(e.db.Model(&dtUser{}).Where("id IN ?", list).Count(&n), n, true)
		}}
	}},
	{4, func(g *dtGen) dtStmt {
		uid := g.user()
		byClause := g.r.IntN(3) > 0
		text := fmt.Sprintf("db.Where(\"user_id = ?\", %d).Find(&ps)", uid)
		if byClause {
			text = fmt.Sprintf("db.Clauses(shardid.ByID(%d)).Where(\"user_id = ?\", %d).Find(&ps)", uid, uid)
		}
		return dtStmt{"photos by owner", text, find(false, func(db *gorm.DB, ps *[]dtPhoto) *gorm.DB {
			if byClause {
				db = db.Clauses(shardid.ByID(uid))
			}
			return db.Where("user_id = ?", uid).Find(ps)
		})}
	}},
	{4, func(g *dtGen) dtStmt {
		id := g.user()
		what := []string{"Photos", "Profile", "Labels"}[g.r.IntN(3)]
		return dtStmt{"Preload(" + what + ")", fmt.Sprintf("db.Preload(%q).First(&u, %d)", what, id), one(func(db *gorm.DB, u *dtUser) *gorm.DB {
			return db.Preload(what).First(u, id)
		})}
	}},
	{2, func(g *dtGen) dtStmt {
		return dtStmt{"AllShards.Preload(Photos)", "db.Clauses(shardid.AllShards()).Preload(\"Photos\").Find(&us)", find(false, func(db *gorm.DB, us *[]dtUser) *gorm.DB {
			return db.Clauses(shardid.AllShards()).Preload("Photos").Find(us)
		})}
	}},
	{1, func(g *dtGen) dtStmt {
		return dtStmt{"AllShards.Preload(Associations) of photos", "db.Clauses(shardid.AllShards()).Preload(clause.Associations).Find(&ps)", find(false, func(db *gorm.DB, ps *[]dtPhoto) *gorm.DB {
			return db.Clauses(shardid.AllShards()).Preload(clause.Associations).Find(ps) // a photo's only relation is the one back to its user's has-many
		})}
	}},
	{3, func(g *dtGen) dtStmt {
		id := g.user()
		return dtStmt{"Joins(Profile)", fmt.Sprintf("db.Joins(\"Profile\").First(&u, %d)", id), one(func(db *gorm.DB, u *dtUser) *gorm.DB {
			return db.Joins("Profile").First(u, "dt_users.id = ?", id)
		})}
	}},
	{2, func(g *dtGen) dtStmt {
		list := g.picks(g.s.users, 3)
		return dtStmt{"Select.Find(ids)", fmt.Sprintf("db.Select(\"id\", \"name\").Find(&us, %s)", q(list)), find(false, func(db *gorm.DB, us *[]dtUser) *gorm.DB {
			return db.Select("id", "name").Find(us, list)
		})}
	}},
	{2, func(g *dtGen) dtStmt {
		id := g.user()
		type row struct {
			ID   int64
			Name string
		}
		return dtStmt{"Scan(struct)", fmt.Sprintf("db.Model(&dtUser{}).Select(\"id, name\").Where(\"id = ?\", %d).Scan(&row)", id), one(func(db *gorm.DB, r *row) *gorm.DB {
			return db.Model(&dtUser{}).Select("id, name").Where("id = ?", id).Scan(r)
		})}
	}},
	{2, func(g *dtGen) dtStmt {
		id := g.user()
		return dtStmt{"Find(map)", fmt.Sprintf("db.Model(&dtUser{}).Select(\"id, name, age\").Where(\"id = ?\", %d).Find(&[]map[string]any{})", id), find(false, func(db *gorm.DB, m *[]map[string]any) *gorm.DB {
			return db.Model(&dtUser{}).Select("id, name, age").Where("id = ?", id).Find(m)
		})}
	}},
	{2, func(g *dtGen) dtStmt {
		id := g.user()
		return dtStmt{"Unscoped.First", fmt.Sprintf("db.Unscoped().First(&u, %d)", id), one(func(db *gorm.DB, u *dtUser) *gorm.DB { return db.Unscoped().First(u, id) })}
	}},
	{2, func(g *dtGen) dtStmt {
		age := g.age()
		return dtStmt{"Scopes+AllShards", fmt.Sprintf("db.Scopes(olderThan(%d), allShards).Order(\"id\").Find(&us)", age), find(true, func(db *gorm.DB, us *[]dtUser) *gorm.DB {
			older := func(db *gorm.DB) *gorm.DB { return db.Where("age > ?", age) }
			all := func(db *gorm.DB) *gorm.DB { return db.Clauses(shardid.AllShards()) }
			return db.Scopes(older, all).Order("id").Find(us)
		})}
	}},
	{2, func(g *dtGen) dtStmt {
		size := g.r.IntN(3) + 1
		return dtStmt{"AllShards.FindInBatches", fmt.Sprintf("db.Clauses(shardid.AllShards()).FindInBatches(&batch, %d, collect)", size), func(e *env) outcome {
			var batch, all []dtUser
			tx := e.db.Clauses(shardid.AllShards()).FindInBatches(&batch, size, func(tx *gorm.DB, _ int) error {
				all = append(all, batch...)
				return nil
			})
			return res(tx, &all, true)
		}}
	}},
	{2, func(g *dtGen) dtStmt {
		pid := g.photo()
		return dtStmt{"subquery", fmt.Sprintf("db.Where(\"id IN (?)\", db.Model(&dtPhoto{}).Select(\"user_id\").Where(\"id = ?\", %d)).Find(&us)", pid), find(false, func(db *gorm.DB, us *[]dtUser) *gorm.DB {
			return db.Where("id IN (?)", db.Model(&dtPhoto{}).Select("user_id").Where("id = ?", pid)).Find(us)
		})}
	}},
	{3, func(g *dtGen) dtStmt {
		email := g.email()
		form := g.r.IntN(3)
		texts := []string{`db.Where("email = ?", %q).First(&a)`, `db.Where(&dtAccount{Email: %q}).First(&a)`, `db.Clauses(shardid.ByKey(%[1]q)).Where("email = ?", %[1]q).Where("balance >= 0").Find(&as)`}
		return dtStmt{fmt.Sprintf("account by email #%d", form), fmt.Sprintf(texts[form], email), find(false, func(db *gorm.DB, as *[]dtAccount) *gorm.DB {
			switch form {
			case 0:
				return db.Where("email = ?", email).Limit(1).Find(as)
			case 1:
				return db.Where(&dtAccount{Email: email}).Limit(1).Find(as)
			}
			return db.Clauses(shardid.ByKey(email)).Where("email = ?", email).Where("balance >= 0").Find(as)
		})}
	}},
	{3, func(g *dtGen) dtStmt {
		id := g.doc()
		return dtStmt{"doc by uuid", fmt.Sprintf("db.First(&d, \"id = ?\", %q)", id), one(func(db *gorm.DB, d *dtDoc) *gorm.DB { return db.First(d, "id = ?", id) })}
	}},
	{2, func(g *dtGen) dtStmt {
		return dtStmt{"labels", "db.Order(\"id\").Find(&ls)", find(true, func(db *gorm.DB, ls *[]dtLabel) *gorm.DB { return db.Order("id").Find(ls) })}
	}},
	{1, func(g *dtGen) dtStmt {
		return dtStmt{"Raw(labels)", "db.Raw(\"SELECT count(*) FROM dt_labels\").Scan(&n)", func(e *env) outcome {
			var n int64
			return res(e.db.Raw("SELECT count(*) FROM dt_labels").Scan(&n), n, true)
		}}
	}},
	{3, func(g *dtGen) dtStmt {
		id := g.user()
		withClause := g.r.IntN(2) == 0
		text := fmt.Sprintf("db.Raw(\"SELECT id, name FROM dt_users WHERE id = ?\", %d).Scan(&rows)", id)
		if withClause {
			text = fmt.Sprintf("db.Clauses(shardid.ByID(%d)).Raw(\"SELECT id, name FROM dt_photos WHERE user_id = ?\", %d).Scan(&rows)", id, id)
		}
		type row struct {
			ID   int64
			Name string
		}
		return dtStmt{"Raw.Scan", text, find(false, func(db *gorm.DB, rows *[]row) *gorm.DB {
			if withClause {
				return db.Clauses(shardid.ByID(id)).Raw("SELECT id, url AS name FROM dt_photos WHERE user_id = ?", id).Scan(rows)
			}
			return db.Raw("SELECT id, name FROM dt_users WHERE id = ?", id).Scan(rows)
		})}
	}},

	{2, func(g *dtGen) dtStmt {
		how := g.r.IntN(5)
		texts := []string{`db.Clauses(shardid.AllShards()).Model(&dtUser{}).Select("max(age)").Scan(&n)`,
			`db.Clauses(shardid.AllShards()).Model(&dtUser{}).Select("name, count(*) AS n").Group("name").Scan(&rows)`,
			`db.Clauses(shardid.AllShards()).Model(&dtUser{}).Distinct("name").Pluck("name", &names)`,
			`db.Clauses(shardid.AllShards()).Order("age desc, id").Limit(3).Find(&us)`,
			`db.Clauses(shardid.AllShards()).Model(&dtPhoto{}).Select("sum(likes)").Scan(&n)`}
		type group struct {
			Name string
			N    int64
		}
		return dtStmt{fmt.Sprintf("AllShards aggregate #%d", how), texts[how], func(e *env) outcome {
			db := e.db.Clauses(shardid.AllShards())
			switch how {
			case 0:
				var n *int64
				return res(db.Model(&dtUser{}).Select("max(age)").Scan(&n), n, true)
			case 1:
				var rows []group
				return res(db.Model(&dtUser{}).Select("name, count(*) AS n").Group("name").Scan(&rows), &rows, false)
			case 2:
				var names []string
				return res(db.Model(&dtUser{}).Distinct("name").Pluck("name", &names), &names, false)
			case 3:
				var us []dtUser
				return res(db.Order("age desc, id").Limit(3).Find(&us), &us, true)
			}
			var n *int64
			return res(db.Model(&dtPhoto{}).Select("sum(likes)").Scan(&n), n, true)
		}}
	}},
	{3, func(g *dtGen) dtStmt { return g.groupedRead() }},
	{2, func(g *dtGen) dtStmt {
		how := g.r.IntN(4)
		texts := []string{`db.Clauses(shardid.AllShards()).First(&u)`, `db.Clauses(shardid.AllShards()).Last(&u)`,
			`db.Clauses(shardid.AllShards()).Joins("Profile").Order("dt_users.id").Find(&us)`, `db.Clauses(shardid.AllShards()).Preload("Labels").Find(&us)`}
		return dtStmt{fmt.Sprintf("AllShards First/Last/Joins/Preload #%d", how), texts[how], find(how < 3, func(db *gorm.DB, us *[]dtUser) *gorm.DB {
			db = db.Clauses(shardid.AllShards())
			switch how {
			case 0:
				return db.Limit(1).Order("id").Find(us)
			case 1:
				return db.Limit(1).Order("id desc").Find(us)
			case 2:
				return db.Joins("Profile").Order("dt_users.id").Find(us)
			}
			return db.Preload("Labels").Find(us)
		})}
	}},
	{3, func(g *dtGen) dtStmt {
		id := g.user()
		how := g.r.IntN(5)
		texts := []string{`db.Where("id = ?", &id).Find(&us) // id = %d`, `db.Where("id = ?", shardid.ID(%d)).Find(&us)`,
			`db.Session(&gorm.Session{PrepareStmt: true}).First(&u, %d)`, `db.Raw("SELECT id, name FROM /* c */ dt_users WHERE id = ?", %d).Scan(&us)`,
			`db.Clauses(shardid.ByID(%d)).Model(&dtPhoto{}).Where("user_id = ?", id).Pluck("id", &ids)`}
		return dtStmt{fmt.Sprintf("condition value forms #%d", how), fmt.Sprintf(texts[how], id), func(e *env) outcome {
			switch how {
			case 0:
				var us []dtUser
				x := id
				return res(e.db.Where("id = ?", &x).Find(&us), &us, false)
			case 1:
				var us []dtUser
				return res(e.db.Where("id = ?", shardid.ID(id)).Find(&us), &us, false)
			case 2:
				var u dtUser
				return res(e.db.Session(&gorm.Session{PrepareStmt: true}).First(&u, id), &u, true)
			case 3:
				var us []dtUser
				return res(e.db.Raw("SELECT id, name FROM /* c */ dt_users WHERE id = ?", id).Scan(&us), &us, false)
			}
			var list []int64
			return res(e.db.Clauses(shardid.ByID(id)).Model(&dtPhoto{}).Where("user_id = ?", id).Pluck("id", &list), &list, false)
		}}
	}},
	{2, func(g *dtGen) dtStmt {
		uid := g.user()
		return dtStmt{"ByID.FindInBatches", fmt.Sprintf("db.Clauses(shardid.ByID(%d)).Where(\"user_id = ?\", %d).FindInBatches(&batch, 2, collect)", uid, uid), func(e *env) outcome {
			var batch, all []dtPhoto
			tx := e.db.Clauses(shardid.ByID(uid)).Where("user_id = ?", uid).FindInBatches(&batch, 2, func(*gorm.DB, int) error {
				all = append(all, batch...)
				return nil
			})
			return res(tx, &all, true)
		}}
	}},
	{3, func(g *dtGen) dtStmt {
		id, uid := g.user(), g.user()
		name := g.name()
		how := g.r.IntN(9)
		texts := []string{
			fmt.Sprintf(`db.Table("dt_users").Where("id = ?", %d).Find(&[]map[string]any{})`, id),
			fmt.Sprintf(`db.Where("id = @id", sql.Named("id", %d)).Find(&us)`, id),
			fmt.Sprintf(`db.Where("id IN ?", []shardid.ID{%d, %d}).Find(&us)`, id, uid),
			fmt.Sprintf(`db.Where("id = ?", uint64(%d)).Find(&us)`, id),
			fmt.Sprintf(`db.Where("id BETWEEN ? AND ?", %d, %d).Find(&us)`, id, id),
			fmt.Sprintf(`db.Where("name = ? AND id = ?", %q, %d).Find(&us)`, name, id),
			fmt.Sprintf(`db.Not(map[string]any{"id": []int64{%d}}).Where("id IN ?", []int64{%d, %d}).Find(&us)`, id, id, uid),
			fmt.Sprintf(`db.Preload("Photos", "likes >= ?", 0).Preload("Profile").Find(&us, %d)`, id),
			fmt.Sprintf(`db.Model(&[]dtUser{{ID: %d}, {ID: %d}}).Association("Photos").Count()`, id, uid),
		}
		return dtStmt{fmt.Sprintf("query forms #%d", how), texts[how], func(e *env) outcome {
			var us []dtUser
			db := e.db
			switch how {
			case 0:
				var rows []map[string]any
				return res(db.Table("dt_users").Select("id", "name", "age").Where("id = ?", id).Find(&rows), &rows, false)
			case 1:
				return res(db.Where("id = @id", sql.Named("id", id)).Find(&us), &us, false)
			case 2:
				return res(db.Where("id IN ?", []shardid.ID{shardid.ID(id), shardid.ID(uid)}).Find(&us), &us, false)
			case 3:
				return res(db.Where("id = ?", uint64(id)).Find(&us), &us, false)
			case 4:
				return res(db.Where("id BETWEEN ? AND ?", id, id).Find(&us), &us, false)
			case 5:
				return res(db.Where("name = ? AND id = ?", name, id).Find(&us), &us, false)
			case 6:
				return res(db.Not(map[string]any{"id": []int64{id}}).Where("id IN ?", []int64{id, uid}).Find(&us), &us, false)
			case 7:
				return res(db.Preload("Photos", "likes >= ?", 0).Preload("Profile").Find(&us, id), &us, false)
			}
			n := db.Model(&[]dtUser{{ID: id}, {ID: uid}}).Association("Photos").Count()
			return outcome{out: fmt.Sprint(n)}
		}}
	}},
	{2, func(g *dtGen) dtStmt {
		name, age := g.name(), g.age()
		return dtStmt{"Create(map)", fmt.Sprintf(`db.Model(&dtUser{}).Create(map[string]any{"Name": %q, "Age": %d})`, name, age), func(e *env) outcome {
			m := map[string]any{"Name": name, "Age": age}
			if e.ref && e.pos < len(*e.ids) {
				m["ID"] = (*e.ids)[e.pos]
				e.pos++
			}
			tx := e.db.Model(&dtUser{}).Create(m)
			if !e.ref {
				*e.ids = append(*e.ids, m["ID"])
			}
			return res(tx, m, true)
		}}
	}},
	// ---- updates and deletes ----
	{4, func(g *dtGen) dtStmt {
		id, name, age := g.user(), g.name(), g.age()
		form := g.r.IntN(4)
		texts := []string{fmt.Sprintf(`db.Model(&dtUser{ID: %d}).Update("name", %q)`, id, name),
			fmt.Sprintf(`db.Model(&dtUser{ID: %d}).Updates(dtUser{Name: %q, Age: %d})`, id, name, age),
			fmt.Sprintf(`db.Model(&dtUser{ID: %d}).Updates(map[string]any{"name": %q, "age": %d})`, id, name, age),
			fmt.Sprintf(`db.Model(&dtUser{ID: %d}).UpdateColumn("age", gorm.Expr("age + ?", 1))`, id)}
		return dtStmt{fmt.Sprintf("Update forms #%d", form), texts[form], execOnly(func(db *gorm.DB) *gorm.DB {
			m := db.Model(&dtUser{ID: id})
			switch form {
			case 0:
				return m.Update("name", name)
			case 1:
				return m.Updates(dtUser{Name: name, Age: age})
			case 2:
				return m.Updates(map[string]any{"name": name, "age": age})
			}
			return m.UpdateColumn("age", gorm.Expr("age + ?", 1))
		})}
	}},
	{1, func(g *dtGen) dtStmt {
		id, name := g.user(), g.name()
		return dtStmt{"Select(*).Updates", fmt.Sprintf("db.Model(&dtUser{ID: %d}).Select(\"*\").Updates(dtUser{Name: %q})", id, name), execOnly(func(db *gorm.DB) *gorm.DB {
			return db.Model(&dtUser{ID: id}).Select("*").Updates(dtUser{Name: name})
		})}
	}},
	{2, func(g *dtGen) dtStmt {
		id, name, age := g.user(), g.name(), g.age()
		return dtStmt{"Save(existing)", fmt.Sprintf("db.Save(&dtUser{ID: %d, Name: %q, Age: %d})", id, name, age), func(e *env) outcome {
			u := dtUser{ID: id, Name: name, Age: age}
			return e.write(&u, func(db *gorm.DB) *gorm.DB { return db.Save(&u) })
		}}
	}},
	{2, func(g *dtGen) dtStmt {
		list, age := g.picks(g.s.users, 5), g.age()
		return dtStmt{"Where(IN AND) in one text", fmt.Sprintf("db.Where(\"id IN ? AND age >= ?\", %s, %d).Find(&us)", q(list), age), find(false, func(db *gorm.DB, us *[]dtUser) *gorm.DB {
			return db.Where("id IN ? AND age >= ?", list, age).Find(us)
		})}
	}},
	{2, func(g *dtGen) dtStmt {
		list, age, name := g.picks(g.s.users, 4), g.age(), g.name()
		return dtStmt{"Update(IN AND) in one text", fmt.Sprintf("db.Model(&dtUser{}).Where(\"age < ? AND id IN ?\", %d, %s).Update(\"name\", %q)", age, q(list), name), execOnly(func(db *gorm.DB) *gorm.DB {
			return db.Model(&dtUser{}).Where("age < ? AND id IN ?", age, list).Update("name", name)
		})}
	}},
	{2, func(g *dtGen) dtStmt {
		list, age := g.picks(g.s.users, 4), g.age()
		return dtStmt{"Update(IN)", fmt.Sprintf("db.Model(&dtUser{}).Where(\"id IN ?\", %s).Update(\"age\", %d)", q(list), age), execOnly(func(db *gorm.DB) *gorm.DB {
			return db.Model(&dtUser{}).Where("id IN ?", list).Update("age", age)
		})}
	}},
	{3, func(g *dtGen) dtStmt {
		uid := g.user()
		byClause := g.r.IntN(3) > 0
		text := fmt.Sprintf("db.Model(&dtPhoto{}).Where(\"user_id = ?\", %d).Update(\"likes\", gorm.Expr(\"likes + 1\"))", uid)
		if byClause {
			text = fmt.Sprintf("db.Clauses(shardid.ByID(%d)).Model(&dtPhoto{}).Where(\"user_id = ?\", %d).Update(\"likes\", gorm.Expr(\"likes + 1\"))", uid, uid)
		}
		return dtStmt{"Update(photos by owner)", text, execOnly(func(db *gorm.DB) *gorm.DB {
			if byClause {
				db = db.Clauses(shardid.ByID(uid))
			}
			return db.Model(&dtPhoto{}).Where("user_id = ?", uid).Update("likes", gorm.Expr("likes + 1"))
		})}
	}},
	{2, func(g *dtGen) dtStmt {
		age := g.age()
		return dtStmt{"AllShards.Update", fmt.Sprintf("db.Clauses(shardid.AllShards()).Model(&dtUser{}).Where(\"age > ?\", %d).Update(\"age\", gorm.Expr(\"age - 1\"))", age), execOnly(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(shardid.AllShards()).Model(&dtUser{}).Where("age > ?", age).Update("age", gorm.Expr("age - 1"))
		})}
	}},
	{3, func(g *dtGen) dtStmt {
		id := g.user()
		form := g.r.IntN(3)
		texts := []string{`db.Where("id = ?", %d).Delete(&dtUser{})`, `db.Delete(&dtUser{ID: %d})`, `db.Delete(&dtUser{}, %d)`}
		return dtStmt{fmt.Sprintf("Delete(user) soft #%d", form), fmt.Sprintf(texts[form], id), execOnly(func(db *gorm.DB) *gorm.DB {
			switch form {
			case 0:
				return db.Where("id = ?", id).Delete(&dtUser{})
			case 1:
				return db.Delete(&dtUser{ID: id})
			}
			return db.Delete(&dtUser{}, id)
		})}
	}},
	{2, func(g *dtGen) dtStmt {
		list := g.picks(g.s.photos, 3)
		return dtStmt{"Delete(photos, ids)", fmt.Sprintf("db.Delete(&dtPhoto{}, %s)", q(list)), execOnly(func(db *gorm.DB) *gorm.DB { return db.Delete(&dtPhoto{}, list) })}
	}},
	{2, func(g *dtGen) dtStmt {
		id := g.photo()
		return dtStmt{"Unscoped.Delete(photo)", fmt.Sprintf("db.Unscoped().Delete(&dtPhoto{}, %d)", id), execOnly(func(db *gorm.DB) *gorm.DB { return db.Unscoped().Delete(&dtPhoto{}, id) })}
	}},
	{2, func(g *dtGen) dtStmt {
		likes := g.r.IntN(3)
		return dtStmt{"AllShards.Delete", fmt.Sprintf("db.Clauses(shardid.AllShards()).Where(\"likes > ?\", %d).Delete(&dtPhoto{})", likes), execOnly(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(shardid.AllShards()).Where("likes > ?", likes).Delete(&dtPhoto{})
		})}
	}},
	{2, func(g *dtGen) dtStmt {
		if !g.returning() {
			id := g.photo()
			return dtStmt{"Delete(photo by id)", fmt.Sprintf("db.Where(\"id = ?\", %d).Delete(&dtPhoto{})", id), execOnly(func(db *gorm.DB) *gorm.DB {
				return db.Where("id = ?", id).Delete(&dtPhoto{})
			})}
		}
		list := g.picks(g.s.photos, 3)
		return dtStmt{"Returning.Delete", fmt.Sprintf("db.Clauses(clause.Returning{}).Where(\"id IN ?\", %s).Delete(&ps)", q(list)), find(false, func(db *gorm.DB, ps *[]dtPhoto) *gorm.DB {
			return db.Clauses(clause.Returning{}).Where("id IN ?", list).Delete(ps)
		})}
	}},
	{2, func(g *dtGen) dtStmt {
		if !g.returning() {
			return dtStmt{"AllShards.Update(photos)", "db.Clauses(shardid.AllShards()).Model(&dtPhoto{}).Where(\"likes < 2\").Update(\"likes\", 5)", execOnly(func(db *gorm.DB) *gorm.DB {
				return db.Clauses(shardid.AllShards()).Model(&dtPhoto{}).Where("likes < 2").Update("likes", 5)
			})}
		}
		uid := g.user()
		return dtStmt{"Returning.Update", fmt.Sprintf("db.Clauses(shardid.ByID(%d), clause.Returning{}).Model(&ps).Where(\"user_id = ?\", %d).Update(\"likes\", 7)", uid, uid), find(false, func(db *gorm.DB, ps *[]dtPhoto) *gorm.DB {
			return db.Clauses(shardid.ByID(uid), clause.Returning{}).Model(ps).Where("user_id = ?", uid).Update("likes", 7)
		})}
	}},
	{3, func(g *dtGen) dtStmt {
		email, bal := g.email(), g.r.IntN(100)
		return dtStmt{"Update(account by email)", fmt.Sprintf("db.Model(&dtAccount{}).Where(\"email = ?\", %q).Update(\"balance\", %d)", email, bal), execOnly(func(db *gorm.DB) *gorm.DB {
			return db.Model(&dtAccount{}).Where("email = ?", email).Update("balance", bal)
		})}
	}},
	{2, func(g *dtGen) dtStmt {
		id := g.doc()
		del := g.r.IntN(2) == 0
		text := fmt.Sprintf("db.Model(&dtDoc{ID: %q}).Update(\"pages\", gorm.Expr(\"pages + 1\"))", id)
		if del {
			text = fmt.Sprintf("db.Delete(&dtDoc{ID: %q})", id)
		}
		return dtStmt{"doc update/delete", text, execOnly(func(db *gorm.DB) *gorm.DB {
			if del {
				return db.Delete(&dtDoc{ID: id})
			}
			return db.Model(&dtDoc{ID: id}).Update("pages", gorm.Expr("pages + 1"))
		})}
	}},
	{2, func(g *dtGen) dtStmt {
		id, name := g.label(), g.name()
		return dtStmt{"label update", fmt.Sprintf("db.Model(&dtLabel{ID: %d}).Update(\"name\", %q)", id, name), execOnly(func(db *gorm.DB) *gorm.DB {
			return db.Model(&dtLabel{ID: id}).Update("name", name)
		})}
	}},

	{3, func(g *dtGen) dtStmt {
		how := g.r.IntN(4)
		id, other, pid := g.user(), g.user(), g.photo()
		email := g.email()
		var aid int64
		if len(g.s.accounts) > 0 {
			aid = g.s.accounts[g.r.IntN(len(g.s.accounts))]
		}
		texts := []string{fmt.Sprintf(`db.Model(&dtUser{ID: %d}).Updates(map[string]any{"id": %d})`, id, other),
			fmt.Sprintf(`db.Model(&dtPhoto{ID: %d}).Update("user_id", %d)`, pid, other),
			fmt.Sprintf(`db.Model(&dtAccount{ID: %d}).Update("email", %q)`, aid, email),
			fmt.Sprintf(`db.Model(&dtUser{ID: %d}).Update("id", %d)`, id, id)}
		return dtStmt{fmt.Sprintf("key updates #%d", how), texts[how], execOnly(func(db *gorm.DB) *gorm.DB {
			switch how {
			case 0:
				return db.Model(&dtUser{ID: id}).Updates(map[string]any{"id": other})
			case 1:
				return db.Model(&dtPhoto{ID: pid}).Update("user_id", other)
			case 2:
				return db.Model(&dtAccount{ID: aid}).Update("email", email)
			}
			return db.Model(&dtUser{ID: id}).Update("id", id)
		})}
	}},
	{2, func(g *dtGen) dtStmt {
		// A preset ID: a neighbour of a user's ID (that user's shard), for a photo of another user.
		base, owner := g.user(), g.user()
		preset := base + 4
		return dtStmt{"Create(photo, preset ID)", fmt.Sprintf("db.Create(&dtPhoto{ID: %d, UserID: %d})", preset, owner), func(e *env) outcome {
			p := dtPhoto{ID: preset, UserID: owner, URL: "preset.jpg"}
			return e.write(&p, func(db *gorm.DB) *gorm.DB { return db.Create(&p) })
		}}
	}},
	{2, func(g *dtGen) dtStmt {
		email := g.email()
		del := g.r.IntN(2) == 0
		text := fmt.Sprintf("db.Model(&dtAccount{}).Where(\"email = ?\", %q).Count(&n)", email)
		if del {
			text = fmt.Sprintf("db.Where(\"email = ?\", %q).Delete(&dtAccount{})", email)
		}
		return dtStmt{"account count/delete by email", text, func(e *env) outcome {
			if del {
				return res(e.db.Where("email = ?", email).Delete(&dtAccount{}), nil, true)
			}
			var n int64
			return res(e.db.Model(&dtAccount{}).Where("email = ?", email).Count(&n), n, true)
		}}
	}},
	{3, func(g *dtGen) dtStmt {
		id, name, age := g.user(), g.name(), g.age()
		how := g.r.IntN(6)
		texts := []string{
			fmt.Sprintf(`db.Model(&dtUser{ID: %d}).Select("name").Updates(dtUser{Name: %q, Age: %d})`, id, name, age),
			fmt.Sprintf(`db.Model(&dtUser{ID: %d}).Omit("name").Updates(map[string]any{"name": %q, "age": %d})`, id, name, age),
			fmt.Sprintf(`db.Session(&gorm.Session{SkipHooks: true}).Model(&dtUser{ID: %d}).Update("age", %d)`, id, age),
			fmt.Sprintf(`db.Unscoped().Model(&dtUser{ID: %d}).Update("deleted_at", nil)`, id),
			fmt.Sprintf(`db.Session(&gorm.Session{FullSaveAssociations: true}).Save(&dtUser{ID: %d, Name: %q, Photos: []dtPhoto{{URL: "fs.jpg"}}})`, id, name),
			fmt.Sprintf(`db.Model(&dtUser{}).Where("id = ?", %d).Updates(&dtUser{Name: %q})`, id, name),
		}
		return dtStmt{fmt.Sprintf("update forms #%d", how), texts[how], func(e *env) outcome {
			db := e.db
			switch how {
			case 0:
				return res(db.Model(&dtUser{ID: id}).Select("name").Updates(dtUser{Name: name, Age: age}), nil, true)
			case 1:
				return res(db.Model(&dtUser{ID: id}).Omit("name").Updates(map[string]any{"name": name, "age": age}), nil, true)
			case 2:
				return res(db.Session(&gorm.Session{SkipHooks: true}).Model(&dtUser{ID: id}).Update("age", age), nil, true)
			case 3:
				return res(db.Unscoped().Model(&dtUser{ID: id}).Update("deleted_at", nil), nil, true)
			case 4:
				u := dtUser{ID: id, Name: name, Photos: []dtPhoto{{URL: "fs.jpg"}}}
				return e.write(&u, func(db *gorm.DB) *gorm.DB { return db.Session(&gorm.Session{FullSaveAssociations: true}).Save(&u) })
			}
			return res(db.Model(&dtUser{}).Where("id = ?", id).Updates(&dtUser{Name: name}), nil, true)
		}}
	}},
	{2, func(g *dtGen) dtStmt {
		uid := g.user()
		how := g.r.IntN(3)
		texts := []string{
			fmt.Sprintf(`db.Clauses(shardid.ByID(%d)).Exec("INSERT INTO dt_photos (id, user_id, url, likes) VALUES (?, ?, 'raw.jpg', 0)", %d+8, %d)`, uid, uid, uid),
			fmt.Sprintf(`db.Clauses(shardid.ByID(%d)).Model(&dtPhoto{}).Where("user_id = ?", %d).Group("url").Count(&n)`, uid, uid),
			fmt.Sprintf(`db.Clauses(shardid.ByID(%d)).Model(&dtPhoto{}).Where("user_id = ?", %d).Distinct("url").Pluck("url", &urls)`, uid, uid),
		}
		return dtStmt{fmt.Sprintf("single-shard forms #%d", how), texts[how], func(e *env) outcome {
			db := e.db.Clauses(shardid.ByID(uid))
			switch how {
			case 0:
				return res(db.Exec("INSERT INTO dt_photos (id, user_id, url, likes) VALUES (?, ?, 'raw.jpg', 0)", uid+8, uid), nil, true)
			case 1:
				var n int64
				return res(db.Model(&dtPhoto{}).Where("user_id = ?", uid).Group("url").Count(&n), n, true)
			}
			var urls []string
			return res(db.Model(&dtPhoto{}).Where("user_id = ?", uid).Distinct("url").Pluck("url", &urls), &urls, false)
		}}
	}},
	{2, func(g *dtGen) dtStmt {
		uid := g.user()
		return dtStmt{"SavePoint", fmt.Sprintf(`db.Clauses(shardid.ByID(%d)).Transaction(func(tx) { tx.Create(&dtPhoto{UserID: %d}); tx.SavePoint("sp"); tx.Create(&dtPhoto{UserID: %d}); tx.RollbackTo("sp") })`, uid, uid, uid), func(e *env) outcome {
			p1, p2 := dtPhoto{UserID: uid, URL: "sp1.jpg"}, dtPhoto{UserID: uid, URL: "sp2.jpg"}
			err := e.db.Clauses(shardid.ByID(uid)).Transaction(func(tx *gorm.DB) error {
				e.pre(&p1)
				err := tx.Create(&p1).Error
				e.post(&p1)
				if err != nil {
					return err
				}
				if err := tx.SavePoint("sp").Error; err != nil {
					return err
				}
				e.pre(&p2)
				err = tx.Create(&p2).Error
				e.post(&p2)
				if err != nil {
					return err
				}
				return tx.RollbackTo("sp").Error
			})
			return outcome{err: err, out: canon([]dtPhoto{p1, p2}, true)}
		}}
	}},
	// ---- associations ----
	{3, func(g *dtGen) dtStmt {
		uid := g.user()
		return dtStmt{"Association(Photos).Append", fmt.Sprintf("db.Model(&dtUser{ID: %d}).Association(\"Photos\").Append(&dtPhoto{URL: \"n.jpg\"})", uid), func(e *env) outcome {
			p := dtPhoto{URL: "n.jpg"}
			e.pre(&p)
			err := e.db.Model(&dtUser{ID: uid}).Association("Photos").Append(&p)
			e.post(&p)
			return outcome{err: err, out: canon(&p, true)}
		}}
	}},
	{3, func(g *dtGen) dtStmt {
		uid := g.user()
		what := []string{"Photos", "Labels", "Profile"}[g.r.IntN(3)]
		return dtStmt{"Association(" + what + ").Count", fmt.Sprintf("db.Model(&dtUser{ID: %d}).Association(%q).Count()", uid, what), func(e *env) outcome {
			n := e.db.Model(&dtUser{ID: uid}).Association(what).Count()
			return outcome{out: fmt.Sprint(n)}
		}}
	}},
	{2, func(g *dtGen) dtStmt {
		uid := g.user()
		return dtStmt{"Association(Photos).Find", fmt.Sprintf("db.Model(&dtUser{ID: %d}).Association(\"Photos\").Find(&ps)", uid), func(e *env) outcome {
			var ps []dtPhoto
			err := e.db.Model(&dtUser{ID: uid}).Association("Photos").Find(&ps)
			return outcome{err: err, out: canon(&ps, false)}
		}}
	}},
	{2, func(g *dtGen) dtStmt {
		uid := g.user()
		return dtStmt{"Association(Photos).Replace", fmt.Sprintf("db.Model(&dtUser{ID: %d}).Association(\"Photos\").Replace(&dtPhoto{URL: \"r.jpg\"})", uid), func(e *env) outcome {
			p := dtPhoto{URL: "r.jpg"}
			e.pre(&p)
			err := e.db.Model(&dtUser{ID: uid}).Association("Photos").Replace(&p)
			e.post(&p)
			return outcome{err: err, out: canon(&p, true)}
		}}
	}},
	{2, func(g *dtGen) dtStmt {
		uid, pid := g.user(), g.photo()
		if owner, ok := g.s.photoOwner[pid]; ok && g.r.IntN(3) > 0 {
			uid = owner
		}
		return dtStmt{"Association(Photos).Delete", fmt.Sprintf("db.Model(&dtUser{ID: %d}).Association(\"Photos\").Delete(&dtPhoto{ID: %d})", uid, pid), func(e *env) outcome {
			err := e.db.Model(&dtUser{ID: uid}).Association("Photos").Delete(&dtPhoto{ID: pid})
			return outcome{err: err}
		}}
	}},
	{1, func(g *dtGen) dtStmt {
		uid := g.user()
		what := []string{"Photos", "Labels"}[g.r.IntN(2)]
		return dtStmt{"Association(" + what + ").Clear", fmt.Sprintf("db.Model(&dtUser{ID: %d}).Association(%q).Clear()", uid, what), func(e *env) outcome {
			return outcome{err: e.db.Model(&dtUser{ID: uid}).Association(what).Clear()}
		}}
	}},
	{3, func(g *dtGen) dtStmt {
		uid, lid := g.user(), g.label()
		how := []string{"Append", "Delete", "Replace"}[g.r.IntN(3)]
		return dtStmt{"Association(Labels)." + how, fmt.Sprintf("db.Model(&dtUser{ID: %d}).Association(\"Labels\").%s(&dtLabel{ID: %d})", uid, how, lid), func(e *env) outcome {
			l := dtLabel{ID: lid, Name: "x"}
			a := e.db.Model(&dtUser{ID: uid}).Association("Labels")
			var err error
			switch how {
			case "Append":
				err = a.Append(&l)
			case "Delete":
				err = a.Delete(&l)
			default:
				err = a.Replace(&l)
			}
			return outcome{err: err}
		}}
	}},
	{2, func(g *dtGen) dtStmt {
		uid := g.user()
		return dtStmt{"Association(Profile).Replace", fmt.Sprintf("db.Model(&dtUser{ID: %d}).Association(\"Profile\").Replace(&dtProfile{Bio: \"new\"})", uid), func(e *env) outcome {
			p := dtProfile{Bio: "new"}
			e.pre(&p)
			err := e.db.Model(&dtUser{ID: uid}).Association("Profile").Replace(&p)
			e.post(&p)
			return outcome{err: err, out: canon(&p, true)}
		}}
	}},

	{4, func(g *dtGen) dtStmt {
		uid, tid := g.user(), g.pick(g.s.tags)
		if owner, ok := g.s.tagOwner[tid]; ok && g.r.IntN(3) > 0 {
			uid = owner // mostly the tag's owner: a link that can hold
		}
		tagOwner := g.s.tagOwner[tid]
		how := g.r.IntN(7)
		texts := []string{
			fmt.Sprintf(`db.Model(&dtUser{ID: %d}).Association("Tags").Append(&dtTag{OwnerID: %d, Name: "t"})`, uid, uid),
			fmt.Sprintf(`db.Model(&dtUser{ID: %d}).Association("Tags").Append(&dtTag{ID: %d, OwnerID: %d})`, uid, tid, tagOwner),
			fmt.Sprintf(`db.Model(&dtUser{ID: %d}).Association("Tags").Delete(&dtTag{ID: %d})`, uid, tid),
			fmt.Sprintf(`db.Model(&dtUser{ID: %d}).Association("Tags").Count()`, uid),
			fmt.Sprintf(`db.Preload("Tags").First(&u, %d)`, uid),
			`db.Create(&dtUser{Name: "t", Tags: []dtTag{{Name: "new"}}})`,
			fmt.Sprintf(`db.Model(&dtUser{ID: %d}).Association("Tags").Clear()`, uid),
		}
		return dtStmt{fmt.Sprintf("many2many sharded #%d", how), texts[how], func(e *env) outcome {
			a := e.db.Model(&dtUser{ID: uid}).Association("Tags")
			switch how {
			case 0:
				tag := dtTag{OwnerID: uid, Name: "t"}
				e.pre(&tag)
				err := a.Append(&tag)
				e.post(&tag)
				return outcome{err: err, out: canon(&tag, true)}
			case 1:
				return outcome{err: a.Append(&dtTag{ID: tid, OwnerID: tagOwner, Name: "t"})}
			case 2:
				return outcome{err: a.Delete(&dtTag{ID: tid})}
			case 3:
				return outcome{out: fmt.Sprint(a.Count()), err: a.Error}
			case 4:
				var u dtUser
				return res(e.db.Preload("Tags").First(&u, uid), &u, true)
			case 5:
				u := dtUser{Name: "t", Tags: []dtTag{{Name: "new"}}}
				return e.write(&u, func(db *gorm.DB) *gorm.DB { return db.Create(&u) })
			}
			return outcome{err: a.Clear()}
		}}
	}},
	{3, func(g *dtGen) dtStmt {
		id, other := g.user(), g.user()
		how := g.r.IntN(9)
		layout := shardid.Layout{}.Normalized()
		texts := []string{
			fmt.Sprintf(`db.Select(clause.Associations).Delete(&dtUser{ID: %d})`, id),
			fmt.Sprintf(`db.Model(&dtUser{ID: %d}).Association("Profile").Delete(&profile) // the user's profile, read first`, id),
			fmt.Sprintf(`db.Model(&dtUser{ID: %d}).Association("Photos").Unscoped().Clear()`, id),
			fmt.Sprintf(`db.First(&dtUser{ID: %d})`, id),
			fmt.Sprintf(`db.Delete(&[]dtUser{{ID: %d}, {ID: %d}})`, id, other),
			fmt.Sprintf(`db.Save(&[]dtUser{{ID: %d, Name: "s1"}, {ID: %d, Name: "s2"}})`, id, other),
			fmt.Sprintf(`db.Model(&[]dtUser{{ID: %d}, {ID: %d}}).Update("age", 44)`, id, other),
			fmt.Sprintf(`db.Clauses(shardid.OnShard(%d)).Where("user_id = ?", %d).Find(&ps)`, layout.Shard(id), id),
			fmt.Sprintf(`tx := db.Clauses(shardid.ByID(%d)).Begin(); tx.Model(&dtUser{ID: %d}).Update("name", "tx"); tx.Commit()`, id, id),
		}
		return dtStmt{fmt.Sprintf("more forms #%d", how), texts[how], func(e *env) outcome {
			db := e.db
			switch how {
			case 0:
				return res(db.Select(clause.Associations).Delete(&dtUser{ID: id}), nil, true)
			case 1:
				var p dtProfile
				if err := db.Clauses(shardid.ByID(id)).Where("user_id = ?", id).Limit(1).Find(&p).Error; err != nil {
					return outcome{err: err}
				}
				return outcome{err: db.Model(&dtUser{ID: id}).Association("Profile").Delete(&p)}
			case 2:
				return outcome{err: db.Model(&dtUser{ID: id}).Association("Photos").Unscoped().Clear()}
			case 3:
				u := dtUser{ID: id}
				return res(db.First(&u), &u, true)
			case 4:
				return res(db.Delete(&[]dtUser{{ID: id}, {ID: other}}), nil, true)
			case 5:
				us := []dtUser{{ID: id, Name: "s1"}, {ID: other, Name: "s2"}}
				if id == other {
					us = us[:1]
				}
				return e.write(&us, func(db *gorm.DB) *gorm.DB { return db.Save(&us) })
			case 6:
				return res(db.Model(&[]dtUser{{ID: id}, {ID: other}}).Update("age", 44), nil, true)
			case 7:
				var ps []dtPhoto
				return res(db.Clauses(shardid.OnShard(layout.Shard(id))).Where("user_id = ?", id).Find(&ps), &ps, false)
			}
			tx := db.Clauses(shardid.ByID(id)).Begin()
			if tx.Error != nil {
				return outcome{err: tx.Error}
			}
			u := tx.Model(&dtUser{ID: id}).Update("name", "tx")
			if u.Error != nil {
				tx.Rollback()
				return outcome{err: u.Error}
			}
			return outcome{err: tx.Commit().Error, rows: u.RowsAffected}
		}}
	}},
	{2, func(g *dtGen) dtStmt {
		id := g.user()
		quote := `"`
		if g.backend == "mariadb" {
			quote = "`"
		}
		withClause := g.r.IntN(2) == 0
		query := fmt.Sprintf("UPDATE %sdt_users%s SET age = age + 1 WHERE id = ?", quote, quote)
		text := fmt.Sprintf("db.Exec(%q, %d)", query, id)
		if withClause {
			text = fmt.Sprintf("db.Clauses(shardid.ByID(%d)).Exec(%q, %d)", id, query, id)
		}
		return dtStmt{"Exec(quoted table)", text, execOnly(func(db *gorm.DB) *gorm.DB {
			if withClause {
				db = db.Clauses(shardid.ByID(id))
			}
			return db.Exec(query, id)
		})}
	}},
	// ---- transactions ----
	{4, func(g *dtGen) dtStmt {
		uid, age := g.user(), g.age()
		rollback := g.r.IntN(3) == 0
		return dtStmt{"Transaction(ByID)", fmt.Sprintf("db.Clauses(shardid.ByID(%d)).Transaction(func(tx) { tx.Create(&dtPhoto{UserID: %d}); tx.Model(&dtUser{ID: %d}).Update(\"age\", %d); rollback: %v })", uid, uid, uid, age, rollback), func(e *env) outcome {
			p := dtPhoto{UserID: uid, URL: "t.jpg"}
			var rows int64
			err := e.db.Clauses(shardid.ByID(uid)).Transaction(func(tx *gorm.DB) error {
				e.pre(&p)
				err := tx.Create(&p).Error
				e.post(&p)
				if err != nil {
					return err
				}
				u := tx.Model(&dtUser{ID: uid}).Update("age", age)
				if u.Error != nil {
					return u.Error
				}
				rows = u.RowsAffected
				if rollback {
					return errRollback
				}
				return nil
			})
			return outcome{err: err, rows: rows, out: canon(&p, true)}
		}}
	}},
	{2, func(g *dtGen) dtStmt {
		a, b := g.user(), g.user()
		return dtStmt{"Transaction(two users)", fmt.Sprintf("db.Clauses(shardid.ByID(%d)).Transaction(func(tx) { tx.Model(&dtUser{ID: %d}).Update(\"age\", 1); tx.Model(&dtUser{ID: %d}).Update(\"age\", 2) })", a, a, b), func(e *env) outcome {
			err := e.db.Clauses(shardid.ByID(a)).Transaction(func(tx *gorm.DB) error {
				if err := tx.Model(&dtUser{ID: a}).Update("age", 1).Error; err != nil {
					return err
				}
				return tx.Model(&dtUser{ID: b}).Update("age", 2).Error
			})
			return outcome{err: err}
		}}
	}},
	{1, func(g *dtGen) dtStmt {
		name := g.name()
		return dtStmt{"Transaction(labels)", fmt.Sprintf("db.Transaction(func(tx) { tx.Create(&dtLabel{Name: %q}); tx.Model(&dtLabel{}).Where(\"name = ?\", %q).Count(&n) })", name, name), func(e *env) outcome {
			l := dtLabel{Name: name}
			var n int64
			err := e.db.Transaction(func(tx *gorm.DB) error {
				e.pre(&l)
				err := tx.Create(&l).Error
				e.post(&l)
				if err != nil {
					return err
				}
				return tx.Model(&dtLabel{}).Where("name = ?", name).Count(&n).Error
			})
			return outcome{err: err, out: fmt.Sprint(canon(&l, true), n)}
		}}
	}},

	// ---- raw SQL ----
	{3, func(g *dtGen) dtStmt {
		id, age := g.user(), g.age()
		withClause := g.r.IntN(2) == 0
		text := fmt.Sprintf("db.Exec(\"UPDATE dt_users SET age = ? WHERE id = ?\", %d, %d)", age, id)
		if withClause {
			text = fmt.Sprintf("db.Clauses(shardid.ByID(%d)).Exec(\"UPDATE dt_photos SET likes = likes + 1 WHERE user_id = ?\", %d)", id, id)
		}
		return dtStmt{"Exec", text, execOnly(func(db *gorm.DB) *gorm.DB {
			if withClause {
				return db.Clauses(shardid.ByID(id)).Exec("UPDATE dt_photos SET likes = likes + 1 WHERE user_id = ?", id)
			}
			return db.Exec("UPDATE dt_users SET age = ? WHERE id = ?", age, id)
		})}
	}},
	{2, func(g *dtGen) dtStmt {
		id, name := g.label(), g.name()
		return dtStmt{"Exec(labels)", fmt.Sprintf("db.Exec(\"UPDATE dt_labels SET name = ? WHERE id = ?\", %q, %d)", name, id), execOnly(func(db *gorm.DB) *gorm.DB {
			return db.Exec("UPDATE dt_labels SET name = ? WHERE id = ?", name, id)
		})}
	}},
	{1, func(g *dtGen) dtStmt {
		id := g.photo()
		return dtStmt{"Exec(delete photo)", fmt.Sprintf("db.Exec(\"DELETE FROM dt_photos WHERE id = ?\", %d)", id), execOnly(func(db *gorm.DB) *gorm.DB {
			return db.Exec("DELETE FROM dt_photos WHERE id = ?", id)
		})}
	}},
}
