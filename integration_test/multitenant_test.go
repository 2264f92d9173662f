package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// The data layer of a small multi-tenant application, as a user porting one
// writes it: gorm.Model everywhere, a tenant sharded, its users and projects
// beside it, tasks beside their project, tags and comments beside them.
type (
	saasTenant struct {
		gorm.Model
		ID       int64         `shardid:""`
		Name     string        `gorm:"size:64"`
		Plan     string        `gorm:"size:16;default:free"`
		Settings string        `gorm:"type:text"` // JSON text
		Users    []saasUser    `gorm:"foreignKey:TenantID"`
		Projects []saasProject `gorm:"foreignKey:TenantID"`
	}
	saasUser struct {
		gorm.Model
		ID         int64       `shardid:"colocate:TenantID"`
		TenantID   int64       `gorm:"uniqueIndex:saas_tenant_email"`
		Tenant     *saasTenant `gorm:"foreignKey:TenantID"`
		Email      string      `gorm:"size:191;uniqueIndex:saas_tenant_email"`
		Name       string      `gorm:"size:64"`
		Role       string      `gorm:"size:16"`
		LoginCount int
		LastSeenAt *time.Time
	}
	saasProject struct {
		gorm.Model
		ID       int64       `shardid:"colocate:TenantID"`
		TenantID int64       `gorm:"index"`
		Tenant   *saasTenant `gorm:"foreignKey:TenantID"`
		Name     string      `gorm:"size:64"`
		Status   string      `gorm:"size:16"`
		Meta     []byte      // JSON bytes
		Tasks    []saasTask  `gorm:"foreignKey:ProjectID"`
	}
	saasTask struct {
		gorm.Model
		ID        int64        `shardid:"colocate:ProjectID"`
		ProjectID int64        `gorm:"index"`
		Project   *saasProject `gorm:"foreignKey:ProjectID"`
		TenantID  int64        `gorm:"index"`
		Title     string       `gorm:"size:128"`
		State     string       `gorm:"size:16"`
		Points    int
		DueAt     *time.Time
		Tags      []saasTag     `gorm:"many2many:saas_task_tags"`
		Comments  []saasComment `gorm:"foreignKey:TaskID"`
	}
	saasTag struct {
		gorm.Model
		ID       int64  `shardid:"colocate:TenantID"`
		TenantID int64  `gorm:"uniqueIndex:saas_tenant_tag"`
		Name     string `gorm:"size:32;uniqueIndex:saas_tenant_tag"`
	}
	saasComment struct {
		gorm.Model
		ID       int64 `shardid:"colocate:TaskID"`
		TaskID   int64 `gorm:"index"`
		TenantID int64
		AuthorID int64
		Body     string `gorm:"size:255"`
	}
)

var saasModels = []any{&saasTenant{}, &saasUser{}, &saasProject{}, &saasTask{}, &saasTag{}, &saasComment{}}
var saasTables = []string{"saas_tenants", "saas_users", "saas_projects", "saas_tasks", "saas_tags", "saas_comments", "saas_task_tags"}

// saasTwin is the application on two physical databases through the plugin,
// and the same application on one plain database.
type saasTwin struct {
	b      backend
	sh     *gorm.DB
	one    *gorm.DB
	direct []*gorm.DB
	plugin *shardid.Plugin

	mu       sync.Mutex
	seen     map[int64]bool
	queue    map[string][]int64 // IDs the plugin made, by table, in order, for the plain side
	refusals []string
}

