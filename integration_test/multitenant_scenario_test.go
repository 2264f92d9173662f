package integration

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shardid/shardid"
)

type saasUserBrief struct {
	ID    int64
	Email string
}

type saasReport struct {
	TenantID int64
	State    string
	N        int64
	Pts      int64
}

var saasZone = time.FixedZone("UTC+5:30", 5*3600+1800)

func saasScenario(t *testing.T, w *saasTwin) {
	ctx := context.Background()
	// sign-up: tenant, owner, default project in one transaction
	signup := func(name string) func(db *gorm.DB) (any, error) {
		return func(db *gorm.DB) (any, error) {
			var ten saasTenant
			err := db.Transaction(func(tx *gorm.DB) error {
				ten = saasTenant{Name: name, Settings: `{"theme":"dark"}`}
				if err := tx.Create(&ten).Error; err != nil {
					return err
				}
				if err := tx.Create(&saasUser{TenantID: ten.ID, Email: "owner@" + name + ".io", Name: "Owner", Role: "owner"}).Error; err != nil {
					return err
				}
				return tx.Create(&saasProject{TenantID: ten.ID, Name: "Default", Status: "active", Meta: []byte(`{"color":"blue"}`)}).Error
			})
			return ten.ID, err
		}
	}
	var tenants []int64
	byDB := map[int]int{}
	for i := 0; i < 30 && (byDB[0] < 2 || byDB[1] < 2); i++ {
		if !w.step(t, "signup", signup(fmt.Sprintf("t%d", i))) {
			break
		}
		var last saasTenant
		must(t, w.one.Order("id desc").First(&last).Error)
		tenants = append(tenants, last.ID)
		byDB[w.plugin.Layout().Shard(last.ID)*2/w.plugin.Layout().ShardCount()]++
	}
	if len(tenants) < 4 {
		t.Fatalf("signups: %v", tenants)
	}
	// sign-up as one nested Create
	w.step(t, "signup nested", func(db *gorm.DB) (any, error) {
		ten := saasTenant{Name: "nested", Users: []saasUser{{Email: "o@nested.io", Role: "owner"}},
			Projects: []saasProject{{Name: "Default", Status: "active"}}}
		err := db.Create(&ten).Error
		return len(ten.Users), err
	})
	// sign-up across shards
	w.step(t, "signup across", func(db *gorm.DB) (any, error) {
		if db == w.sh {
			db = db.Clauses(shardid.AcrossShards())
		}
		return signup("across")(db)
	})
	var nested saasTenant
	must(t, w.one.Where("name = ?", "nested").First(&nested).Error)
	tenants = append(tenants, nested.ID)

	// users, projects, tasks with tags and comments per tenant
	due := time.Date(2026, 3, 1, 9, 30, 0, 0, saasZone)
	for ti, tid := range tenants {
		w.step(t, fmt.Sprintf("seed %d", ti), func(db *gorm.DB) (any, error) {
			users := []saasUser{}
			for u := range 3 {
				users = append(users, saasUser{TenantID: tid, Email: fmt.Sprintf("u%d@t%d.io", u, ti), Name: fmt.Sprintf("User %d", u), Role: []string{"admin", "member", "viewer"}[u]})
			}
			if err := db.Create(&users).Error; err != nil {
				return nil, err
			}
			var proj saasProject
			if err := db.Where("tenant_id = ? AND name = ?", tid, "Default").First(&proj).Error; err != nil {
				return nil, err
			}
			tags := []saasTag{{TenantID: tid, Name: "bug"}, {TenantID: tid, Name: "ui"}, {TenantID: tid, Name: "backend"}}
			if err := db.Create(&tags).Error; err != nil {
				return nil, err
			}
			for k := range 5 {
				d := due.Add(time.Duration(k*ti) * time.Hour)
				task := saasTask{ProjectID: proj.ID, TenantID: tid, Title: fmt.Sprintf("Task %d of %d", k, ti),
					State: []string{"open", "done", "open", "review", "open"}[k], Points: k + ti, DueAt: &d,
					Tags:     []saasTag{tags[k%3]},
					Comments: []saasComment{{TenantID: tid, AuthorID: users[0].ID, Body: "first"}}}
				if err := db.Omit("Tags.*").Create(&task).Error; err != nil {
					return nil, err
				}
			}
			return nil, nil
		})
	}
	t0 := tenants[0]
	var p0 saasProject
	must(t, w.one.Where("tenant_id = ?", t0).First(&p0).Error)
	var task0 saasTask
	must(t, w.one.Where("project_id = ?", p0.ID).Order("id").First(&task0).Error)

	// listing: offset pagination with a total, by the colocate column
	w.step(t, "list users offset+count", func(db *gorm.DB) (any, error) {
		var us []saasUser
		var n int64
		if err := db.Model(&saasUser{}).Scopes(tenantScope(t0)).Count(&n).Error; err != nil {
			return nil, err
		}
		err := db.Scopes(tenantScope(t0)).Order("created_at desc, id desc").Limit(2).Offset(1).Find(&us).Error
		return []any{n, us}, err
	})
	w.step(t, "list tasks of project keyset", func(db *gorm.DB) (any, error) {
		var ts []saasTask
		err := db.Where("project_id = ? AND id < ?", p0.ID, int64(1)<<62).Order("id desc").Limit(3).Find(&ts).Error
		if err != nil || len(ts) == 0 {
			return ts, err
		}
		var next []saasTask
		err = db.Where("project_id = ? AND id < ?", p0.ID, ts[len(ts)-1].ID).Order("id desc").Limit(3).Find(&next).Error
		return []any{ts, next}, err
	})
	w.step(t, "list tasks by tenant_id (not the colocate column)", func(db *gorm.DB) (any, error) {
		var ts []saasTask
		err := db.Scopes(tenantScope(t0)).Order("created_at, id").Find(&ts).Error
		return ts, err
	})
	w.step(t, "list tasks by tenant with shard clause", func(db *gorm.DB) (any, error) {
		var ts []saasTask
		var n int64
		if err := db.Model(&saasTask{}).Scopes(tenantShard(t0)).Count(&n).Error; err != nil {
			return nil, err
		}
		err := db.Scopes(tenantShard(t0)).Order("created_at desc, id").Limit(2).Offset(2).Find(&ts).Error
		return []any{n, ts}, err
	})
	w.step(t, "list all tenants across shards", func(db *gorm.DB) (any, error) {
		var ts []saasTenant
		var n int64
		if err := db.Model(&saasTenant{}).Clauses(shardid.AllShards()).Count(&n).Error; err != nil {
			return nil, err
		}
		err := db.Clauses(shardid.AllShards()).Order("created_at desc").Limit(3).Offset(1).Find(&ts).Error
		return []any{n, ts}, err
	})
	// search
	w.step(t, "search LIKE", func(db *gorm.DB) (any, error) {
		var ts []saasTask
		err := db.Scopes(tenantShard(t0)).Where("title LIKE ?", "%Task 1%").Order("id").Find(&ts).Error
		return ts, err
	})
	w.step(t, "search map", func(db *gorm.DB) (any, error) {
		var us []saasUser
		err := db.Where(map[string]any{"tenant_id": t0, "role": "admin"}).Order("id").Find(&us).Error
		return us, err
	})
	w.step(t, "search struct", func(db *gorm.DB) (any, error) {
		var ts []saasTask
		err := db.Where(&saasTask{ProjectID: p0.ID, State: "open"}).Order("id").Find(&ts).Error
		return ts, err
	})
	w.step(t, "search map IN tenants", func(db *gorm.DB) (any, error) {
		var us []saasUser
		err := db.Where(map[string]any{"tenant_id": tenants[:3], "role": "owner"}).Order("id").Find(&us).Error
		return us, err
	})
	// preloads
	w.step(t, "preload nested", func(db *gorm.DB) (any, error) {
		var p saasProject
		err := db.Preload("Tasks", func(tx *gorm.DB) *gorm.DB { return tx.Order("id") }).Preload("Tasks.Tags").Preload("Tasks.Comments").First(&p, p0.ID).Error
		return p, err
	})
	w.step(t, "preload tenants deep", func(db *gorm.DB) (any, error) {
		var ts []saasTenant
		err := db.Preload("Users", func(tx *gorm.DB) *gorm.DB { return tx.Order("id") }).Preload("Projects.Tasks.Tags").Where("id IN ?", tenants[:4]).Order("id").Find(&ts).Error
		return ts, err
	})
	// joins along colocate
	w.step(t, "joins project", func(db *gorm.DB) (any, error) {
		var ts []saasTask
		err := db.Joins("Project").Where("saas_tasks.project_id = ?", p0.ID).Order("saas_tasks.id").Find(&ts).Error
		return ts, err
	})
	w.step(t, "joins tenant from user", func(db *gorm.DB) (any, error) {
		var us []saasUser
		err := db.Joins("Tenant").Where("saas_users.tenant_id = ?", t0).Order("saas_users.id").Find(&us).Error
		return us, err
	})
	w.step(t, "joins project filtered by project field", func(db *gorm.DB) (any, error) {
		var ts []saasTask
		err := db.Clauses(shardid.ByID(t0)).Joins("Project").Where("saas_tasks.tenant_id = ?", t0).Where(clause.Eq{Column: clause.Column{Table: "Project", Name: "status"}, Value: "active"}).Order("saas_tasks.id").Find(&ts).Error
		return ts, err
	})
	// updates
	var owner0 saasUser
	must(t, w.one.Where("tenant_id = ? AND role = ?", t0, "owner").First(&owner0).Error)
	seen := time.Date(2026, 4, 2, 23, 15, 0, 0, saasZone)
	w.step(t, "updates map expr", func(db *gorm.DB) (any, error) {
		res := db.Model(&saasUser{ID: owner0.ID}).Updates(map[string]any{"login_count": gorm.Expr("login_count + ?", 1), "last_seen_at": seen})
		return res.RowsAffected, res.Error
	})
	w.step(t, "update many expr", func(db *gorm.DB) (any, error) {
		res := db.Model(&saasTask{}).Where("project_id = ? AND state = ?", p0.ID, "open").Update("points", gorm.Expr("points + ?", 1))
		return res.RowsAffected, res.Error
	})
	w.step(t, "update by tenant scope with shard", func(db *gorm.DB) (any, error) {
		res := db.Model(&saasTask{}).Scopes(tenantShard(t0)).Where("state = ?", "review").Update("state", "done")
		return res.RowsAffected, res.Error
	})
	w.step(t, "save", func(db *gorm.DB) (any, error) {
		var u saasUser
		if err := db.First(&u, owner0.ID).Error; err != nil {
			return nil, err
		}
		u.Name = "Owner Renamed"
		u.LoginCount++
		return nil, db.Save(&u).Error
	})
	// upserts on the unique index
	w.step(t, "upsert on email", func(db *gorm.DB) (any, error) {
		us := []saasUser{{TenantID: t0, Email: "u1@t0.io", Name: "Upserted", Role: "admin"}, {TenantID: t0, Email: "new@t0.io", Name: "New", Role: "member"}}
		res := db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "tenant_id"}, {Name: "email"}},
			DoUpdates: clause.AssignmentColumns([]string{"name", "role"})}).Create(&us)
		return res.RowsAffected, res.Error
	})
	w.step(t, "upsert do nothing", func(db *gorm.DB) (any, error) {
		u := saasUser{TenantID: t0, Email: "u2@t0.io", Name: "Ignored", Role: "admin"}
		res := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&u)
		return res.RowsAffected, res.Error
	})
	w.step(t, "tag upsert", func(db *gorm.DB) (any, error) {
		tg := saasTag{TenantID: t0, Name: "bug"}
		res := db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "tenant_id"}, {Name: "name"}}, DoUpdates: clause.AssignmentColumns([]string{"updated_at"})}).Create(&tg)
		return res.RowsAffected, res.Error
	})
	// soft delete
	w.step(t, "soft delete + unscoped", func(db *gorm.DB) (any, error) {
		var t1 saasTask
		if err := db.Where("project_id = ?", p0.ID).Order("id desc").First(&t1).Error; err != nil {
			return nil, err
		}
		if err := db.Delete(&t1).Error; err != nil {
			return nil, err
		}
		var live, all int64
		if err := db.Model(&saasTask{}).Where("project_id = ?", p0.ID).Count(&live).Error; err != nil {
			return nil, err
		}
		if err := db.Unscoped().Model(&saasTask{}).Where("project_id = ?", p0.ID).Count(&all).Error; err != nil {
			return nil, err
		}
		var dead []saasTask
		if err := db.Unscoped().Where("project_id = ? AND deleted_at IS NOT NULL", p0.ID).Find(&dead).Error; err != nil {
			return nil, err
		}
		return []any{live, all, len(dead)}, nil
	})
	w.step(t, "restore", func(db *gorm.DB) (any, error) {
		res := db.Unscoped().Model(&saasTask{}).Where("project_id = ? AND deleted_at IS NOT NULL", p0.ID).Update("deleted_at", nil)
		return res.RowsAffected, res.Error
	})
	w.step(t, "soft delete by tenant scope with shard", func(db *gorm.DB) (any, error) {
		res := db.Scopes(tenantShard(t0)).Where("body = ?", "nothing").Delete(&saasComment{})
		return res.RowsAffected, res.Error
	})
	w.step(t, "hard delete", func(db *gorm.DB) (any, error) {
		res := db.Unscoped().Where("tenant_id = ? AND email = ?", t0, "new@t0.io").Delete(&saasUser{})
		return res.RowsAffected, res.Error
	})
	// FirstOrCreate and friends
	w.step(t, "FirstOrCreate attrs", func(db *gorm.DB) (any, error) {
		var u saasUser
		err := db.Where(saasUser{TenantID: t0, Email: "foc@t0.io"}).Attrs(saasUser{Name: "Made", Role: "member"}).FirstOrCreate(&u).Error
		return []any{u.Email, u.Name, u.Role}, err
	})
	w.step(t, "FirstOrCreate assign existing", func(db *gorm.DB) (any, error) {
		var u saasUser
		err := db.Where(saasUser{TenantID: t0, Email: "foc@t0.io"}).Assign(saasUser{Role: "admin"}).FirstOrCreate(&u).Error
		return []any{u.Email, u.Name, u.Role}, err
	})
	w.step(t, "FirstOrInit", func(db *gorm.DB) (any, error) {
		var u saasUser
		err := db.Where(saasUser{TenantID: t0, Email: "none@t0.io"}).Attrs(saasUser{Name: "Init"}).FirstOrInit(&u).Error
		return []any{u.ID, u.Email, u.Name}, err
	})
	w.step(t, "FirstOrCreate tag by map", func(db *gorm.DB) (any, error) {
		var tg saasTag
		err := db.Where(map[string]any{"tenant_id": t0, "name": "perf"}).FirstOrCreate(&tg).Error
		return tg.Name, err
	})
	// associations
	var tags0 []saasTag
	must(t, w.one.Where("tenant_id = ?", t0).Order("id").Find(&tags0).Error)
	w.step(t, "association append", func(db *gorm.DB) (any, error) {
		task := saasTask{ID: task0.ID}
		return nil, db.Model(&task).Association("Tags").Append(&tags0[1], &tags0[2])
	})
	w.step(t, "association replace", func(db *gorm.DB) (any, error) {
		task := saasTask{ID: task0.ID}
		return nil, db.Model(&task).Association("Tags").Replace(&tags0[0])
	})
	w.step(t, "association count", func(db *gorm.DB) (any, error) {
		task := saasTask{ID: task0.ID}
		a := db.Model(&task).Association("Tags")
		n := a.Count()
		return n, a.Error
	})
	w.step(t, "association find with shard", func(db *gorm.DB) (any, error) {
		task := saasTask{ID: task0.ID}
		var tg []saasTag
		err := db.Clauses(shardid.ByID(t0)).Model(&task).Association("Tags").Find(&tg)
		sort.Slice(tg, func(i, j int) bool { return tg[i].ID < tg[j].ID }) // no ORDER BY: any order
		return tg, err
	})
	w.step(t, "association find", func(db *gorm.DB) (any, error) {
		task := saasTask{ID: task0.ID}
		var tg []saasTag
		err := db.Model(&task).Association("Tags").Find(&tg)
		return tg, err
	})
	w.step(t, "association clear", func(db *gorm.DB) (any, error) {
		task := saasTask{ID: task0.ID}
		return nil, db.Model(&task).Association("Tags").Clear()
	})
	w.step(t, "comments append", func(db *gorm.DB) (any, error) {
		task := saasTask{ID: task0.ID}
		return nil, db.Model(&task).Association("Comments").Append(&saasComment{TenantID: t0, AuthorID: owner0.ID, Body: "appended"})
	})
	// pluck, select into a smaller struct
	w.step(t, "pluck emails", func(db *gorm.DB) (any, error) {
		var es []string
		err := db.Model(&saasUser{}).Scopes(tenantScope(t0)).Order("email").Pluck("email", &es)
		return es, err.Error
	})
	w.step(t, "pluck ids across", func(db *gorm.DB) (any, error) {
		var ids []int64
		err := db.Model(&saasTenant{}).Clauses(shardid.AllShards()).Order("id").Pluck("id", &ids)
		return ids, err.Error
	})
	w.step(t, "select into brief", func(db *gorm.DB) (any, error) {
		var bs []saasUserBrief
		err := db.Model(&saasUser{}).Select("id, email").Scopes(tenantScope(t0)).Order("id").Find(&bs).Error
		return bs, err
	})
	// reports
	w.step(t, "group having per tenant", func(db *gorm.DB) (any, error) {
		var rs []saasReport
		err := db.Model(&saasTask{}).Clauses(shardid.AllShards()).Select("tenant_id, count(*) AS n, sum(points) AS pts").
			Group("tenant_id").Having("count(*) > ?", 3).Order("tenant_id").Find(&rs).Error
		return rs, err
	})
	w.step(t, "group state of a tenant", func(db *gorm.DB) (any, error) {
		var rs []saasReport
		err := db.Model(&saasTask{}).Scopes(tenantShard(t0)).Select("tenant_id, state, count(*) AS n, sum(points) AS pts").
			Group("tenant_id, state").Having("count(*) >= ?", 1).Order("state").Find(&rs).Error
		return rs, err
	})
	w.step(t, "group state across", func(db *gorm.DB) (any, error) {
		var rs []saasReport
		err := db.Model(&saasTask{}).Clauses(shardid.AllShards()).Select("state, count(*) AS n").Group("state").Find(&rs).Error
		sort.Slice(rs, func(i, j int) bool { return rs[i].State < rs[j].State })
		return rs, err
	})
	// batches
	w.step(t, "find in batches", func(db *gorm.DB) (any, error) {
		var ts []saasTask
		var seen []int64
		err := db.Where("project_id = ?", p0.ID).FindInBatches(&ts, 2, func(tx *gorm.DB, batch int) error {
			for _, x := range ts {
				seen = append(seen, x.ID)
			}
			return nil
		}).Error
		return seen, err
	})
	w.step(t, "find in batches by tenant", func(db *gorm.DB) (any, error) {
		var ts []saasTask
		var seen []int64
		err := db.Scopes(tenantShard(t0)).FindInBatches(&ts, 2, func(tx *gorm.DB, batch int) error {
			for _, x := range ts {
				seen = append(seen, x.ID)
			}
			return nil
		}).Error
		return seen, err
	})
	w.step(t, "find in batches across", func(db *gorm.DB) (any, error) {
		var ts []saasTenant
		var seen []int64
		err := db.Clauses(shardid.AllShards()).FindInBatches(&ts, 2, func(tx *gorm.DB, batch int) error {
			for _, x := range ts {
				seen = append(seen, x.ID)
			}
			return nil
		}).Error
		return seen, err
	})
	// generics
	w.step(t, "generics find", func(db *gorm.DB) (any, error) {
		return gorm.G[saasUser](db).Where("tenant_id = ?", t0).Order("id").Find(ctx)
	})
	w.step(t, "generics with clause", func(db *gorm.DB) (any, error) {
		return gorm.G[saasTask](db, shardid.ByID(t0)).Where("tenant_id = ? AND state = ?", t0, "open").Order("id").Find(ctx)
	})
	w.step(t, "generics update", func(db *gorm.DB) (any, error) {
		return gorm.G[saasUser](db).Where("tenant_id = ? AND role = ?", t0, "viewer").Update(ctx, "login_count", 7)
	})
	w.step(t, "generics create", func(db *gorm.DB) (any, error) {
		u := saasUser{TenantID: t0, Email: "g@t0.io", Role: "member"}
		err := gorm.G[saasUser](db).Create(ctx, &u)
		return u.Email, err
	})
	w.step(t, "generics preload", func(db *gorm.DB) (any, error) {
		return gorm.G[saasProject](db).Preload("Tasks", func(pb gorm.PreloadBuilder) error { pb.Order("id"); return nil }).Where("id = ?", p0.ID).First(ctx)
	})
	// raw
	w.step(t, "raw scan with shard", func(db *gorm.DB) (any, error) {
		var rs []saasReport
		err := db.Clauses(shardid.ByID(t0)).Raw("SELECT tenant_id, state, count(*) AS n FROM saas_tasks WHERE tenant_id = ? AND deleted_at IS NULL GROUP BY tenant_id, state ORDER BY state", t0).Scan(&rs).Error
		return rs, err
	})
	// time zones
	w.step(t, "due before", func(db *gorm.DB) (any, error) {
		var ts []saasTask
		err := db.Scopes(tenantShard(tenants[2])).Where("due_at < ?", due.Add(5*time.Hour)).Order("due_at, id").Find(&ts).Error
		return ts, err
	})
	w.step(t, "due across ordered", func(db *gorm.DB) (any, error) {
		var ts []saasTask
		err := db.Clauses(shardid.AllShards()).Where("due_at >= ?", due.In(time.UTC)).Order("due_at desc, id").Limit(5).Find(&ts).Error
		return ts, err
	})
	saasMore(t, w, tenants, p0, task0, owner0)
	saasThird(t, w, tenants, p0, task0)
	saasSignupForms(t, w)
	saasHooks(t, w, tenants, p0)
	saasReports(t, w, tenants, p0)
	saasLogin(t, w, tenants)
	saasDeletes(t, w, tenants)
	saasQueryCallback(t, w, tenants)
	saasPreloadLimits(t, w, tenants)
}

