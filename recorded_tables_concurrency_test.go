package shardid

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"
)

type rcOrder struct {
	gorm.Model
	ID    int64 `shardid:""`
	Item  string
	Lines []rcLine `gorm:"foreignKey:OrderID"`
	Tags  []rcTag  `gorm:"many2many:rc_order_tags"`
}

type rcLine struct {
	ID      int64 `shardid:"colocate:OrderID"`
	OrderID int64
	Qty     int
}

type rcTag struct {
	ID   int64 `gorm:"primaryKey"`
	Name string
}

// Statements of one process on many goroutines go on, none refused, while
// another process of the same version migrates the same models again (a
// rolling restart), shards and drops other tables, and this process
// refreshes its map, reloading the record each time it changed.
func TestStatementsGoOnWhileAnotherProcessMigratesAndThisOneReloadsTheRecord(t *testing.T) {
	dir := t.TempDir()
	a, pa := openWith(t, dir, Config{MapRefresh: 5 * time.Millisecond})
	models := []any{&rcOrder{}, &rcLine{}, &rcTag{}}
	must(t, pa.AutoMigrate(a, models...))
	b, pb := openWith(t, dir, Config{MapRefresh: time.Hour})

	var stop atomic.Bool
	var creates, migrations, refreshes atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
		stop.Store(true)
	}
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				o := rcOrder{Item: "x", Lines: []rcLine{{Qty: 1}}}
				if err := a.Create(&o).Error; err != nil {
					report(fmt.Errorf("Create: %w", err))
					return
				}
				var found rcOrder
				if err := a.Preload("Lines").First(&found, o.ID).Error; err != nil {
					report(fmt.Errorf("First: %w", err))
					return
				}
				if err := a.Create(&rcLine{OrderID: o.ID, Qty: 2}).Error; err != nil {
					report(fmt.Errorf("Create of a colocated child: %w", err))
					return
				}
				creates.Add(1)
			}
		}()
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			if _, err := pa.RefreshMap(t.Context()); err != nil {
				report(fmt.Errorf("RefreshMap: %w", err))
				return
			}
			refreshes.Add(1)
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			if err := pb.AutoMigrate(b, models...); err != nil {
				report(fmt.Errorf("the other process's AutoMigrate: %w", err))
				return
			}
			name := fmt.Sprintf("rc_orders_%d", i%3)
			if err := pb.Migrator(b.Table(name)).AutoMigrate(&rcOrder{}); err != nil {
				report(fmt.Errorf("the other process's Migrator(Table): %w", err))
				return
			}
			if err := pb.Migrator(b).DropTable(name); err != nil {
				report(fmt.Errorf("the other process's DropTable: %w", err))
				return
			}
			migrations.Add(1)
		}
	}()
	time.Sleep(2 * time.Second)
	stop.Store(true)
	wg.Wait()
	close(errs)
	t.Logf("%d creates, %d migrations, %d refreshes", creates.Load(), migrations.Load(), refreshes.Load())
	for err := range errs {
		t.Error(err)
	}
}
