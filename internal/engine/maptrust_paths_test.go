package engine

import (
	"database/sql"
	"errors"
	"testing"

	"gorm.io/gorm"
)

type trustUser struct {
	ID     int64 `shardid:""`
	Name   string
	Orders []trustOrder `gorm:"foreignKey:UserID"`
}

type trustOrder struct {
	ID     int64 `shardid:"colocate:UserID"`
	UserID int64
	Note   string
}

type trustPlain struct {
	ID   int64
	Name string
}

// distrustMap stops the refresh and lets the map's trust end, as it would
// for a process that cannot read the map.
func distrustMap(t *testing.T, e *Engine) {
	t.Helper()
	e.maps.stopOnce.Do(func() { close(e.maps.stop); <-e.maps.done })
	e.maps.trust.mu.Lock()
	e.maps.trust.until = e.maps.trust.until.AddDate(-1, 0, 0)
	e.maps.trust.mu.Unlock()
	e.maps.trust.expire(e.maps.trustWindow(), "test")
	if err := e.mapUsable(); !errors.Is(err, ErrShardUnavailable) {
		t.Fatalf("not distrusted: %v", err)
	}
}

func trustSetup(t *testing.T) (*gorm.DB, *Engine, int64) {
	db, e := openEngine(t, Config{}, true)
	must(t, e.Migrator(db).AutoMigrate(&trustUser{}, &trustOrder{}, &trustPlain{}))
	u := trustUser{Name: "seed"}
	must(t, db.Clauses(hinted{OnShard(1)}).Create(&u).Error)
	must(t, db.Create(&trustOrder{UserID: u.ID, Note: "n"}).Error)
	must(t, db.Create(&trustPlain{Name: "p"}).Error)
	return db, e, u.ID
}

func TestEveryStatementOnAShardIsRefusedWhileTheMapIsDistrusted(t *testing.T) {
	db, e, id := trustSetup(t)
	distrustMap(t, e)
	on1 := func() *gorm.DB { return db.Clauses(hinted{OnShard(1)}) }
	all := func() *gorm.DB { return db.Clauses(hinted{AllShards()}) }
	var users []trustUser
	var n int64
	var names []string
	paths := []struct {
		name string
		run  func() error
	}{
		{"create on1", func() error { return on1().Create(&trustUser{Name: "x"}).Error }},
		{"create no clause", func() error { return db.Create(&trustUser{Name: "x"}).Error }},
		{"find on1", func() error { return on1().Find(&users).Error }},
		{"find all", func() error { return all().Find(&users).Error }},
		{"first by id", func() error { return db.First(&trustUser{}, id).Error }},
		{"count all", func() error { return all().Model(&trustUser{}).Count(&n).Error }},
		{"pluck on1", func() error { return on1().Model(&trustUser{}).Pluck("name", &names).Error }},
		{"row on1", func() error {
			tx := on1().Model(&trustUser{}).Select("name")
			row := tx.Row()
			if row == nil {
				return tx.Error
			}
			return row.Err()
		}},
		{"rows on1", func() error {
			rows, err := on1().Model(&trustUser{}).Rows()
			if err == nil {
				rows.Close()
			}
			return err
		}},
		{"raw scan on1", func() error { return on1().Raw("SELECT * FROM trust_users").Scan(&users).Error }},
		{"raw rows on1", func() error {
			rows, err := on1().Raw("SELECT * FROM trust_users").Rows()
			if err == nil {
				rows.Close()
			}
			return err
		}},
		{"exec on1", func() error { return on1().Exec("UPDATE trust_users SET name = 'exec'").Error }},
		{"exec on1 no table", func() error { return on1().Exec("SELECT 1").Error }},
		{"table update on1", func() error { return on1().Table("trust_users").Where("id = ?", id).Update("name", "t").Error }},
		{"table create on1", func() error {
			return on1().Table("trust_users").Create(map[string]any{"id": id + 7, "name": "t"}).Error
		}},
		{"table find on1", func() error {
			var m []map[string]any
			return on1().Table("trust_users").Find(&m).Error
		}},
		{"update by id", func() error { return db.Model(&trustUser{ID: id}).Update("name", "u").Error }},
		{"save", func() error { return db.Save(&trustUser{ID: id, Name: "s"}).Error }},
		{"delete by id", func() error { return db.Delete(&trustUser{ID: id}).Error }},
		{"find in batches", func() error {
			return all().FindInBatches(&users, 10, func(*gorm.DB, int) error { return nil }).Error
		}},
		{"preload all", func() error { return all().Preload("Orders").Find(&users).Error }},
		{"association find", func() error {
			var orders []trustOrder
			return db.Model(&trustUser{ID: id}).Association("Orders").Find(&orders)
		}},
		{"association append", func() error {
			return db.Model(&trustUser{ID: id}).Association("Orders").Append(&trustOrder{Note: "a"})
		}},
		{"tx begun on1, exec", func() error {
			return on1().Transaction(func(tx *gorm.DB) error { return tx.Exec("UPDATE trust_users SET name = 'tx'").Error })
		}},
		{"tx begun on1, raw", func() error {
			return on1().Transaction(func(tx *gorm.DB) error { return tx.Raw("SELECT * FROM trust_users").Scan(&users).Error })
		}},
		{"tx begun on1, create", func() error {
			return on1().Transaction(func(tx *gorm.DB) error { return tx.Create(&trustUser{Name: "tx"}).Error })
		}},
		{"connection on1 exec", func() error {
			return on1().Connection(func(tx *gorm.DB) error { return tx.Exec("UPDATE trust_users SET name = 'conn'").Error })
		}},
		{"create in batches split", func() error {
			return db.CreateInBatches([]trustUser{{ID: id}, {Name: "b"}}, 1).Error
		}},
	}
	for _, p := range paths {
		err := p.run()
		if !errors.Is(err, ErrShardUnavailable) {
			t.Errorf("%s with the map distrusted: %v; want ErrShardUnavailable", p.name, err)
		}
	}
	_ = sql.ErrNoRows
}

