package integration

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// Models of the join table move tests: a sharded user speaks unsharded
// languages, whose join rows live beside the user; a sharded member joins
// sharded teams, whose join rows a move cannot carry.
type (
	MjLanguage struct {
		ID   int64
		Name string
	}
	MjUser struct {
		ID        int64 `shardid:"strategy:instagram"`
		Name      string
		Languages []MjLanguage `gorm:"many2many:mj_user_languages"`
	}
	MjTeam struct {
		ID   int64 `shardid:"strategy:snowflake"`
		Name string
	}
	MjMember struct {
		ID    int64    `shardid:"strategy:instagram"`
		Teams []MjTeam `gorm:"many2many:mj_member_teams"`
	}
)

// mjLink is a join row of a user and a language.
type mjLink struct {
	User     int64 `gorm:"column:mj_user_id"`
	Language int64 `gorm:"column:mj_language_id"`
}

// joinRig is the move rig with the users and languages migrated and seeded:
// spoken is what each user speaks, kept as the test writes it.
type joinRig struct {
	*moveRig
	langs  []MjLanguage
	users  []int64 // in the moving range, then out of it
	spoken map[int64]map[int64]bool
}

const usersInRange, usersOutOfRange = 240, 40

func newJoinRig(t *testing.T, b backend) *joinRig {
	t.Helper()
	r := &joinRig{moveRig: newMoveRig(t, b, t.TempDir()), spoken: map[int64]map[int64]bool{}}
	for _, db := range []*gorm.DB{r.source, r.target} {
		must(t, db.Migrator().DropTable("mj_user_languages", "mj_member_teams", &MjUser{}, &MjMember{}, &MjTeam{}))
	}
	must(t, r.db.Migrator().DropTable(&MjLanguage{}))
	must(t, r.p.AutoMigrate(r.db, &MjLanguage{}, &MjUser{}))
	r.langs = make([]MjLanguage, 6)
	for i := range r.langs {
		r.langs[i].Name = fmt.Sprintf("lang-%d", i)
	}
	must(t, r.db.Create(&r.langs).Error)
	layout, at := r.p.Layout(), time.Now().Add(-time.Hour)
	for i := range usersInRange + usersOutOfRange {
		shard := movingRange.From + i*7%(movingRange.To-movingRange.From+1)
		if i >= usersInRange {
			shard = i * 13 % movingRange.From
		}
		u := MjUser{ID: layout.Compose(at, shard, i), Name: "seed"}
		for j := range 1 + i%4 {
			u.Languages = append(u.Languages, r.langs[(i+j)%len(r.langs)])
		}
		must(t, r.db.Omit("Languages.*").Create(&u).Error)
		r.users = append(r.users, u.ID)
		r.note(u.ID, u.Languages, true)
	}
	return r
}

// note records that user speaks langs, after clearing what it spoke first.
func (r *joinRig) note(user int64, langs []MjLanguage, clear bool) {
	if clear || r.spoken[user] == nil {
		r.spoken[user] = map[int64]bool{}
	}
	for _, l := range langs {
		r.spoken[user][l.ID] = true
	}
}

func (r *joinRig) inRange(user int64) bool {
	s := r.p.Layout().Shard(user)
	return s >= movingRange.From && s <= movingRange.To
}

// write changes the languages of a few users, in the range and out of it,
// copied already or not yet: Append, Replace, Delete and Clear, and a new
// user of the range with its languages.
func (r *joinRig) write(t *testing.T, step int) {
	t.Helper()
	pick := func(i int) int64 { return r.users[(step*11+i*97)%len(r.users)] }
	lang := func(i int) MjLanguage { return r.langs[(step+i)%len(r.langs)] }
	ops := []func(user int64) error{
		func(u int64) error {
			r.note(u, []MjLanguage{lang(1)}, false)
			return r.db.Model(&MjUser{ID: u}).Omit("Languages.*").Association("Languages").Append(ptr(lang(1)))
		},
		func(u int64) error {
			r.note(u, []MjLanguage{lang(2), lang(3)}, true)
			return r.db.Model(&MjUser{ID: u}).Omit("Languages.*").Association("Languages").Replace(ptr(lang(2)), ptr(lang(3)))
		},
		func(u int64) error {
			l := slices.Min(slices.Collect(maps.Keys(r.spoken[u])))
			delete(r.spoken[u], l)
			return r.db.Model(&MjUser{ID: u}).Association("Languages").Delete(&MjLanguage{ID: l})
		},
		func(u int64) error {
			r.note(u, nil, true)
			return r.db.Model(&MjUser{ID: u}).Association("Languages").Clear()
		},
	}
	for i, op := range ops {
		u := pick(i)
		if i == 2 && len(r.spoken[u]) == 0 {
			continue
		}
		if err := r.retryBusy(func() error { return op(u) }); err != nil {
			t.Errorf("write %d on user %d mid-copy: %v", i, u, err)
		}
	}
	// A new user of the range, and one out of it, with their languages.
	for _, shard := range []int{movingRange.To - step%50, step % movingRange.From} {
		u := MjUser{ID: r.p.Layout().Compose(time.Now(), shard, 0), Name: "mid-copy", Languages: []MjLanguage{lang(4), lang(5)}}
		if err := r.db.Omit("Languages.*").Create(&u).Error; err != nil {
			t.Errorf("creating user %d mid-copy: %v", u.ID, err)
			continue
		}
		r.users = append(r.users, u.ID)
		r.note(u.ID, u.Languages, true)
	}
}

