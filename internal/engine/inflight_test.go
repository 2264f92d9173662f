package engine

import (
	"context"
	"runtime"
	"testing"

	"gorm.io/gorm"
)

type heldReader struct {
	ID   int64 `shardid:""`
	Name string
}

type wrappedByAnotherPlugin struct{}

// holdFind, when set, runs in heldReader's AfterFind: the statement is still
// running.
var holdFind func(tx *gorm.DB)

func (*heldReader) AfterFind(tx *gorm.DB) error {
	if holdFind != nil {
		holdFind(tx)
	}
	return nil
}

// TestAStatementCountsInItsMapVersionUntilItEnds: a statement that began
// routing by a map version keeps the process on that version until it ends,
// however its context was wrapped meanwhile; a statement instance run twice
// counts and uncounts each run, its context as it came.
func TestAStatementCountsInItsMapVersionUntilItEnds(t *testing.T) {
	db, e := openEngine(t, Config{}, true)
	must(t, e.Migrator(db).AutoMigrate(&heldReader{}))
	row := heldReader{Name: "r"}
	must(t, db.Create(&row).Error)
	old := e.inflight.current.Load().version

	held, release := make(chan struct{}), make(chan struct{})
	holdFind = func(tx *gorm.DB) {
		tx.Statement.Context = context.WithValue(tx.Statement.Context, wrappedByAnotherPlugin{}, true)
		close(held)
		<-release
	}
	t.Cleanup(func() { holdFind = nil })
	done := make(chan error)
	go func() { var got heldReader; done <- db.First(&got, row.ID).Error }()
	<-held
	e.routeBy(old + 1)
	if v := e.oldestRouted(old + 1); v != old {
		t.Errorf("while a statement routed by version %d runs, the process follows %d", old, v)
	}
	close(release)
	must(t, <-done)
	if v := e.oldestRouted(old + 1); v != old+1 {
		t.Errorf("after the statement ended the process follows %d, want %d", v, old+1)
	}

	holdFind = nil
	query := db.Model(&heldReader{}).Where("id = ?", row.ID) // one statement instance, run twice
	came := query.Statement.Context
	for range 2 {
		var got []heldReader
		must(t, query.Find(&got).Error)
		if query.Statement.Context != came {
			t.Errorf("a statement that ended keeps a context of the plugin's: %T", query.Statement.Context)
		}
	}
	e.routeBy(old + 2)
	if v := e.oldestRouted(old + 2); v != old+2 {
		t.Errorf("after a statement instance ran twice the process follows %d, want %d", v, old+2)
	}
}

// TestAStatementRunningWhileCollectionsRunStaysCountedUntilItEnds: a
// statement of an older map version keeps the process on it while
// collections run (the engine holds older versions weakly, the statement
// strongly), and gives its count back when it ends, its version then let go.
func TestAStatementRunningWhileCollectionsRunStaysCountedUntilItEnds(t *testing.T) {
	db, e := openEngine(t, Config{}, true)
	must(t, e.Migrator(db).AutoMigrate(&heldReader{}))
	row := heldReader{Name: "r"}
	must(t, db.Create(&row).Error)
	old := e.inflight.current.Load().version

	held, release := make(chan struct{}), make(chan struct{})
	holdFind = func(*gorm.DB) { close(held); <-release }
	t.Cleanup(func() { holdFind = nil })
	done := make(chan error)
	go func() { var got heldReader; done <- db.First(&got, row.ID).Error }()
	<-held
	e.routeBy(old + 1)
	for collection := range 4 {
		runtime.GC()
		if v := e.oldestRouted(old + 1); v != old {
			t.Fatalf("after collection %d, while a statement routed by version %d runs, the process follows %d", collection, old, v)
		}
	}
	close(release)
	must(t, <-done)
	if v := e.oldestRouted(old + 1); v != old+1 {
		t.Errorf("after the statement ended the process follows %d, want %d", v, old+1)
	}
	countedBalanced(t, e, "after a statement held while collections ran")
	e.inflight.mu.Lock() // the map's refresh loop reads the versions too
	n := len(e.inflight.older)
	e.inflight.mu.Unlock()
	if n != 0 {
		t.Errorf("%d older versions kept after their statements ended", n)
	}
}