func saasMore(t *testing.T, w *saasTwin, tenants []int64, p0 saasProject, task0 saasTask, owner0 saasUser) {
	ctx := context.Background()
	t0, t1 := tenants[0], tenants[1]
	// a sign-up that fails halfway writes nothing
	w.step(t, "signup fails on duplicate email", func(db *gorm.DB) (any, error) {
		err := db.Transaction(func(tx *gorm.DB) error {
			ten := saasTenant{Name: "dup"}
			if err := tx.Create(&ten).Error; err != nil {
				return err
			}
			if err := tx.Create(&saasUser{TenantID: ten.ID, Email: "a@dup.io"}).Error; err != nil {
				return err
			}
			return tx.Create(&saasUser{TenantID: ten.ID, Email: "a@dup.io"}).Error
		})
		return err != nil, nil
	})
	w.step(t, "signup rolled back by the app", func(db *gorm.DB) (any, error) {
		err := db.Transaction(func(tx *gorm.DB) error {
			ten := saasTenant{Name: "gone", Users: []saasUser{{Email: "x@gone.io"}}}
			if err := tx.Create(&ten).Error; err != nil {
				return err
			}
			return errors.New("payment declined")
		})
		return err.Error(), nil
	})
	// a request handler's transaction on the tenant's database
	w.step(t, "tenant transaction", func(db *gorm.DB) (any, error) {
		var out []any
		err := db.Clauses(shardid.ByID(t0)).Transaction(func(tx *gorm.DB) error {
			var ten saasTenant
			if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).First(&ten, t0).Error; err != nil {
				return err
			}
			var n int64
			if err := tx.Model(&saasUser{}).Where("tenant_id = ?", t0).Count(&n).Error; err != nil {
				return err
			}
			p := saasProject{TenantID: t0, Name: "Second", Status: "active"}
			if err := tx.Create(&p).Error; err != nil {
				return err
			}
			if err := tx.Create(&saasTask{ProjectID: p.ID, TenantID: t0, Title: "in tx", State: "open"}).Error; err != nil {
				return err
			}
			if err := tx.Model(&ten).Update("plan", "pro").Error; err != nil {
				return err
			}
			var ts []saasTask
			if err := tx.Where("tenant_id = ?", t0).Order("id").Find(&ts).Error; err != nil {
				return err
			}
			out = append(out, ten.Name, n, len(ts))
			return nil
		})
		return out, err
	})
	w.step(t, "tenant transaction reads another tenant", func(db *gorm.DB) (any, error) {
		err := db.Clauses(shardid.ByID(t0)).Transaction(func(tx *gorm.DB) error {
			var o saasTenant
			return tx.First(&o, t1).Error
		})
		return nil, err
	})
	// a reused tenant handle
	w.step(t, "reused tenant handle", func(db *gorm.DB) (any, error) {
		tdb := db.Scopes(tenantShard(t0)).Session(&gorm.Session{})
		var us []saasUser
		var ps []saasProject
		if err := tdb.Order("id").Find(&us).Error; err != nil {
			return nil, err
		}
		if err := tdb.Order("id").Find(&ps).Error; err != nil {
			return nil, err
		}
		var n int64
		if err := tdb.Model(&saasTask{}).Count(&n).Error; err != nil {
			return nil, err
		}
		return []any{us, ps, n}, nil
	})
	// mixed batches over two tenants
	w.step(t, "batch over two tenants", func(db *gorm.DB) (any, error) {
		us := []saasUser{{TenantID: t0, Email: "b1@x.io"}, {TenantID: t1, Email: "b1@x.io"}, {TenantID: t0, Email: "b2@x.io"}}
		res := db.Create(&us)
		return res.RowsAffected, res.Error
	})
	w.step(t, "upsert batch over two tenants", func(db *gorm.DB) (any, error) {
		us := []saasUser{{TenantID: t0, Email: "b1@x.io", Name: "B"}, {TenantID: t1, Email: "b1@x.io", Name: "B"}, {TenantID: t1, Email: "b3@x.io", Name: "B"}}
		res := db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "tenant_id"}, {Name: "email"}}, UpdateAll: true}).Create(&us)
		ids := []int64{us[0].ID, us[1].ID, us[2].ID}
		return []any{res.RowsAffected, ids}, res.Error
	})
	w.step(t, "batch fails on a duplicate on one database", func(db *gorm.DB) (any, error) {
		us := []saasUser{{TenantID: t0, Email: "c1@x.io"}, {TenantID: t1, Email: "b1@x.io"}}
		return nil, db.Create(&us).Error
	})
	w.step(t, "update email to a taken one", func(db *gorm.DB) (any, error) {
		return nil, db.Model(&saasUser{ID: owner0.ID}).Update("email", "u0@t0.io").Error
	})
	// more reads
	w.step(t, "inline conditions", func(db *gorm.DB) (any, error) {
		var ts []saasTask
		err := db.Order("id").Find(&ts, "project_id = ? AND (title LIKE ? OR state = ?)", p0.ID, "%2%", "done").Error
		return ts, err
	})
	w.step(t, "preload with conditions", func(db *gorm.DB) (any, error) {
		var p saasProject
		err := db.Preload("Tasks", func(tx *gorm.DB) *gorm.DB { return tx.Where("state = ?", "open").Order("id") }).Preload("Tasks.Comments", func(tx *gorm.DB) *gorm.DB { return tx.Order("id") }).Take(&p, "id = ?", p0.ID).Error
		return p, err
	})
	w.step(t, "joins with preload", func(db *gorm.DB) (any, error) {
		var ts []saasTask
		err := db.Joins("Project").Preload("Tags").Preload("Comments").Where("saas_tasks.project_id = ?", p0.ID).Order("saas_tasks.id").Find(&ts).Error
		return ts, err
	})
	w.step(t, "sql join along colocate", func(db *gorm.DB) (any, error) {
		type row struct {
			Email      string
			TenantName string
		}
		var rs []row
		err := db.Model(&saasUser{}).Select("saas_users.email, saas_tenants.name AS tenant_name").
			Joins("JOIN saas_tenants ON saas_tenants.id = saas_users.tenant_id").Where("saas_users.tenant_id = ?", t0).Order("saas_users.email").Scan(&rs).Error
		return rs, err
	})
	w.step(t, "sql join project-task with tenant shard", func(db *gorm.DB) (any, error) {
		type row struct {
			Project string
			N       int64
		}
		var rs []row
		err := db.Clauses(shardid.ByID(t0)).Model(&saasProject{}).Select("saas_projects.name AS project, count(saas_tasks.id) AS n").
			Joins("LEFT JOIN saas_tasks ON saas_tasks.project_id = saas_projects.id AND saas_tasks.deleted_at IS NULL").
			Where("saas_projects.tenant_id = ?", t0).Group("saas_projects.name").Order("saas_projects.name").Scan(&rs).Error
		return rs, err
	})
	w.step(t, "association of tenant", func(db *gorm.DB) (any, error) {
		ten := saasTenant{ID: t0}
		var us []saasUser
		a := db.Model(&ten).Where("role = ?", "admin").Association("Users")
		if err := a.Find(&us); err != nil {
			return nil, err
		}
		sort.Slice(us, func(i, j int) bool { return us[i].ID < us[j].ID }) // no ORDER BY: any order
		n := db.Model(&ten).Association("Projects").Count()
		return []any{us, n}, nil
	})
	w.step(t, "distinct count", func(db *gorm.DB) (any, error) {
		var n int64
		err := db.Model(&saasTask{}).Clauses(shardid.AllShards()).Distinct("tenant_id").Count(&n).Error
		return n, err
	})
	w.step(t, "last tenant", func(db *gorm.DB) (any, error) {
		var ten saasTenant
		err := db.Clauses(shardid.AllShards()).Last(&ten).Error
		return ten, err
	})
	w.step(t, "first tenant no clause", func(db *gorm.DB) (any, error) {
		var ten saasTenant
		err := db.First(&ten).Error
		return ten, err
	})
	w.step(t, "raw exec with shard", func(db *gorm.DB) (any, error) {
		res := db.Clauses(shardid.ByID(t0)).Exec("UPDATE saas_tasks SET points = points * 2 WHERE tenant_id = ? AND state = ?", t0, "done")
		return res.RowsAffected, res.Error
	})
	w.step(t, "updates struct", func(db *gorm.DB) (any, error) {
		res := db.Model(&saasProject{ID: p0.ID}).Updates(saasProject{Name: "Renamed", Meta: []byte(`{"color":"red"}`)})
		return res.RowsAffected, res.Error
	})
	w.step(t, "save new", func(db *gorm.DB) (any, error) {
		tg := saasTag{TenantID: t1, Name: "saved"}
		return tg.Name, db.Save(&tg).Error
	})
	w.step(t, "generics join and preload", func(db *gorm.DB) (any, error) {
		return gorm.G[saasTask](db).Joins(clause.JoinTarget{Association: "Project"}, nil).Preload("Tags", nil).Where("saas_tasks.project_id = ?", p0.ID).Order("saas_tasks.id").Find(ctx)
	})
	w.step(t, "generics count per tenant", func(db *gorm.DB) (any, error) {
		return gorm.G[saasUser](db).Where("tenant_id IN ?", tenants).Count(ctx, "*")
	})
	w.step(t, "generics delete", func(db *gorm.DB) (any, error) {
		return gorm.G[saasComment](db).Where("task_id = ? AND body = ?", task0.ID, "appended").Delete(ctx)
	})
	w.step(t, "offboard tenant", func(db *gorm.DB) (any, error) {
		ten := saasTenant{ID: tenants[len(tenants)-1]}
		res := db.Select("Users", "Projects").Delete(&ten)
		return res.RowsAffected, res.Error
	})
	w.step(t, "pagination scope across", func(db *gorm.DB) (any, error) {
		page := func(p, size int) func(*gorm.DB) *gorm.DB {
			return func(db *gorm.DB) *gorm.DB { return db.Offset((p - 1) * size).Limit(size) }
		}
		var us []saasUser
		var n int64
		q := db.Model(&saasUser{}).Where("tenant_id IN ?", tenants).Where("role <> ?", "owner")
		if err := q.Session(&gorm.Session{}).Count(&n).Error; err != nil {
			return nil, err
		}
		err := q.Scopes(page(2, 4)).Order("created_at desc, id desc").Find(&us).Error
		return []any{n, us}, err
	})
}