func newSaasTwin(t *testing.T, b backend, cfg gorm.Config) *saasTwin {
	t.Helper()
	dir := t.TempDir()
	cfg.Logger = logger.Discard
	main, err := gorm.Open(b.dialector(t, dir), &cfg)
	must(t, err)
	count := shardid.Layout{}.ShardCount()
	shs := []shardid.Shard{
		{Name: b.name + "-a", Dialector: b.physical(t, dir, 0), Logical: []shardid.Range{{From: 0, To: count/2 - 1}}},
		{Name: b.name + "-b", Dialector: b.physical(t, dir, 1), Logical: []shardid.Range{{From: count / 2, To: count - 1}}},
	}
	p := shardid.New(shardid.Config{Shards: shs, Atomic: b.atomicity()})
	firstStart(t, main)
	must(t, main.Use(p))
	t.Cleanup(func() { _ = p.Close() })
	w := &saasTwin{b: b, sh: main, plugin: p, seen: map[int64]bool{}, queue: map[string][]int64{}}
	for i := range 2 {
		d, err := gorm.Open(b.physical(t, dir, i), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		w.direct = append(w.direct, d)
	}
	must(t, p.Migrator(main).DropTable(append(saasModels, "saas_task_tags")...))
	must(t, p.Migrator(main).AutoMigrate(saasModels...))

	admin, err := gorm.Open(b.dialector(t, ""), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	name := admin.Migrator().CurrentDatabase() + "_9"
	_ = admin.Exec("CREATE DATABASE " + map[string]string{"mariadb": "IF NOT EXISTS "}[b.name] + name).Error
	w.one, err = gorm.Open(b.physical(t, dir, 9), &gorm.Config{Logger: logger.Discard, DisableForeignKeyConstraintWhenMigrating: true})
	must(t, err)
	must(t, w.one.Migrator().DropTable(append(saasModels, "saas_task_tags")...))
	must(t, w.one.AutoMigrate(saasModels...))

	// the IDs the plugin gave, in the order the statements gave them
	must(t, main.Callback().Create().After("shardid:assign_ids").Before("gorm:before_create").Register("saas:record", func(db *gorm.DB) {
		if db.Statement.Schema == nil || db.Statement.Schema.PrioritizedPrimaryField == nil {
			return
		}
		w.each(db, func(v reflect.Value, id int64) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if !w.seen[id] {
				w.seen[id] = true
				k := saasSig(db, v)
				w.queue[k] = append(w.queue[k], id)
			}
		})
	}))
	must(t, w.one.Callback().Create().Before("gorm:create").Register("saas:replay", func(db *gorm.DB) {
		if db.Statement.Schema == nil || db.Statement.Schema.PrioritizedPrimaryField == nil {
			return
		}
		f := db.Statement.Schema.PrioritizedPrimaryField
		set := func(v reflect.Value) {
			if _, zero := f.ValueOf(db.Statement.Context, v); !zero {
				return
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			k := saasSig(db, v)
			q := w.queue[k]
			if len(q) == 0 {
				_ = db.AddError(fmt.Errorf("saas: no ID recorded for %s", k))
				return
			}
			_ = f.Set(db.Statement.Context, v, q[0])
			w.queue[k] = q[1:]
		}
		eachRow(db, set)
	}))
	t.Cleanup(func() {
		for _, d := range append(w.direct, w.one, admin) {
			if s, err := d.DB(); err == nil {
				_ = s.Close()
			}
		}
	})
	return w
}

// saasSig is a row's values but its key and times: the same row on both sides.
func saasSig(db *gorm.DB, v reflect.Value) string {
	var sb strings.Builder
	sb.WriteString(db.Statement.Table)
	for _, f := range db.Statement.Schema.Fields {
		if f.DBName == "" || f.PrimaryKey || f.AutoCreateTime != 0 || f.AutoUpdateTime != 0 {
			continue
		}
		x, _ := f.ValueOf(db.Statement.Context, v)
		fmt.Fprintf(&sb, "|%s=%v", f.DBName, x)
	}
	return sb.String()
}

func (w *saasTwin) each(db *gorm.DB, fn func(reflect.Value, int64)) {
	f := db.Statement.Schema.PrioritizedPrimaryField
	eachRow(db, func(v reflect.Value) {
		if x, zero := f.ValueOf(db.Statement.Context, v); !zero {
			fn(v, reflect.ValueOf(x).Int())
		}
	})
}

// eachRow calls fn with each row the statement writes.
func eachRow(db *gorm.DB, fn func(reflect.Value)) {
	rv := db.Statement.ReflectValue
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		for i := range rv.Len() {
			fn(reflect.Indirect(rv.Index(i)))
		}
	case reflect.Struct:
		fn(rv)
	}
}

// dump reads every table: the sharded side from both physical databases,
// checking each row is on its shard's database.
func (w *saasTwin) dump(t *testing.T, sharded bool) string {
	t.Helper()
	if sharded { // a statement of the process waits for the branches of an ended transaction
		var n int64
		must(t, w.sh.Model(&saasTenant{}).Clauses(shardid.AllShards()).Count(&n).Error)
	}
	var sb strings.Builder
	for _, table := range saasTables {
		var rows []string
		read := func(db *gorm.DB, phys int) {
			var ms []map[string]any
			must(t, db.Table(table).Find(&ms).Error)
			for _, m := range ms {
				if phys >= 0 {
					key := m["id"]
					if table == "saas_task_tags" {
						key = m["saas_task_id"]
					}
					id := reflect.ValueOf(key).Int()
					if got := w.plugin.Layout().Shard(id) * 2 / w.plugin.Layout().ShardCount(); got != phys {
						t.Errorf("%s row %v on database %d, its shard on %d", table, m, phys, got)
					}
				}
				for k, v := range m {
					if tm, ok := v.(time.Time); ok {
						m[k] = tm.UTC().Format(time.RFC3339Nano)
					}
				}
				saasStamps(m)
				j, _ := json.Marshal(m)
				rows = append(rows, string(j))
			}
		}
		if sharded {
			for i, d := range w.direct {
				read(d, i)
			}
		} else {
			read(w.one, -1)
		}
		sort.Strings(rows)
		fmt.Fprintf(&sb, "%s:\n  %s\n", table, strings.Join(rows, "\n  "))
	}
	return sb.String()
}

var errSaasRollback = errors.New("saas: roll the plain side back")

func saasNamed(err error) bool {
	for _, e := range []error{shardid.ErrNoShard, shardid.ErrCrossShard, shardid.ErrNotAtomic, shardid.ErrInvalidTag} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// step runs fn on both sides and compares results, errors and every table.
func (w *saasTwin) step(t *testing.T, name string, fn func(db *gorm.DB) (any, error)) bool {
	t.Helper()
	before := w.dump(t, true)
	r1, err1 := fn(w.sh)
	var r2 any
	var err2 error
	if err1 != nil && saasNamed(err1) {
		_ = w.one.Transaction(func(tx *gorm.DB) error {
			r2, err2 = fn(tx)
			return errSaasRollback
		})
		w.mu.Lock()
		w.queue = map[string][]int64{}
		w.mu.Unlock()
		if after := w.dump(t, true); after != before {
			t.Errorf("%s: refused (%v) but wrote:\n%s\nwas\n%s", name, err1, after, before)
		}
		msg := fmt.Sprintf("%s/%s: REFUSED %v (plain: err=%v)", w.b.name, name, err1, err2)
		w.refusals = append(w.refusals, msg)
		t.Log(msg)
		return false
	}
	r2, err2 = fn(w.one)
	w.mu.Lock()
	left := w.queue
	w.queue = map[string][]int64{}
	w.mu.Unlock()
	if (err1 == nil) != (err2 == nil) {
		t.Errorf("%s: errors differ: sharded %v, plain %v", name, err1, err2)
		return false
	}
	if err1 != nil {
		t.Logf("%s: both failed: %v / %v", name, err1, err2)
	}
	for sig, q := range left {
		if len(q) > 0 && err1 == nil {
			t.Errorf("%s: %d IDs of %s not replayed", name, len(q), sig)
		}
	}
	j1, j2 := saasJSON(r1), saasJSON(r2)
	if string(j1) != string(j2) {
		t.Errorf("%s: results differ:\nsharded %s\nplain   %s", name, j1, j2)
	}
	if d1, d2 := w.dump(t, true), w.dump(t, false); d1 != d2 {
		t.Errorf("%s: tables differ:\n%s", name, saasDiff(d1, d2))
	}
	return err1 == nil
}

func tenantScope(tid int64) func(*gorm.DB) *gorm.DB {
	return func(db *gorm.DB) *gorm.DB { return db.Where("tenant_id = ?", tid) }
}

// tenantShard is the scope a sharded application adds: the tenant's shard.
func tenantShard(tid int64) func(*gorm.DB) *gorm.DB {
	return func(db *gorm.DB) *gorm.DB { return db.Clauses(shardid.ByID(tid)).Where("tenant_id = ?", tid) }
}

func TestAMultiTenantApplicationMatchesOneDatabase(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		w := newSaasTwin(t, b, gorm.Config{})
		saasScenario(t, w)
		for _, r := range w.refusals {
			t.Log(r)
		}
	})
}

