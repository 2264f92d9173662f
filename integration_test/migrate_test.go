package integration

import (
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// ledger has a tagged primary key.
type ledger struct {
	ID   int64 `shardid:""`
	Name string
}

// counter has an untagged int primary key, which GORM makes auto-increment:
// the contrast that shows the query below can see auto-increment.
type counter struct {
	ID   int64
	Name string
}

// idColumn describes the id column of table: its type and whether the
// database fills it by itself (AUTO_INCREMENT, serial, identity).
func idColumn(t *testing.T, db *gorm.DB, b backend, table string) (dataType string, generated bool) {
	t.Helper()
	switch b.name {
	case "mariadb":
		var extra string
		row := db.Raw("SELECT DATA_TYPE, EXTRA FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = 'id'", table).Row()
		if err := row.Scan(&dataType, &extra); err != nil {
			t.Fatal(err)
		}
		return dataType, strings.Contains(strings.ToLower(extra), "auto_increment")
	case "postgres":
		var def *string
		var identity string
		row := db.Raw("SELECT data_type, column_default, is_identity FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? AND column_name = 'id'", table).Row()
		if err := row.Scan(&dataType, &def, &identity); err != nil {
			t.Fatal(err)
		}
		return dataType, def != nil || identity == "YES"
	default:
		var ddl string
		if err := db.Raw("SELECT sql FROM sqlite_master WHERE name = ?", table).Row().Scan(&ddl); err != nil {
			t.Fatal(err)
		}
		return "integer", strings.Contains(strings.ToUpper(ddl), "AUTOINCREMENT")
	}
}

func TestAutoMigrateMakesAPlainBigint(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		db := open(t, b, t.TempDir(), shardid.Config{})
		fresh(t, db, &ledger{}, &counter{})
		if typ, generated := idColumn(t, db, b, "ledgers"); generated || (b.name != "sqlite" && typ != "bigint") {
			t.Fatalf("ledgers.id is %s, generated=%v; want a plain bigint", typ, generated)
		}
		if _, generated := idColumn(t, db, b, "counters"); !generated {
			t.Fatal("counters.id (untagged) should be auto-increment: the check cannot see it")
		}
	})
}

type member struct {
	ID      int64 `shardid:""`
	Name    string
	Card    *card
	Posts   []post
	Circles []circle `gorm:"many2many:member_circles"`
}

type card struct {
	ID       shardid.ID `shardid:"colocate:MemberID"`
	MemberID int64
}

type post struct {
	ID       shardid.ID `shardid:"colocate:MemberID"`
	MemberID int64
	Member   *member
	Title    string
}

type circle struct {
	ID   uint64 `shardid:"strategy:snowflake"`
	Name string
}

func TestAssociationsOnEveryDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		db := open(t, b, t.TempDir(), shardid.Config{})
		_ = migrator(db).DropTable("member_circles")
		fresh(t, db, &member{}, &card{}, &post{}, &circle{})
		m := member{Name: "m", Card: &card{}, Posts: []post{{Title: "a"}, {Title: "b"}}, Circles: []circle{{Name: "c"}}}
		if err := db.Create(&m).Error; err != nil {
			t.Fatal(err)
		}
		var got member
		if err := db.Preload("Card").Preload("Posts").Preload("Circles").First(&got, m.ID).Error; err != nil {
			t.Fatal(err)
		}
		if got.Card == nil || got.Card.ID != m.Card.ID || len(got.Posts) != 2 || len(got.Circles) != 1 || got.Circles[0].ID != m.Circles[0].ID {
			t.Fatalf("read back %+v, created %+v", got, m)
		}
		var layout shardid.Layout
		for _, p := range got.Posts {
			if layout.Shard(int64(p.ID)) != layout.Shard(m.ID) {
				t.Fatalf("post %d is not in its member's shard", p.ID)
			}
		}
		p := post{Title: "with a new member", Member: &member{Name: "new"}}
		if err := db.Create(&p).Error; err != nil {
			t.Fatal(err)
		}
		if p.MemberID == 0 || p.MemberID != p.Member.ID || layout.Shard(int64(p.ID)) != layout.Shard(p.MemberID) {
			t.Fatalf("belongs-to: post %d member %d/%d", p.ID, p.MemberID, p.Member.ID)
		}
	})
}