func ptr[T any](v T) *T { return &v }

// links reads a physical database's join rows.
func links(t *testing.T, db *gorm.DB) []mjLink {
	t.Helper()
	var all []mjLink
	must(t, db.Table("mj_user_languages").Order("mj_user_id, mj_language_id").Find(&all).Error)
	return all
}

// wantLinks is the join rows the test wrote, in or out of the range.
func (r *joinRig) wantLinks(inRange bool) []mjLink {
	var want []mjLink
	for u, langs := range r.spoken {
		if r.inRange(u) != inRange {
			continue
		}
		for l := range langs {
			want = append(want, mjLink{u, l})
		}
	}
	slices.SortFunc(want, func(a, b mjLink) int { return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.Language, b.Language)) })
	return want
}

// split parts join rows into those of the range and the others.
func (r *joinRig) split(all []mjLink) (in, out []mjLink) {
	for _, l := range all {
		if r.inRange(l.User) {
			in = append(in, l)
		} else {
			out = append(out, l)
		}
	}
	return in, out
}

// TestStaleProcessUnlinkingAMovedOwnersLanguagesIsRefused: a process on the
// map before a move deletes, or clears, the languages of users of the moved
// range created on the target after the cutover. Its map sends the join
// rows' statement to the source, which has none of them: its fence says the
// owner's range moved, so the statement is refused with ErrShardMoved; run
// again, by the map the refusal made it read, it unlinks them on the target.
func TestStaleProcessUnlinkingAMovedOwnersLanguagesIsRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newJoinRig(t, b)
		staleDB, _ := r.open(t, shardid.Config{MapRefresh: time.Hour})
		clearer, _ := r.open(t, shardid.Config{MapRefresh: time.Hour})
		for _, db := range []*gorm.DB{staleDB, clearer} {
			must(t, db.First(&MjUser{}, r.users[0]).Error) // a process that has seen the model
		}
		r.move(t, shardid.Move{Models: append(slices.Clone(moveModels), &MjUser{})})
		l := r.langs
		owner := func(offset int, langs ...MjLanguage) MjUser {
			u := MjUser{ID: r.p.Layout().Compose(time.Now(), movingRange.From+offset, 3), Name: "after", Languages: langs}
			must(t, r.db.Omit("Languages.*").Create(&u).Error)
			return u
		}
		linksOf := func(user int64) []int64 {
			var langs []int64
			must(t, r.target.Table("mj_user_languages").Where("mj_user_id = ?", user).Order("mj_language_id").Pluck("mj_language_id", &langs).Error)
			return langs
		}
		one, two := owner(5, l[0], l[1], l[2]), owner(6, l[0], l[1])
		unlink := func() error {
			return staleDB.Model(&MjUser{ID: one.ID}).Association("Languages").Delete(&MjLanguage{ID: l[0].ID})
		}
		if err := unlink(); !errors.Is(err, shardid.ErrShardMoved) {
			t.Fatalf("the stale Association Delete: %v, want ErrShardMoved", err)
		}
		must(t, unlink())
		if got, want := linksOf(one.ID), []int64{l[1].ID, l[2].ID}; !slices.Equal(got, want) {
			t.Fatalf("after Delete run again the target links %v, want %v", got, want)
		}
		clear := func() error { return clearer.Model(&MjUser{ID: two.ID}).Association("Languages").Clear() }
		if err := clear(); !errors.Is(err, shardid.ErrShardMoved) {
			t.Fatalf("the stale Association Clear: %v, want ErrShardMoved", err)
		}
		must(t, clear())
		if got := linksOf(two.ID); len(got) != 0 {
			t.Fatalf("after Clear run again the target links %v", got)
		}
	})
}