// The same application with the settings of gorm.Config applications often
// turn on: prepared statements, no default transaction.
func TestAMultiTenantApplicationWithGORMSettingsMatchesOneDatabase(t *testing.T) {
	for name, cfg := range map[string]gorm.Config{"prepared": {PrepareStmt: true}, "skip-transaction": {SkipDefaultTransaction: true}} {
		t.Run(name, func(t *testing.T) {
			forEachServer(t, func(t *testing.T, b backend) {
				w := newSaasTwin(t, b, cfg)
				saasScenario(t, w)
				for _, r := range w.refusals {
					t.Log(r)
				}
			})
		})
	}
}

// saasStamps blanks the times the two sides set by their own clocks.
func saasStamps(m map[string]any) {
	for k, v := range m {
		switch k {
		case "created_at", "updated_at", "CreatedAt", "UpdatedAt":
			m[k] = "t"
		case "deleted_at", "DeletedAt":
			if v != nil {
				m[k] = "deleted"
			}
		default:
			saasWalk(v)
		}
	}
}

func saasWalk(v any) {
	switch x := v.(type) {
	case map[string]any:
		saasStamps(x)
	case []any:
		for _, e := range x {
			saasWalk(e)
		}
	}
}

func saasJSON(v any) string {
	j, _ := json.Marshal(v)
	var x any
	if json.Unmarshal(j, &x) != nil {
		return string(j)
	}
	saasWalk(x)
	j, _ = json.Marshal(x)
	return string(j)
}

// saasDiff lists the lines one dump has and the other lacks.
func saasDiff(a, b string) string {
	count := map[string]int{}
	for _, l := range strings.Split(a, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(b, "\n") {
		count[l]--
	}
	var out []string
	for l, n := range count {
		if n > 0 {
			out = append(out, "sharded only: "+l)
		} else if n < 0 {
			out = append(out, "plain only:   "+l)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}
