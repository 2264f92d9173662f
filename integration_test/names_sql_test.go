package integration

import (
	"context"
	"errors"
	"gorm.io/gorm"
	"slices"
	"testing"
	"time"

	"github.com/shardid/shardid"
)

// Models whose table and column names need quoting in every dialect:
// reserved words, capitals, spaces, dashes, quotes and letters beyond ASCII.
type (
	NqOrder struct {
		ID        int64    `gorm:"column:Order ID" shardid:"strategy:snowflake"`
		UserID    int64    `gorm:"column:UserID"`
		Group     string   `gorm:"column:group;size:40"`
		User      string   `gorm:"column:user;size:40"`
		FirstName string   `gorm:"column:first name;size:40"`
		Dashed    string   `gorm:"column:x-y;size:40"`
		Unicode   string   `gorm:"column:prénom;size:40"`
		Lines     []NqLine `gorm:"foreignKey:OrderID;references:ID"`
		Tags      []NqTag  `gorm:"many2many:group;joinForeignKey:OrderRef;joinReferences:TagRef"`
		Long      string   `gorm:"column:a_column_name_of_sixty_three_characters_that_fits_the_limits_x;size:40"`
		LineCount int      `gorm:"column:line count"`
		Size      int      `gorm:"column:größe"`
	}
	NqTag struct {
		ID   int64
		Name string `gorm:"column:Name;size:40"`
	}
	NqDoc struct {
		ID   string `gorm:"column:Doc Key;size:36" shardid:"strategy:uuidv7"`
		Body string `gorm:"column:from;size:40"`
	}
	NqLine struct {
		ID      int64  `gorm:"column:select" shardid:"strategy:snowflake;colocate:OrderID"`
		OrderID int64  `gorm:"column:OrderID"`
		Note    string `gorm:"column:it's;size:40"`
	}
)

func (NqOrder) TableName() string { return "order" }
func (NqLine) TableName() string  { return "Order-Lines" }
func (NqTag) TableName() string   { return "tag" }
func (NqDoc) TableName() string {
	return "Dökümanlar_with_a_long_name_near_the_limit_of_sixty_three_xy"
}

// TestAMoveCarriesTablesAndColumnsNamedAsOnlyQuotingAllows: tables and
// columns named by reserved words, in capitals, with spaces, dashes, a
// quote, letters beyond ASCII or 63 characters, a colocated child, a
// many2many join table and a UUID key among them, move with writes during
// the copy and the catch-up: the target holds the source's rows of the
// range, and after the cleanup the source none.
func TestAMoveCarriesTablesAndColumnsNamedAsOnlyQuotingAllows(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		for _, db := range direct(t, b, dir)[moveSource : moveTarget+1] {
			_ = db.Migrator().DropTable(&NqOrder{}, &NqLine{}, "group", &NqDoc{})
		}
		r := newMoveRig(t, b, dir)
		_ = r.db.Migrator().DropTable(&NqTag{})
		must(t, r.p.AutoMigrate(r.db, &NqOrder{}, &NqLine{}, &NqTag{}, &NqDoc{}))
		tag := NqTag{Name: "t"}
		must(t, r.db.Create(&tag).Error)
		for i := 0; i < 10; i++ {
			o := NqOrder{UserID: int64(i), Group: "g", User: "u", FirstName: "f n", Dashed: "d", Unicode: "é",
				Lines: []NqLine{{Note: "a"}, {Note: "b"}}, Tags: []NqTag{tag}}
			must(t, r.db.Clauses(shardid.OnShard(movingRange.From+i)).Omit("Tags.*").Create(&o).Error)
		}
		for i := 0; i < 6; i++ {
			must(t, r.db.Clauses(shardid.OnShard(movingRange.From+i)).Create(&NqDoc{Body: "b"}).Error)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		rep, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 3,
			Models: append([]any{&NqOrder{}, &NqLine{}, &NqDoc{}}, moveModels...), CatchUpBelow: 1,
			Progress: func(p shardid.MoveProgress) {
				if p.Phase != shardid.PhaseCopy && p.Phase != shardid.PhaseCatchUp {
					return
				}
				must(t, r.db.Model(&NqOrder{}).Where(`"UserID" >= 0 OR 1=1`).Clauses(shardid.AllShards()).Update("group", p.Phase).Error)
				o := NqOrder{UserID: 99, Lines: []NqLine{{Note: "c"}}, Tags: []NqTag{tag}}
				must(t, r.db.Clauses(shardid.OnShard(movingRange.From+50)).Omit("Tags.*").Create(&o).Error)
				must(t, r.db.Delete(&o.Lines[0]).Error)
				d := NqDoc{Body: "x"}
				must(t, r.db.Clauses(shardid.OnShard(movingRange.From+51)).Create(&d).Error)
				must(t, r.db.Model(&d).Update("from", "y").Error)
			}})
		if err != nil {
			t.Fatalf("the move: %v", err)
		}
		if rep.Rows["order"] == 0 || rep.Rows["group"] == 0 {
			t.Errorf("the move copied %v", rep.Rows)
		}
		tables := []fpTable{{"order", "Order ID"}, {"Order-Lines", "OrderID"}, {"group", "order_ref"}}
		compareSides(t, r, tables)
		var docs [2]int64
		must(t, r.source.Model(&NqDoc{}).Count(&docs[0]).Error)
		must(t, r.target.Model(&NqDoc{}).Count(&docs[1]).Error)
		if docs[0] == 0 || docs[0] != docs[1] {
			t.Errorf("docs: %d on the source, %d on the target", docs[0], docs[1])
		}
		must(t, r.p.CleanupMove(ctx, movingRange))
		for _, tb := range tables {
			if left := dumpRange(t, r, r.source, tb.name, tb.key); len(left) > 0 {
				t.Errorf("%s: %d rows of the range left on the source after the cleanup", tb.name, len(left))
			}
		}
		if must(t, r.source.Model(&NqDoc{}).Count(&docs[0]).Error); docs[0] != 0 {
			t.Errorf("docs: %d left on the source after the cleanup", docs[0])
		}
	})
}

