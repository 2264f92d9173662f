package integration

import (
	"errors"
	"strings"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// TestPreparedStatementsPerDatabase runs the same SQL on every physical
// database through prepared statements: each database prepares its own.
func TestPreparedStatementsPerDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		for _, form := range []string{"Session", "Config"} {
			t.Run(form, func(t *testing.T) {
				dir := t.TempDir()
				mainDB, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard, PrepareStmt: form == "Config"})
				must(t, err)
				p := shardid.New(shardid.Config{Shards: shards(t, b, dir), Atomic: b.atomicity()})
				firstStart(t, mainDB)
				must(t, mainDB.Use(p))
				t.Cleanup(func() { _ = p.Close() })
				r := &routing{b: b, db: mainDB, direct: direct(t, b, dir), plugin: p}
				fresh(t, mainDB, &author{}, &book{})
				db := mainDB
				if form == "Session" {
					db = mainDB.Session(&gorm.Session{PrepareStmt: true})
				}
				authors := make([]author, 24)
				count := p.Layout().ShardCount()
				for i := range authors {
					authors[i].Name = "prepared"
					onDatabase := (i%physicalShards)*count/physicalShards + i/physicalShards // one INSERT text, on every database in turn
					must(t, db.Clauses(shardid.OnShard(onDatabase)).Create(&authors[i]).Error)
				}
				for _, a := range authors {
					r.mustBeOnItsShard(t, &author{}, a.ID)
					var got author
					must(t, db.First(&got, a.ID).Error)
					if got.ID != a.ID {
						t.Fatalf("First(%d) read %d", a.ID, got.ID)
					}
					must(t, db.Model(&author{ID: a.ID}).Update("name", "again").Error)
					must(t, db.Clauses(shardid.ByID(a.ID)).Transaction(func(tx *gorm.DB) error {
						return tx.Create(&book{AuthorID: a.ID, Title: "in tx"}).Error
					}))
					// A prepared session made before the clause begins its transaction on the shard;
					// made after it, GORM swaps the shard's connection for the plugin's database's:
					// the Create then commits with that transaction, on its own shard.
					must(t, mainDB.Session(&gorm.Session{PrepareStmt: true}).Clauses(shardid.ByID(a.ID)).Transaction(func(tx *gorm.DB) error {
						return tx.Create(&book{AuthorID: a.ID, Title: "in tx"}).Error
					}))
					err := mainDB.Clauses(shardid.ByID(a.ID)).Session(&gorm.Session{PrepareStmt: true}).Transaction(func(tx *gorm.DB) error {
						return tx.Create(&book{AuthorID: a.ID, Title: "moved off"}).Error
					})
					if best := b.name == "sqlite"; best && !errors.Is(err, shardid.ErrCrossShard) || !best && err != nil {
						t.Fatalf("a transaction a prepared session moved off the shard: %v (best effort: ErrCrossShard, else committed)", err)
					}
				}
				var movedOff int64 // read through the plugin: the process reads what it wrote at once
				must(t, db.Model(&book{}).Clauses(shardid.AllShards()).Where("title = ?", "moved off").Count(&movedOff).Error)
				if b.name != "sqlite" && movedOff != int64(len(authors)) {
					t.Fatalf("%d books of the transactions on the plugin's database read back, want %d", movedOff, len(authors))
				}
				for i, d := range r.direct {
					var n int64
					must(t, d.Model(&author{}).Where("name = ?", "again").Count(&n).Error)
					want := int64(0)
					for _, a := range authors {
						if r.physicalOf(a.ID) == i {
							want++
						}
					}
					if n != want {
						t.Fatalf("physical %d has %d updated authors, want %d", i, n, want)
					}
					must(t, d.Model(&book{}).Where("title = ?", "in tx").Count(&n).Error)
					if n != 2*want {
						t.Fatalf("physical %d has %d books, want %d", i, n, 2*want)
					}
					if b.name == "sqlite" {
						want = 0 // refused
					}
					must(t, d.Model(&book{}).Where("title = ?", "moved off").Count(&n).Error)
					if n != want {
						t.Fatalf("physical %d has %d books of the transaction on the plugin's database, want %d", i, n, want)
					}
				}
			})
		}
	})
}

// TestPreparedSessionInShardTransactionsOfTwoDatabases: a prepared session
// made inside a transaction begun with ByID runs the same SQL in a
// transaction on each of two physical databases, as plain GORM runs it in
// one database's.
func TestPreparedSessionInShardTransactionsOfTwoDatabases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		_, x, y := r.spreadAuthors(t, func() author { return author{Name: "seed"} })
		for _, a := range []author{x, y} {
			err := r.db.Clauses(shardid.ByID(a.ID)).Transaction(func(tx *gorm.DB) error {
				var got author
				return tx.Session(&gorm.Session{PrepareStmt: true}).First(&got, a.ID).Error
			})
			if err != nil {
				t.Errorf("a prepared session in the transaction on physical %d: %v", r.physicalOf(a.ID), err)
			}
		}
	})
}