// TestMoveCarriesJoinTables moves a range of users with their languages
// while the application appends, replaces, deletes and clears their
// languages mid-copy: every join row of the range ends on the target exactly
// once, none is left on the source after the cleanup, none out of the range
// is touched, and Preload reads them through the plugin.
func TestMoveCarriesJoinTables(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newJoinRig(t, b)
		chunks := 0
		report := r.move(t, shardid.Move{ChunkSize: 40, Models: append(slices.Clone(moveModels), &MjUser{}), Progress: func(pr shardid.MoveProgress) {
			if pr.Phase == shardid.PhaseCopy && pr.Step == "chunk" && strings.HasPrefix(pr.Table, "mj_") {
				chunks++
				r.write(t, chunks)
			}
		}})
		if chunks < 5 || report.Rows["mj_user_languages"] == 0 {
			t.Fatalf("%d chunks copied with writes beside them; report: %s", chunks, describeReport(report))
		}
		t.Logf("%d chunks copied with writes beside them; %s", chunks, describeReport(report))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()

		onTarget, outOnTarget := r.split(links(t, r.target))
		if want := r.wantLinks(true); !slices.Equal(onTarget, want) {
			t.Errorf("the target's join rows of the range:\n%v\nwant\n%v", onTarget, want)
		}
		if len(outOnTarget) != 0 {
			t.Errorf("the target holds join rows out of the range: %v", outOnTarget)
		}
		found, err := r.p.Audit(ctx)
		must(t, err)
		if !slices.ContainsFunc(found, func(m shardid.Misplaced) bool {
			return m.Table == "mj_user_languages" && m.Database == b.name+"-source" && m.LeftByMove
		}) {
			t.Errorf("before the cleanup the audit found %+v, want the source's frozen copy of the join rows", found)
		}
		r.preloadsSpoken(t)

		must(t, r.p.CleanupMove(ctx, movingRange, append(slices.Clone(moveModels), &MjUser{})...))
		inOnSource, outOnSource := r.split(links(t, r.source))
		if len(inOnSource) != 0 {
			t.Errorf("the source keeps %d join rows of the range after the cleanup: %v", len(inOnSource), inOnSource)
		}
		if want := r.wantLinks(false); !slices.Equal(outOnSource, want) {
			t.Errorf("the source's join rows out of the range:\n%v\nwant\n%v", outOnSource, want)
		}
		if found, err := r.p.Audit(ctx); err != nil || len(found) != 0 {
			t.Errorf("after the cleanup the audit found %+v (%v), want nothing", found, err)
		}
		r.preloadsSpoken(t)

		// A join row of shard 5, which the source holds, written on the target.
		wrong := mjLink{r.p.Layout().Compose(time.Now(), 5, 1), r.langs[0].ID}
		must(t, r.target.Table("mj_user_languages").Create(&wrong).Error)
		found, err = r.p.Audit(ctx)
		must(t, err)
		if len(found) != 1 || found[0].Table != "mj_user_languages" || found[0].Database != b.name+"-target" || found[0].LeftByMove ||
			len(found[0].Keys) != 1 || found[0].Keys[0] != any(wrong.User) {
			t.Errorf("the audit found %+v, want the join row of user %d on the target", found, wrong.User)
		}
	})
}

// retryBusy runs an association write again while SQLite refuses it as
// busy: a transaction that read before it writes is refused at once, not
// made to wait, when another connection (the mover's, on the source) wrote
// since it began. Each write here may run twice (inserts do nothing on
// conflict); MariaDB and PostgreSQL wait on locks instead and are not retried.
func (r *joinRig) retryBusy(write func() error) error {
	for range 50 {
		err := write()
		if err == nil || r.b.name != "sqlite" || !strings.Contains(err.Error(), "database is locked") {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return write()
}

// preloadsSpoken reads every user with its languages through the plugin.
func (r *joinRig) preloadsSpoken(t *testing.T) {
	t.Helper()
	var got []MjUser
	must(t, r.db.Preload("Languages").Where("id IN ?", r.users).Find(&got).Error)
	if len(got) != len(r.users) {
		t.Fatalf("read %d users of %d", len(got), len(r.users))
	}
	for _, u := range got {
		var ids []int64
		for _, l := range u.Languages {
			ids = append(ids, l.ID)
		}
		slices.Sort(ids)
		want := slices.Sorted(maps.Keys(r.spoken[u.ID]))
		if !slices.Equal(ids, want) {
			t.Errorf("user %d (in the range: %v) preloads the languages %v, want %v", u.ID, r.inRange(u.ID), ids, want)
		}
	}
}

// TestMoveRefusesJoinTablesOfTwoShardedModels: the join rows of two sharded
// models live beside both; a move, carrying rows by one key, would part
// those of the range's edge from one side, so it is refused before it
// starts.
func TestMoveRefusesJoinTablesOfTwoShardedModels(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newJoinRig(t, b)
		must(t, r.p.AutoMigrate(r.db, &MjTeam{}, &MjMember{}))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, models := range [][]any{append(slices.Clone(moveModels), &MjUser{}, &MjTeam{}, &MjMember{}), nil} {
			_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", Models: models})
			if !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), "two sharded models") || !strings.Contains(err.Error(), "mj_member_teams") {
				t.Errorf("a move of members with teams (models %d): %v; want ErrMoveInvalid naming mj_member_teams", len(models), err)
			}
		}
		moves, err := r.p.Moves(ctx)
		must(t, err)
		if len(moves) != 0 {
			t.Errorf("the refused move was recorded: %+v", moves)
		}
	})
}