// orderedByID orders a preload's rows: without an ORDER BY each database returns
// its own order, which an update changes as the rows on its pages allow.
func orderedByID(tx *gorm.DB) *gorm.DB { return tx.Order("id") }

func saasThird(t *testing.T, w *saasTwin, tenants []int64, p0 saasProject, task0 saasTask) {
	ctx := context.Background()
	t0, t1 := tenants[0], tenants[1]
	var p2 saasProject
	must(t, w.one.Where("tenant_id = ? AND name = ?", t0, "Second").First(&p2).Error)
	w.step(t, "preload in tenant transaction", func(db *gorm.DB) (any, error) {
		var ps []saasProject
		err := db.Clauses(shardid.ByID(t0)).Transaction(func(tx *gorm.DB) error {
			return tx.Preload("Tasks", orderedByID).Preload("Tasks.Tags").Preload("Tasks.Comments").Preload("Tenant").Where("tenant_id = ?", t0).Order("id").Find(&ps).Error
		})
		return ps, err
	})
	w.step(t, "group count of a tenant", func(db *gorm.DB) (any, error) {
		var n int64
		err := db.Model(&saasTask{}).Scopes(tenantShard(t0)).Group("state").Count(&n).Error
		return n, err
	})
	w.step(t, "count after limit offset across", func(db *gorm.DB) (any, error) {
		var a, b int64
		if err := db.Model(&saasUser{}).Where("tenant_id IN ?", tenants).Order("created_at desc").Limit(10).Count(&a).Error; err != nil {
			return nil, err
		}
		err := db.Model(&saasUser{}).Where("tenant_id IN ?", tenants).Order("created_at desc").Limit(10).Offset(10).Count(&b).Error
		return []any{a, b}, err
	})
	w.step(t, "keyset across by created_at", func(db *gorm.DB) (any, error) {
		var page1, page2 []saasUser
		q := func() *gorm.DB { return db.Clauses(shardid.AllShards()).Order("created_at desc, id desc").Limit(4) }
		if err := q().Find(&page1).Error; err != nil || len(page1) == 0 {
			return nil, err
		}
		last := page1[len(page1)-1]
		err := q().Where("created_at < ? OR (created_at = ? AND id < ?)", last.CreatedAt, last.CreatedAt, last.ID).Find(&page2).Error
		return []any{page1, page2}, err
	})
	w.step(t, "distinct roles across", func(db *gorm.DB) (any, error) {
		var rs []string
		err := db.Model(&saasUser{}).Clauses(shardid.AllShards()).Distinct().Order("role").Pluck("role", &rs).Error
		return rs, err
	})
	w.step(t, "count deleted across", func(db *gorm.DB) (any, error) {
		var n int64
		err := db.Unscoped().Model(&saasTask{}).Clauses(shardid.AllShards()).Where("deleted_at IS NOT NULL").Count(&n).Error
		return n, err
	})
	w.step(t, "batches with updates", func(db *gorm.DB) (any, error) {
		var ts []saasTask
		n := 0
		err := db.Clauses(shardid.AllShards()).Where("state = ?", "open").FindInBatches(&ts, 3, func(tx *gorm.DB, batch int) error {
			for i := range ts {
				ts[i].Points += 10
				n++
			}
			return tx.Save(&ts).Error
		}).Error
		return n, err
	})
	w.step(t, "updates across with expr", func(db *gorm.DB) (any, error) {
		res := db.Model(&saasUser{}).Where("tenant_id IN ? AND role = ?", tenants, "viewer").Updates(map[string]any{"login_count": gorm.Expr("login_count + ?", 1)})
		return res.RowsAffected, res.Error
	})
	w.step(t, "generics scopes", func(db *gorm.DB) (any, error) {
		return gorm.G[saasUser](db).Scopes(func(s *gorm.Statement) { s.Where("tenant_id = ?", t0) }).Order("email").Find(ctx)
	})
	w.step(t, "table without model", func(db *gorm.DB) (any, error) {
		var n int64
		err := db.Table("saas_users").Where("tenant_id = ?", t0).Count(&n).Error
		return n, err
	})
	w.step(t, "model with table", func(db *gorm.DB) (any, error) {
		var n int64
		err := db.Model(&saasUser{}).Table("saas_users").Where("tenant_id = ?", t0).Count(&n).Error
		return n, err
	})
	w.step(t, "preload belongs-to chain", func(db *gorm.DB) (any, error) {
		var ts []saasTask
		err := db.Preload("Project.Tenant").Where("project_id IN ?", []int64{p0.ID, p2.ID}).Order("id").Find(&ts).Error
		return ts, err
	})
	w.step(t, "move task to another project of the tenant", func(db *gorm.DB) (any, error) {
		res := db.Model(&saasTask{ID: task0.ID}).Update("project_id", p2.ID)
		return res.RowsAffected, res.Error
	})
	var pOther saasProject
	must(t, w.one.Where("tenant_id = ?", t1).First(&pOther).Error)
	w.step(t, "move task to another tenant's project", func(db *gorm.DB) (any, error) {
		res := db.Model(&saasTask{ID: task0.ID}).Updates(map[string]any{"project_id": pOther.ID, "tenant_id": t1})
		return res.RowsAffected, res.Error
	})
	w.step(t, "save moved task back", func(db *gorm.DB) (any, error) {
		var tk saasTask
		if err := db.First(&tk, task0.ID).Error; err != nil {
			return nil, err
		}
		tk.ProjectID = p0.ID
		tk.Title = "moved back"
		return nil, db.Save(&tk).Error
	})
	w.step(t, "create task with new tags", func(db *gorm.DB) (any, error) {
		tk := saasTask{ProjectID: p0.ID, TenantID: t0, Title: "tagged", State: "open", Tags: []saasTag{{TenantID: t0, Name: "fresh"}}}
		return nil, db.Create(&tk).Error
	})
	w.step(t, "append new tag", func(db *gorm.DB) (any, error) {
		return nil, db.Model(&saasTask{ID: task0.ID}).Association("Tags").Append(&saasTag{TenantID: t0, Name: "appended"})
	})
	w.step(t, "returning delete", func(db *gorm.DB) (any, error) {
		var cs []saasComment
		res := db.Clauses(clause.Returning{Columns: []clause.Column{{Name: "body"}}}).Where("task_id = ?", task0.ID).Delete(&cs)
		var bodies []string
		for _, c := range cs {
			bodies = append(bodies, c.Body)
		}
		sort.Strings(bodies)
		return []any{res.RowsAffected, bodies}, res.Error
	})
	w.step(t, "first or create in tenant transaction", func(db *gorm.DB) (any, error) {
		var u saasUser
		err := db.Clauses(shardid.ByID(t0)).Transaction(func(tx *gorm.DB) error {
			return tx.Where(saasUser{TenantID: t0, Email: "tx@t0.io"}).Attrs(saasUser{Role: "member"}).FirstOrCreate(&u).Error
		})
		return u.Email, err
	})
	w.step(t, "unscoped delete project with tasks", func(db *gorm.DB) (any, error) {
		res := db.Unscoped().Select("Tasks").Delete(&saasProject{ID: p2.ID})
		return res.RowsAffected, res.Error
	})
	w.step(t, "avg points per tenant", func(db *gorm.DB) (any, error) {
		type r struct {
			TenantID int64
			Avg      float64
			Max      int
		}
		var rs []r
		err := db.Model(&saasTask{}).Clauses(shardid.AllShards()).Select("tenant_id, avg(points) AS avg, max(points) AS max").Group("tenant_id").Order("tenant_id").Scan(&rs).Error
		return rs, err
	})
	w.step(t, "row by row", func(db *gorm.DB) (any, error) {
		rows, err := db.Model(&saasUser{}).Where("tenant_id = ?", t0).Order("id").Rows()
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var emails []string
		for rows.Next() {
			var u saasUser
			if err := db.ScanRows(rows, &u); err != nil {
				return nil, err
			}
			emails = append(emails, u.Email)
		}
		return emails, rows.Err()
	})
}