func TestUnshardedModelsIgnoreTheMapsTrust(t *testing.T) {
	db, e, _ := trustSetup(t)
	distrustMap(t, e)
	var plains []trustPlain
	var n int64
	paths := []struct {
		name string
		run  func() error
	}{
		{"create", func() error { return db.Create(&trustPlain{Name: "x"}).Error }},
		{"find", func() error { return db.Find(&plains).Error }},
		{"count", func() error { return db.Model(&trustPlain{}).Count(&n).Error }},
		{"update", func() error { return db.Model(&trustPlain{}).Where("name = ?", "x").Update("name", "y").Error }},
		{"delete", func() error { return db.Where("name = ?", "y").Delete(&trustPlain{}).Error }},
		{"exec", func() error { return db.Exec("UPDATE trust_plains SET name = 'e'").Error }},
		{"raw", func() error { return db.Raw("SELECT * FROM trust_plains").Scan(&plains).Error }},
		{"table", func() error { return db.Table("trust_plains").Where("id > 0").Update("name", "t").Error }},
		{"tx", func() error {
			return db.Transaction(func(tx *gorm.DB) error { return tx.Create(&trustPlain{Name: "tx"}).Error })
		}},
		{"tx exec", func() error {
			return db.Transaction(func(tx *gorm.DB) error { return tx.Exec("UPDATE trust_plains SET name = 'tx'").Error })
		}},
		{"pluck", func() error {
			var s []string
			return db.Model(&trustPlain{}).Pluck("name", &s).Error
		}},
		{"first", func() error { return db.First(&trustPlain{}).Error }},
		{"save", func() error { return db.Save(&trustPlain{ID: 1, Name: "s"}).Error }},
		{"migrate", func() error { return db.AutoMigrate(&trustPlain{}) }},
	}
	for _, p := range paths {
		if err := p.run(); err != nil {
			t.Errorf("%s on an unsharded model with the map distrusted: %v", p.name, err)
		}
	}
}