// TestPreparedSessionInATransactionAcrossShardsRollsBackWithIt: the
// statements of a prepared session made inside a transaction across shards
// are the transaction's, as in GORM's own transaction: when it rolls back,
// none of their writes remain, on any database.
func TestPreparedSessionInATransactionAcrossShardsRollsBackWithIt(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		_, x, y := r.spreadAuthors(t, func() author { return author{Name: "seed"} })
		created := author{Name: "prepared-new"}
		err := r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			prepared := tx.Session(&gorm.Session{PrepareStmt: true})
			must(t, prepared.Model(&author{ID: x.ID}).Update("name", "prepared-x").Error)
			must(t, prepared.Model(&author{ID: y.ID}).Update("name", "prepared-y").Error)
			must(t, prepared.Create(&created).Error)
			must(t, prepared.Create(&setting{Value: "prepared"}).Error)
			return errors.New("roll it all back")
		})
		if err == nil || err.Error() != "roll it all back" {
			t.Fatalf("the transaction: %v", err)
		}
		var gotX, gotY author
		must(t, r.direct[r.physicalOf(x.ID)].First(&gotX, x.ID).Error)
		must(t, r.direct[r.physicalOf(y.ID)].First(&gotY, y.ID).Error)
		if gotX.Name != "seed" || gotY.Name != "seed" {
			t.Errorf("after the rollback x is %q and y %q, want both %q", gotX.Name, gotY.Name, "seed")
		}
		if created.ID != 0 {
			if on := r.where(t, &author{}, created.ID); len(on) != 0 {
				t.Errorf("the author created in the rolled-back transaction is on physical %v", on)
			}
		}
		var n int64
		must(t, r.db.Model(&setting{}).Where("value = ?", "prepared").Count(&n).Error)
		if n != 0 {
			t.Errorf("%d settings of the rolled-back transaction remain", n)
		}
	})
}

// TestErrorsNameTheirDatabase: a statement that fails on one physical
// database says which, and its error is still the database's.
func TestErrorsNameTheirDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		a := author{Name: "dup"}
		must(t, r.db.Create(&a).Error)
		name := r.plugin.ShardMap().Name(r.plugin.ShardMap().Physical(r.plugin.Layout().Shard(a.ID)))
		err := r.db.Create(&author{ID: a.ID, Name: "again"}).Error
		if err == nil || !strings.HasPrefix(err.Error(), "shardid: on "+name+": ") {
			t.Fatalf("a duplicate key on %s: %v", name, err)
		}
		var mysqlErr *mysqldriver.MySQLError
		var pgErr *pgconn.PgError
		switch b.name {
		case "mariadb":
			if !errors.As(err, &mysqlErr) || mysqlErr.Number != 1062 {
				t.Fatalf("the named error is not the MySQL error: %v", err)
			}
		case "postgres":
			if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
				t.Fatalf("the named error is not the PostgreSQL error: %v", err)
			}
		}
		err = r.db.Exec("UPDATE no_such_table SET x = 1").Error // raw SQL on the plugin's database is not named
		if err == nil || strings.HasPrefix(err.Error(), "shardid: on") {
			t.Fatalf("raw SQL on the plugin's database: %v", err)
		}
		err = r.db.Clauses(shardid.ByID(a.ID)).Exec("UPDATE no_such_table SET x = 1").Error
		if err == nil || !strings.HasPrefix(err.Error(), "shardid: on "+name+": ") {
			t.Fatalf("raw SQL on %s: %v", name, err)
		}
		// In a transaction begun on the shard too.
		err = r.db.Clauses(shardid.ByID(a.ID)).Transaction(func(tx *gorm.DB) error {
			return tx.Create(&author{ID: a.ID, Name: "in tx"}).Error
		})
		if err == nil || !strings.HasPrefix(err.Error(), "shardid: on "+name+": ") {
			t.Fatalf("a duplicate key in a transaction on %s: %v", name, err)
		}
		// Not found stays gorm.ErrRecordNotFound itself, for callers that compare it with ==.
		var none author
		if err := r.db.First(&none, r.idOfShardOf(a.ID)).Error; err != gorm.ErrRecordNotFound {
			t.Fatalf("First of a missing row: %v, want gorm.ErrRecordNotFound itself", err)
		}
	})
}

// TestErrorsNameADatabaseThatIsDown: statements on a database that is down
// fail naming it: a query, and writes in GORM's own transaction. (Begin is
// not a statement: its error is GORM's own.)
func TestErrorsNameADatabaseThatIsDown(t *testing.T) {
	dir := t.TempDir()
	b := backends[0]
	list := shards(t, b, dir)
	third, err := gorm.Open(list[2].Dialector, &gorm.Config{Logger: logger.Discard})
	must(t, err)
	list[2].Dialector, list[2].DB = nil, third
	db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	p := shardid.New(shardid.Config{Shards: list, Atomic: b.atomicity()})
	firstStart(t, db)
	must(t, db.Use(p))
	defer p.Close()
	must(t, db.AutoMigrate(&author{}))
	l := p.Layout()
	down := l.Compose(time.Now(), l.ShardCount()/2+1, 1)
	must(t, db.Clauses(shardid.ByID(down)).Exec("SELECT 1").Error) // opened, and its token checked, before it goes down
	thirdPool, _ := third.DB()
	must(t, thirdPool.Close())
	var back author
	for form, err := range map[string]error{
		"First":  db.First(&back, down).Error,
		"Create": db.Create(&author{ID: down, Name: "down"}).Error,
		"Update": db.Model(&author{ID: down}).Update("name", "x").Error,
		"Delete": db.Delete(&author{ID: down}).Error,
	} {
		if err == nil || !strings.HasPrefix(err.Error(), "shardid: on sqlite-2: ") {
			t.Errorf("%s on the database that is down: %v", form, err)
		}
	}
}