func saasSignupForms(t *testing.T, w *saasTwin) {
	w.step(t, "signup reads back in its transaction", func(db *gorm.DB) (any, error) {
		err := db.Transaction(func(tx *gorm.DB) error {
			ten := saasTenant{Name: "readback"}
			if err := tx.Create(&ten).Error; err != nil {
				return err
			}
			var again saasTenant
			return tx.First(&again, ten.ID).Error
		})
		return nil, err
	})
	w.step(t, "signup checks email first", func(db *gorm.DB) (any, error) {
		err := db.Transaction(func(tx *gorm.DB) error {
			ten := saasTenant{Name: "check"}
			if err := tx.Create(&ten).Error; err != nil {
				return err
			}
			var n int64
			if err := tx.Model(&saasUser{}).Where("tenant_id = ? AND email = ?", ten.ID, "a@check.io").Count(&n).Error; err != nil {
				return err
			}
			return tx.Create(&saasUser{TenantID: ten.ID, Email: "a@check.io"}).Error
		})
		return nil, err
	})
	w.step(t, "signup updates the tenant after", func(db *gorm.DB) (any, error) {
		err := db.Transaction(func(tx *gorm.DB) error {
			ten := saasTenant{Name: "upd"}
			if err := tx.Create(&ten).Error; err != nil {
				return err
			}
			u := saasUser{TenantID: ten.ID, Email: "a@upd.io"}
			if err := tx.Create(&u).Error; err != nil {
				return err
			}
			return tx.Model(&ten).Update("settings", fmt.Sprintf(`{"owner":%d}`, u.ID)).Error
		})
		return nil, err
	})
	w.step(t, "signup with FirstOrCreate of the user", func(db *gorm.DB) (any, error) {
		err := db.Transaction(func(tx *gorm.DB) error {
			ten := saasTenant{Name: "foc"}
			if err := tx.Create(&ten).Error; err != nil {
				return err
			}
			var u saasUser
			return tx.Where(saasUser{TenantID: ten.ID, Email: "a@foc.io"}).FirstOrCreate(&u).Error
		})
		return nil, err
	})
	w.step(t, "signup across shards with reads and updates", func(db *gorm.DB) (any, error) {
		if db == w.sh {
			db = db.Clauses(shardid.AcrossShards())
		}
		err := db.Transaction(func(tx *gorm.DB) error {
			ten := saasTenant{Name: "across2"}
			if err := tx.Create(&ten).Error; err != nil {
				return err
			}
			var u saasUser
			if err := tx.Where(saasUser{TenantID: ten.ID, Email: "a@across2.io"}).FirstOrCreate(&u).Error; err != nil {
				return err
			}
			return tx.Model(&ten).Update("plan", "trial").Error
		})
		return nil, err
	})
}

