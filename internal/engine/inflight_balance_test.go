package engine

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
)

type countedUser struct {
	ID     int64 `shardid:""`
	Name   string
	Orders []countedOrder `gorm:"foreignKey:UserID"`
}

type countedOrder struct {
	ID     int64 `shardid:"colocate:UserID"`
	UserID int64
	Note   string
}

// countedHooked issues statements from its hooks with the statement's context.
type countedHooked struct {
	ID   int64 `shardid:""`
	Name string
}

var countedHookDB *gorm.DB

func (h *countedHooked) AfterFind(tx *gorm.DB) error {
	if countedHookDB == nil {
		return nil
	}
	var us []countedUser
	if err := countedHookDB.WithContext(tx.Statement.Context).Clauses(hinted{AllShards()}).Find(&us).Error; err != nil {
		return err
	}
	return tx.Session(&gorm.Session{NewDB: true}).Clauses(hinted{ByID(h.ID)}).Model(&countedHooked{}).Where("id = ?", h.ID).Count(new(int64)).Error
}

func (h *countedHooked) AfterCreate(tx *gorm.DB) error {
	if countedHookDB == nil {
		return nil
	}
	return tx.Clauses(hinted{ByID(h.ID)}).Model(&countedHooked{}).Where("id = ?", h.ID).Update("name", "after").Error
}

// countedBalanced fails unless no statement is counted running.
func countedBalanced(t *testing.T, e *Engine, what string) {
	t.Helper()
	e.inflight.mu.Lock()
	all := []*routedBy{e.inflight.current.Load()}
	for _, w := range e.inflight.older {
		if r := w.Value(); r != nil {
			all = append(all, r)
		}
	}
	e.inflight.mu.Unlock()
	for _, r := range all {
		if n := r.running.Load(); n != 0 {
			t.Errorf("%s: version %d counts %d statements running, want 0", what, r.version, n)
		}
	}
}

// TestEveryKindOfStatementGivesItsCountBack: once statements of every kind have returned, none
// is counted as running.
func TestEveryKindOfStatementGivesItsCountBack(t *testing.T) {
	db, e := openEngine(t, Config{Atomic: BestEffort}, true)
	must(t, e.Migrator(db).AutoMigrate(&countedUser{}, &countedOrder{}, &countedHooked{}))
	on := func(n int) *gorm.DB { return db.Clauses(hinted{OnShard(n)}) }
	all := func() *gorm.DB { return db.Clauses(hinted{AllShards()}) }
	half := e.layout.ShardCount() / 2
	u1 := countedUser{Name: "u1", Orders: []countedOrder{{Note: "a"}, {Note: "b"}}}
	u2 := countedUser{Name: "u2", Orders: []countedOrder{{Note: "c"}}}
	steps := []struct {
		name string
		run  func() error
	}{
		{"create with associations", func() error { return on(1).Create(&u1).Error }},
		{"create other shard", func() error { return on(half + 1).Create(&u2).Error }},
		{"split create", func() error {
			us := make([]countedUser, 20)
			for i := range us {
				us[i].Name = "s"
			}
			return db.Create(&us).Error
		}},
		{"create in batches", func() error {
			us := make([]countedUser, 30)
			for i := range us {
				us[i].Name = "b"
			}
			return db.CreateInBatches(&us, 7).Error
		}},
		{"preload all shards", func() error { var us []countedUser; return all().Preload("Orders").Find(&us).Error }},
		{"IN over two databases", func() error {
			var us []countedUser
			return db.Preload("Orders").Where("id IN ?", []int64{u1.ID, u2.ID}).Find(&us).Error
		}},
		{"find in batches", func() error {
			var us []countedUser
			return all().FindInBatches(&us, 3, func(tx *gorm.DB, _ int) error {
				var n int64
				return tx.Model(&countedUser{}).Where("id = ?", u1.ID).Count(&n).Error
			}).Error
		}},
		{"rows", func() error {
			rows, err := db.Model(&countedUser{}).Where("id = ?", u1.ID).Rows()
			if err != nil {
				return err
			}
			for rows.Next() {
			}
			return rows.Close()
		}},
		{"row", func() error {
			var n string
			return db.Model(&countedUser{}).Where("id = ?", u1.ID).Select("name").Row().Scan(&n)
		}},
		{"count all", func() error { var n int64; return all().Model(&countedUser{}).Count(&n).Error }},
		{"pluck all", func() error { var ns []string; return all().Model(&countedUser{}).Pluck("name", &ns).Error }},
		{"dry run", func() error {
			var us []countedUser
			return db.Session(&gorm.Session{DryRun: true}).Where("id = ?", u1.ID).Find(&us).Error
		}},
		{"dry run all", func() error { var us []countedUser; return all().Session(&gorm.Session{DryRun: true}).Find(&us).Error }},
		{"refused", func() error { var us []countedUser; _ = db.Where("name = ?", "x").Find(&us).Error; return nil }},
		{"bad column", func() error {
			var us []countedUser
			_ = db.Where("nope = ?", 1).Where("id = ?", u1.ID).Find(&us).Error
			return nil
		}},
		{"subquery", func() error {
			var us []countedUser
			return db.Where("id IN (?)", db.Model(&countedOrder{}).Select("user_id").Where("user_id = ?", u1.ID)).Where("id = ?", u1.ID).Find(&us).Error
		}},
		{"reused chain", func() error {
			q := db.Model(&countedUser{}).Where("id = ?", u1.ID)
			var us []countedUser
			if err := q.Find(&us).Error; err != nil {
				return err
			}
			return q.Find(&us).Error
		}},
		{"save with associations", func() error {
			u1.Name = "saved"
			u1.Orders[0].Note = "z"
			return db.Session(&gorm.Session{FullSaveAssociations: true}).Save(&u1).Error
		}},
		{"update fan-out", func() error {
			return db.Model(&countedUser{}).Where("id IN ?", []int64{u1.ID, u2.ID}).Update("name", "f").Error
		}},
		{"delete fan-out", func() error { return all().Where("name = ?", "b").Delete(&countedUser{}).Error }},
		{"transaction on a shard", func() error {
			return db.Clauses(hinted{ByID(u1.ID)}).Transaction(func(tx *gorm.DB) error {
				var u countedUser
				if err := tx.Preload("Orders").First(&u, u1.ID).Error; err != nil {
					return err
				}
				if err := tx.Create(&countedOrder{UserID: u1.ID, Note: "tx"}).Error; err != nil {
					return err
				}
				return tx.Exec("UPDATE counted_users SET name = ? WHERE id = ?", "tx", u1.ID).Error
			})
		}},
		{"hooks issuing statements", func() error {
			countedHookDB = db
			defer func() { countedHookDB = nil }()
			h := countedHooked{Name: "h"}
			if err := on(1).Create(&h).Error; err != nil {
				return err
			}
			var hs []countedHooked
			return all().Find(&hs).Error
		}},
		{"with context", func() error {
			var us []countedUser
			return db.WithContext(context.Background()).Where("id = ?", u1.ID).Find(&us).Error
		}},
	}
	for _, s := range steps {
		if err := s.run(); err != nil {
			t.Errorf("%s: %v", s.name, err)
		}
		countedBalanced(t, e, s.name)
	}
}