// TestReadsOverEveryDatabaseOrderByColumnsNamedAsOnlyQuotingAllows: ORDER BY
// text naming a column quoted with a space in it, or with letters beyond
// ASCII, and a Pluck of it, merge as the databases order, as for a plain column
// (on MariaDB text orders by a collation the merge does not reproduce, and
// is refused, as documented).
func TestReadsOverEveryDatabaseOrderByColumnsNamedAsOnlyQuotingAllows(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		db := open(t, b, dir, shardid.Config{Shards: shards(t, b, dir)})
		must(t, migrator(db).DropTable(&NqOrder{}, &NqLine{}, "group"))
		must(t, migrator(db).AutoMigrate(&NqOrder{}, &NqLine{}))
		count := db.Config.Plugins[(&shardid.Plugin{}).Name()].(*shardid.Plugin).Layout().ShardCount()
		for i := range 24 {
			o := NqOrder{LineCount: (i * 7) % 24, Size: 100 - i, FirstName: string(rune('a' + (i*5)%24))}
			must(t, db.Clauses(shardid.OnShard(i*count/24)).Omit("Tags").Create(&o).Error)
		}
		q := db.Statement.Quote
		all := func() *gorm.DB { return db.Clauses(shardid.AllShards()) }
		for _, c := range []struct {
			order string
			first func(NqOrder) bool
			text  bool
		}{
			{q("line count") + " DESC", func(o NqOrder) bool { return o.LineCount == 23 }, false},
			{q("größe") + ", " + q("Order ID"), func(o NqOrder) bool { return o.Size == 77 }, false},
			{"größe DESC", func(o NqOrder) bool { return o.Size == 100 }, false},
			{q("first name"), func(o NqOrder) bool { return o.FirstName == "a" }, true},
		} {
			var rows []NqOrder
			err := all().Order(c.order).Find(&rows).Error
			if c.text && b.name == "mariadb" {
				if !errors.Is(err, shardid.ErrCrossShard) {
					t.Errorf("ORDER BY %s on MariaDB's collation: %v, want ErrCrossShard", c.order, err)
				}
				continue
			}
			if err != nil || len(rows) != 24 || !c.first(rows[0]) {
				t.Errorf("ORDER BY %s over every database: %d rows, %v; first %+v", c.order, len(rows), err, rows[:min(1, len(rows))])
			}
		}
		// A Pluck of the column it orders by, its values merged alone.
		for _, column := range []string{q("größe"), q("line count")} {
			var values []int
			err := all().Model(&NqOrder{}).Order(column+" DESC").Pluck(column, &values).Error
			if err != nil || len(values) != 24 || !slices.IsSortedFunc(values, func(a, b int) int { return b - a }) {
				t.Errorf("Pluck(%s) ordered by it over every database: %v, %v", column, values, err)
			}
		}
	})
}