type saasTenantKey struct{}

func saasHooks(t *testing.T, w *saasTwin, tenants []int64, p0 saasProject) {
	t0 := tenants[0]
	// a tenant filled in from the context by a callback, as multi-tenant
	// GORM applications do
	// on the plain side before the harness gives it its IDs; on the sharded
	// one before the plugin places the row (docs/limits.md)
	for db, before := range map[*gorm.DB]string{w.sh: "shardid:assign_ids", w.one: "saas:replay"} {
		must(t, db.Callback().Create().Before(before).Register("saas:tenant", func(db *gorm.DB) {
			tid, ok := db.Statement.Context.Value(saasTenantKey{}).(int64)
			if !ok || db.Statement.Schema == nil {
				return
			}
			if f := db.Statement.Schema.LookUpField("TenantID"); f != nil && db.Statement.ReflectValue.Kind() == reflect.Struct {
				if _, zero := f.ValueOf(db.Statement.Context, db.Statement.ReflectValue); zero {
					_ = f.Set(db.Statement.Context, db.Statement.ReflectValue, tid)
				}
			}
		}))
	}
	ctx := context.WithValue(context.Background(), saasTenantKey{}, t0)
	w.step(t, "tenant from context, colocate set by callback", func(db *gorm.DB) (any, error) {
		u := saasUser{Email: "ctx@t0.io"}
		err := db.WithContext(ctx).Create(&u).Error
		return u.TenantID, err
	})
	w.step(t, "tenant from context, other column", func(db *gorm.DB) (any, error) {
		tk := saasTask{ProjectID: p0.ID, Title: "ctx task"}
		err := db.WithContext(ctx).Create(&tk).Error
		return tk.TenantID, err
	})
	w.step(t, "savepoint in tenant transaction", func(db *gorm.DB) (any, error) {
		err := db.Clauses(shardid.ByID(t0)).Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(&saasTag{TenantID: t0, Name: "sp-kept"}).Error; err != nil {
				return err
			}
			_ = tx.Transaction(func(tx2 *gorm.DB) error {
				if err := tx2.Create(&saasTag{TenantID: t0, Name: "sp-gone"}).Error; err != nil {
					return err
				}
				return errors.New("undo")
			})
			return nil
		})
		return nil, err
	})
	w.step(t, "savepoint in across transaction", func(db *gorm.DB) (any, error) {
		if db == w.sh {
			db = db.Clauses(shardid.AcrossShards())
		}
		err := db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(&saasTag{TenantID: t0, Name: "asp-kept"}).Error; err != nil {
				return err
			}
			_ = tx.Transaction(func(tx2 *gorm.DB) error {
				if err := tx2.Create(&saasTag{TenantID: tenants[1], Name: "asp-gone"}).Error; err != nil {
					return err
				}
				if err := tx2.Model(&saasTag{}).Where("tenant_id = ?", t0).Update("name", gorm.Expr("name")).Error; err != nil {
					return err
				}
				return errors.New("undo")
			})
			return nil
		})
		return nil, err
	})
	w.step(t, "upsert with where on updates", func(db *gorm.DB) (any, error) {
		u := saasUser{TenantID: t0, Email: "u0@t0.io", Name: "Cond", Role: "admin"}
		res := db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "tenant_id"}, {Name: "email"}},
			Where:     clause.Where{Exprs: []clause.Expression{clause.Eq{Column: clause.Column{Table: "saas_users", Name: "role"}, Value: "admin"}}},
			DoUpdates: clause.AssignmentColumns([]string{"name"})}).Create(&u)
		return res.RowsAffected, res.Error
	})
	if w.b.name == "postgres" {
		w.step(t, "upsert on constraint", func(db *gorm.DB) (any, error) {
			u := saasUser{TenantID: t0, Email: "u1@t0.io", Name: "Constraint"}
			res := db.Clauses(clause.OnConflict{OnConstraint: "saas_tenant_email", DoUpdates: clause.AssignmentColumns([]string{"name"})}).Create(&u)
			return res.RowsAffected, res.Error
		})
	}
	w.step(t, "json query in a tenant", func(db *gorm.DB) (any, error) {
		var ts []saasTenant
		q := "JSON_EXTRACT(settings, '$.theme') = ?"
		v := any(`"dark"`)
		if w.b.name == "postgres" {
			q, v = "settings::json->>'theme' = ?", "dark"
		}
		err := db.Where("id = ?", t0).Where(q, v).Find(&ts).Error
		return len(ts), err
	})
}