// TestStatementsCountedWhileTheMapVersionChangesGiveTheirCountsBack: statements of several kinds run in goroutines
// while the version routed by changes; every count comes back to zero, and
// the race detector sees nothing.
func TestStatementsCountedWhileTheMapVersionChangesGiveTheirCountsBack(t *testing.T) {
	db, e := openEngine(t, Config{Atomic: BestEffort}, true)
	must(t, e.Migrator(db).AutoMigrate(&countedUser{}, &countedOrder{}, &countedHooked{}))
	u1 := countedUser{Name: "u1", Orders: []countedOrder{{Note: "a"}}}
	must(t, db.Clauses(hinted{OnShard(1)}).Create(&u1).Error)
	u2 := countedUser{Name: "u2"}
	must(t, db.Clauses(hinted{OnShard(e.layout.ShardCount() - 1)}).Create(&u2).Error)
	base := e.inflight.current.Load().version
	done := make(chan struct{})
	swapped := make(chan struct{})
	go func() {
		defer close(swapped)
		for v := base + 1; ; v++ {
			select {
			case <-done:
				return
			default:
			}
			e.routeBy(v)
			e.oldestRouted(v)
		}
	}()
	errs := make(chan error, 64)
	var wg sync.WaitGroup
	shared := db.Model(&countedUser{}).Session(&gorm.Session{})
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 15 {
				var us []countedUser
				switch g {
				case 0:
					errs <- db.Preload("Orders").Where("id IN ?", []int64{u1.ID, u2.ID}).Find(&us).Error
				case 1:
					errs <- db.Create(&countedUser{Name: "c", Orders: []countedOrder{{Note: "x"}}}).Error
				case 2:
					errs <- shared.Where("id = ?", u1.ID).Find(&us).Error
				case 3:
					errs <- db.Model(&countedUser{}).Where("id IN ?", []int64{u1.ID, u2.ID}).Update("name", "n").Error
				}
			}
		}()
	}
	go func() { wg.Wait(); close(errs) }()
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	close(done)
	<-swapped
	countedBalanced(t, e, "concurrent")
}

// countedPanics panics in its AfterFind, as an application's hook may.
type countedPanics struct {
	ID   int64 `shardid:""`
	Name string
}

func (*countedPanics) AfterFind(*gorm.DB) error { panic("hook") }

// TestAStatementWhosePanicIsRecoveredGivesItsCountBack: statements whose
// hook panics, the panic recovered by the caller (as net/http recovers a
// handler's), skip the plugin's last callback; once they are collected none
// is counted running, nothing of them is kept, and the process says it
// follows the newer map version it routes by, not the one they began in.
func TestAStatementWhosePanicIsRecoveredGivesItsCountBack(t *testing.T) {
	db, e := openEngine(t, Config{Atomic: BestEffort}, true)
	must(t, e.Migrator(db).AutoMigrate(&countedPanics{}))
	row := countedPanics{Name: "a"}
	must(t, db.Clauses(hinted{OnShard(1)}).Create(&row).Error)
	for range 200 {
		func() {
			defer func() { _ = recover() }()
			var got countedPanics
			db.First(&got, row.ID)
		}()
	}
	version := e.MapVersion()
	e.routeBy(version + 1) // a newer map: the panicked statements began in the older
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		if oldest := e.oldestRouted(version + 1); oldest == version+1 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the process says it follows version %d, older than the %d it routes by, for statements that panicked", oldest, version+1)
		}
		time.Sleep(20 * time.Millisecond)
	}
	countedBalanced(t, e, "after recovered panics")
	e.inflight.mu.Lock()
	kept := len(e.inflight.older)
	e.inflight.mu.Unlock()
	if kept != 0 {
		t.Errorf("%d older versions kept for statements collected", kept)
	}
}