func saasReports(t *testing.T, w *saasTwin, tenants []int64, p0 saasProject) {
	ctx := context.Background()
	type top struct {
		TenantID int64
		N        int64
		Pts      int64
		Last     time.Time
	}
	w.step(t, "top tenants by tasks", func(db *gorm.DB) (any, error) {
		var rs []top
		err := db.Model(&saasTask{}).Clauses(shardid.AllShards()).Select("tenant_id, count(*) AS n, sum(points) AS pts, max(due_at) AS last").
			Group("tenant_id").Having("sum(points) > ?", 5).Order("n desc, tenant_id").Limit(3).Find(&rs).Error
		for i := range rs {
			rs[i].Last = rs[i].Last.UTC()
		}
		return rs, err
	})
	w.step(t, "joins count", func(db *gorm.DB) (any, error) {
		var n int64
		err := db.Model(&saasTask{}).Joins("Project").Where("saas_tasks.project_id = ?", p0.ID).Count(&n).Error
		return n, err
	})
	w.step(t, "joins across ordered page", func(db *gorm.DB) (any, error) {
		var ts []saasTask
		err := db.Clauses(shardid.AllShards()).Joins("Project").Order("saas_tasks.id desc").Limit(4).Offset(3).Find(&ts).Error
		return ts, err
	})
	w.step(t, "IN colocate page", func(db *gorm.DB) (any, error) {
		var us []saasUser
		err := db.Where("tenant_id IN ?", tenants).Order("id").Limit(3).Offset(2).Find(&us).Error
		return us, err
	})
	w.step(t, "maps across ordered", func(db *gorm.DB) (any, error) {
		var ms []map[string]any
		err := db.Model(&saasProject{}).Clauses(shardid.AllShards()).Select("id, tenant_id, created_at").Order("created_at, id").Find(&ms).Error
		for _, m := range ms {
			m["created_at"] = "t"
		}
		return ms, err
	})
	w.step(t, "preload all associations", func(db *gorm.DB) (any, error) {
		var ts []saasTask
		err := db.Preload(clause.Associations).Where("project_id = ?", p0.ID).Order("id").Find(&ts).Error
		return ts, err
	})
	w.step(t, "select updates", func(db *gorm.DB) (any, error) {
		res := db.Model(&saasProject{ID: p0.ID}).Select("name", "status").Updates(saasProject{Name: "Sel", Status: ""})
		return res.RowsAffected, res.Error
	})
	w.step(t, "delete users of two tenants by ids", func(db *gorm.DB) (any, error) {
		var ids []int64
		if err := db.Model(&saasUser{}).Where("tenant_id IN ? AND email LIKE ?", tenants[:2], "b%@x.io").Order("id").Pluck("id", &ids).Error; err != nil {
			return nil, err
		}
		res := db.Delete(&saasUser{}, ids)
		return []any{ids, res.RowsAffected}, res.Error
	})
	w.step(t, "generics batches", func(db *gorm.DB) (any, error) {
		us := []saasUser{{TenantID: tenants[0], Email: "gb1@x.io"}, {TenantID: tenants[1], Email: "gb1@x.io"}, {TenantID: tenants[2], Email: "gb1@x.io"}}
		err := gorm.G[saasUser](db).CreateInBatches(ctx, &us, 2)
		return len(us), err
	})
	w.step(t, "having aggregate not selected", func(db *gorm.DB) (any, error) {
		var rs []top
		err := db.Model(&saasTask{}).Where("tenant_id IN ?", tenants).Clauses(shardid.AllShards()).Select("tenant_id, count(*) AS n").
			Group("tenant_id").Having("max(points) >= ?", 5).Order("tenant_id").Find(&rs).Error
		return rs, err
	})
	w.step(t, "count distinct", func(db *gorm.DB) (any, error) {
		var n int64
		err := db.Model(&saasTask{}).Clauses(shardid.AllShards()).Select("count(distinct project_id)").Scan(&n).Error
		return n, err
	})
}

func saasLogin(t *testing.T, w *saasTwin, tenants []int64) {
	w.step(t, "login by email across tenants", func(db *gorm.DB) (any, error) {
		var u saasUser
		err := db.Clauses(shardid.AllShards()).Preload("Tenant").Where("email = ?", "owner@t1.io").First(&u).Error
		return u, err
	})
	w.step(t, "login take", func(db *gorm.DB) (any, error) {
		var u saasUser
		err := db.Clauses(shardid.AllShards()).Where("email = ? AND deleted_at IS NULL", "owner@t2.io").Take(&u).Error
		return u.Email, err
	})
	w.step(t, "login not found", func(db *gorm.DB) (any, error) {
		var u saasUser
		err := db.Clauses(shardid.AllShards()).Where("email = ?", "nobody@x.io").First(&u).Error
		return errors.Is(err, gorm.ErrRecordNotFound), nil
	})
	w.step(t, "memberships of an email", func(db *gorm.DB) (any, error) {
		var us []saasUser
		err := db.Clauses(shardid.AllShards()).Joins("Tenant").Where("saas_users.email = ?", "gb1@x.io").Order("saas_users.id").Find(&us).Error
		return us, err
	})
	w.step(t, "soft-deleted user's email taken again", func(db *gorm.DB) (any, error) {
		if err := db.Where("tenant_id = ? AND email = ?", tenants[2], "u1@t2.io").Delete(&saasUser{}).Error; err != nil {
			return nil, err
		}
		return nil, db.Create(&saasUser{TenantID: tenants[2], Email: "u1@t2.io"}).Error
	})
	w.step(t, "save a soft-deleted row", func(db *gorm.DB) (any, error) {
		var u saasUser
		if err := db.Unscoped().Where("tenant_id = ? AND email = ?", tenants[2], "u1@t2.io").First(&u).Error; err != nil {
			return nil, err
		}
		u.Name = "ghost"
		res := db.Save(&u)
		return res.RowsAffected, res.Error
	})
	w.step(t, "last across", func(db *gorm.DB) (any, error) {
		var u saasUser
		err := db.Clauses(shardid.AllShards()).Where("role = ?", "viewer").Last(&u).Error
		return u.Email, err
	})
}

func saasDeletes(t *testing.T, w *saasTwin, tenants []int64) {
	var p saasProject
	must(t, w.one.Where("tenant_id = ?", tenants[1]).First(&p).Error)
	var tasks []saasTask
	must(t, w.one.Where("project_id = ?", p.ID).Order("id").Find(&tasks).Error)
	w.step(t, "delete task with its associations", func(db *gorm.DB) (any, error) {
		res := db.Select(clause.Associations).Delete(&saasTask{ID: tasks[0].ID})
		return res.RowsAffected, res.Error
	})
	w.step(t, "hard delete tasks of two tenants with tags", func(db *gorm.DB) (any, error) {
		var ts []saasTask
		if err := db.Where("project_id = ?", p.ID).Order("id").Find(&ts).Error; err != nil {
			return nil, err
		}
		var other []saasTask
		var q saasProject
		if err := db.Where("tenant_id = ?", tenants[2]).Order("id").First(&q).Error; err != nil {
			return nil, err
		}
		if err := db.Where("project_id = ?", q.ID).Order("id").Limit(2).Find(&other).Error; err != nil {
			return nil, err
		}
		all := append(ts[:2:2], other...)
		res := db.Unscoped().Select("Tags", "Comments").Delete(&all)
		return res.RowsAffected, res.Error
	})
	w.step(t, "delete a tenant with everything", func(db *gorm.DB) (any, error) {
		tid := tenants[3]
		err := db.Clauses(shardid.ByID(tid)).Transaction(func(tx *gorm.DB) error {
			for _, m := range []any{&saasComment{}, &saasTag{}, &saasUser{}, &saasProject{}} {
				if err := tx.Unscoped().Where("tenant_id = ?", tid).Delete(m).Error; err != nil {
					return err
				}
			}
			if err := tx.Exec("DELETE FROM saas_task_tags WHERE saas_task_id IN (SELECT id FROM saas_tasks WHERE tenant_id = ?)", tid).Error; err != nil {
				return err
			}
			if err := tx.Unscoped().Where("tenant_id = ?", tid).Delete(&saasTask{}).Error; err != nil {
				return err
			}
			return tx.Unscoped().Delete(&saasTenant{ID: tid}).Error
		})
		return nil, err
	})
}

type saasScopeKey struct{}

// A global tenant filter as applications register it: a query callback
// that adds the tenant's condition, and on the sharded side its shard.
func saasQueryCallback(t *testing.T, w *saasTwin, tenants []int64) {
	for _, db := range []*gorm.DB{w.sh, w.one} {
		sharded := db == w.sh
		must(t, db.Callback().Query().Before("gorm:query").Register("saas:scope", func(db *gorm.DB) {
			tid, ok := db.Statement.Context.Value(saasScopeKey{}).(int64)
			if !ok || db.Statement.Schema == nil || db.Statement.Schema.LookUpField("TenantID") == nil {
				return
			}
			db.Statement.AddClause(clause.Where{Exprs: []clause.Expression{clause.Eq{Column: clause.Column{Table: clause.CurrentTable, Name: "tenant_id"}, Value: tid}}})
			if sharded {
				shardid.ByID(tid).ModifyStatement(db.Statement)
			}
		}))
	}
	ctx := context.WithValue(context.Background(), saasScopeKey{}, tenants[1])
	w.step(t, "global tenant filter on tasks", func(db *gorm.DB) (any, error) {
		var ts []saasTask
		err := db.WithContext(ctx).Order("id").Find(&ts).Error
		return ts, err
	})
	w.step(t, "global tenant filter with preload", func(db *gorm.DB) (any, error) {
		var ps []saasProject
		err := db.WithContext(ctx).Preload("Tasks", orderedByID).Preload("Tasks.Tags").Order("id").Find(&ps).Error
		return ps, err
	})
	w.step(t, "global tenant filter count", func(db *gorm.DB) (any, error) {
		var n int64
		err := db.WithContext(ctx).Model(&saasUser{}).Count(&n).Error
		return n, err
	})
}

func saasPreloadLimits(t *testing.T, w *saasTwin, tenants []int64) {
	var p saasProject
	must(t, w.one.Where("tenant_id = ?", tenants[2]).Order("id").First(&p).Error)
	w.step(t, "preload with limit of one owner", func(db *gorm.DB) (any, error) {
		var got saasProject
		err := db.Preload("Tasks", func(tx *gorm.DB) *gorm.DB { return tx.Order("points desc, id").Limit(2) }).First(&got, p.ID).Error
		return got, err
	})
	w.step(t, "many2many preload with limit of one owner's tasks", func(db *gorm.DB) (any, error) {
		var ts []saasTask
		err := db.Preload("Tags", func(tx *gorm.DB) *gorm.DB { return tx.Order("name").Limit(2) }).Where("project_id = ?", p.ID).Order("id").Find(&ts).Error
		return ts, err
	})
}
