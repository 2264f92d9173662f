package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// MvSheet is the source's table of the target-columns tests; the other
// MvSheet* types are the same table as a target may have it instead.
type (
	MvSheet struct {
		ID   int64   `shardid:"strategy:snowflake"`
		Body string  `gorm:"size:255"`
		Tag  *string `gorm:"size:40"`
	}
	MvSheetRegion struct { // a column the source lacks, NOT NULL without a default
		ID     int64   `gorm:"primaryKey;autoIncrement:false"`
		Body   string  `gorm:"size:255"`
		Tag    *string `gorm:"size:40"`
		Region string  `gorm:"size:20;not null"`
	}
	MvSheetRegionDefault struct { // the same with a default
		ID     int64   `gorm:"primaryKey;autoIncrement:false"`
		Body   string  `gorm:"size:255"`
		Tag    *string `gorm:"size:40"`
		Region string  `gorm:"size:20;not null;default:eu"`
		Note   *string `gorm:"size:20"`
	}
	MvSheetShortBody struct { // a shorter length
		ID   int64   `gorm:"primaryKey;autoIncrement:false"`
		Body string  `gorm:"size:10"`
		Tag  *string `gorm:"size:40"`
	}
	MvSheetLongBody struct { // a longer one
		ID   int64   `gorm:"primaryKey;autoIncrement:false"`
		Body string  `gorm:"size:500"`
		Tag  *string `gorm:"size:40"`
	}
	MvSheetNumericBody struct { // SQLite's INTEGER affinity, which turns the text '0123' into 123
		ID   int64   `gorm:"primaryKey;autoIncrement:false"`
		Body string  `gorm:"type:integer"`
		Tag  *string `gorm:"size:40"`
	}
	MvSheetLatinBody struct { // MariaDB's latin1, which has no 日本
		ID   int64   `gorm:"primaryKey;autoIncrement:false"`
		Body string  `gorm:"type:varchar(255) CHARACTER SET latin1"`
		Tag  *string `gorm:"size:40"`
	}
	MvSheetTagRequired struct { // NOT NULL where the source's is nullable
		ID   int64  `gorm:"primaryKey;autoIncrement:false"`
		Body string `gorm:"size:255"`
		Tag  string `gorm:"size:40;not null"`
	}
	MvSheetSame struct {
		ID   int64   `gorm:"primaryKey;autoIncrement:false"`
		Body string  `gorm:"size:255"`
		Tag  *string `gorm:"size:40"`
	}
)

func (MvSheetRegion) TableName() string        { return "mv_sheets" }
func (MvSheetRegionDefault) TableName() string { return "mv_sheets" }
func (MvSheetShortBody) TableName() string     { return "mv_sheets" }
func (MvSheetLongBody) TableName() string      { return "mv_sheets" }
func (MvSheetNumericBody) TableName() string   { return "mv_sheets" }
func (MvSheetLatinBody) TableName() string     { return "mv_sheets" }
func (MvSheetTagRequired) TableName() string   { return "mv_sheets" }
func (MvSheetSame) TableName() string          { return "mv_sheets" }

// sheetRows is how many sheets of the moving range the tests write.
const sheetRows = 30

// newSheetRig is a move rig with sheetRows sheets of the moving range on
// the source, every third without a tag, every fifth's body digits alone,
// and their bodies as written.
func newSheetRig(t *testing.T, b backend) (*moveRig, map[int64]MvSheet) {
	t.Helper()
	dir := t.TempDir()
	for _, k := range []int{moveSource, moveTarget} {
		must(t, direct(t, b, dir)[k].Migrator().DropTable("mv_sheets"))
	}
	r := newMoveRig(t, b, dir)
	t.Cleanup(func() { // other move tests' moves of every migrated table would carry it
		for _, db := range []*gorm.DB{r.source, r.target} {
			_ = db.Migrator().DropTable("mv_sheets")
		}
	})
	must(t, r.p.AutoMigrate(r.db, &MvSheet{}))
	sheets := map[int64]MvSheet{}
	for i := 0; i < sheetRows; i++ {
		s := MvSheet{Body: fmt.Sprintf("0%d, longer than ten characters, 日本", i)}
		if i%5 == 0 {
			s.Body = fmt.Sprintf("0%d", i) // a number to SQLite's INTEGER affinity
		}
		if i%3 != 0 {
			tag := fmt.Sprint("tag ", i)
			s.Tag = &tag
		}
		must(t, r.db.Clauses(shardid.OnShard(movingRange.From+i)).Create(&s).Error)
		sheets[s.ID] = s
	}
	return r, sheets
}

// sheetModels are the models a move of the sheet rig carries.
var sheetModels = append([]any{&MvSheet{}}, moveModels...)

// reshapeTarget makes the target's mv_sheets anew as model has it, then
// runs each statement of ddl on the target.
func reshapeTarget(t *testing.T, r *moveRig, model any, ddl ...string) {
	t.Helper()
	must(t, r.target.Migrator().DropTable("mv_sheets"))
	must(t, r.target.AutoMigrate(model))
	for _, q := range ddl {
		must(t, r.target.Exec(q).Error)
	}
}

// wantRefusedUntouched fails the test unless err is the prepare's refusal
// naming mv_sheets, column, the target and want, and the move left
// nothing: no row on the target, the source's rows as they were, no fence
// row, change log or trigger there, no move on record and the map as it
// was.
func wantRefusedUntouched(t *testing.T, r *moveRig, sheets map[int64]MvSheet, version int64, err error, column, want string) {
	t.Helper()
	target := r.b.name + "-target"
	if !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), "mv_sheets") || !strings.Contains(err.Error(), column) ||
		!strings.Contains(err.Error(), target) || !strings.Contains(err.Error(), want) {
		t.Fatalf("the move: %v; want ErrMoveInvalid naming mv_sheets, the column %s, %s and %q", err, column, target, want)
	}
	for _, table := range []string{"mv_sheets", "mv_users", "mv_photos", "mv_ledgers", "mv_docs"} {
		var n int64
		must(t, r.target.Table(table).Count(&n).Error)
		if n != 0 {
			t.Errorf("the refused move wrote %d rows of %s on the target", n, table)
		}
	}
	wantSheets(t, r.source, "source", sheets)
	for _, table := range []string{"shardid_move_fence", "shardid_move_changes"} {
		if !r.source.Migrator().HasTable(table) {
			continue
		}
		var n int64
		must(t, r.source.Table(table).Count(&n).Error)
		if n != 0 {
			t.Errorf("the refused move left %d rows in %s on the source", n, table)
		}
	}
	if n := countTriggers(t, r); n != 0 {
		t.Errorf("the refused move left %d triggers on the source", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	moves, err := r.p.Moves(ctx)
	must(t, err)
	if len(moves) != 0 {
		t.Errorf("the refused move left moves on record: %+v", moves)
	}
	if v, err := r.p.RefreshMap(ctx); err != nil || v != version {
		t.Errorf("the map after the refused move: version %d (%v); want %d", v, err, version)
	}
}

// countTriggers counts the triggers on the source database, read from its
// catalog.
func countTriggers(t *testing.T, r *moveRig) int64 {
	t.Helper()
	q := map[string]string{
		"mariadb":  "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()",
		"postgres": "SELECT COUNT(*) FROM pg_trigger WHERE NOT tgisinternal",
		"sqlite":   "SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger'",
	}[r.b.name]
	var n int64
	must(t, r.source.Raw(q).Scan(&n).Error)
	return n
}

// moveSheets runs the move of the sheet rig's models and returns its error.
func moveSheets(t *testing.T, r *moveRig) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: r.b.name + "-target", Models: sheetModels})
	return err
}

// wantSheets fails the test unless db (the move's side) holds every sheet,
// and no other, with its body and tag.
func wantSheets(t *testing.T, db *gorm.DB, side string, sheets map[int64]MvSheet) {
	t.Helper()
	var got []MvSheet
	must(t, db.Find(&got).Error)
	if len(got) != len(sheets) {
		t.Errorf("the %s holds %d sheets; want %d", side, len(got), len(sheets))
	}
	for _, s := range got {
		if want := sheets[s.ID]; !sameSheet(s, want) {
			t.Errorf("the %s's sheet %d is %+v; want %+v", side, s.ID, s, want)
		}
	}
}

// sameSheet tells whether two sheets have the same key, body and tag.
func sameSheet(a, b MvSheet) bool {
	return a.ID == b.ID && a.Body == b.Body && (a.Tag == nil) == (b.Tag == nil) && (a.Tag == nil || *a.Tag == *b.Tag)
}

// targetColumnsCase is a target's mv_sheets whose columns cannot take the
// source's rows as they are, and one that can.
type targetColumnsCase struct {
	name     string
	backends []string // where it applies
	column   string   // the column the refusal names
	want     string   // and what it says of it
	refused  func(t *testing.T, r *moveRig)
	accepted func(t *testing.T, r *moveRig)
	after    func(t *testing.T, r *moveRig) // checks the target's table after the move, if set
}

var targetColumnsCases = []targetColumnsCase{
	{
		name: "a column the source lacks, NOT NULL without a default", backends: []string{"sqlite", "mariadb", "postgres"},
		column: "region", want: "NOT NULL without a default",
		refused:  func(t *testing.T, r *moveRig) { reshapeTarget(t, r, &MvSheetRegion{}) },
		accepted: func(t *testing.T, r *moveRig) { reshapeTarget(t, r, &MvSheetRegionDefault{}) },
		after: func(t *testing.T, r *moveRig) {
			var got []MvSheetRegionDefault
			must(t, r.target.Find(&got).Error)
			for _, s := range got {
				if s.Region != "eu" || s.Note != nil {
					t.Errorf("the target's sheet %d has region %q and note %v; want the default eu and NULL", s.ID, s.Region, s.Note)
				}
			}
		},
	},
	{
		name: "a shorter length", backends: []string{"mariadb", "postgres"},
		column: "body", want: "cannot keep every value",
		refused:  func(t *testing.T, r *moveRig) { reshapeTarget(t, r, &MvSheetShortBody{}) },
		accepted: func(t *testing.T, r *moveRig) { reshapeTarget(t, r, &MvSheetLongBody{}) },
	},
	{
		name: "another affinity", backends: []string{"sqlite"},
		column: "body", want: "cannot keep every value",
		refused:  func(t *testing.T, r *moveRig) { reshapeTarget(t, r, &MvSheetNumericBody{}) },
		accepted: func(t *testing.T, r *moveRig) { reshapeTarget(t, r, &MvSheetLongBody{}) },
	},
	{
		name: "a narrower character set", backends: []string{"mariadb"},
		column: "body", want: "cannot keep every value",
		refused:  func(t *testing.T, r *moveRig) { reshapeTarget(t, r, &MvSheetLatinBody{}) },
		accepted: func(t *testing.T, r *moveRig) { reshapeTarget(t, r, &MvSheetSame{}) },
	},
	{
		name: "NOT NULL where the source's is nullable", backends: []string{"sqlite", "mariadb", "postgres"},
		column: "tag", want: "NOT NULL on",
		refused:  func(t *testing.T, r *moveRig) { reshapeTarget(t, r, &MvSheetTagRequired{}) },
		accepted: func(t *testing.T, r *moveRig) { reshapeTarget(t, r, &MvSheetSame{}) },
	},
	{
		name: "generated on the source alone", backends: []string{"sqlite", "mariadb", "postgres"},
		column: "body_len", want: "generated",
		refused: func(t *testing.T, r *moveRig) {
			must(t, r.source.Exec(generatedBodyLen(r.b.name)).Error)
			reshapeTarget(t, r, &MvSheetSame{}, "ALTER TABLE mv_sheets ADD COLUMN body_len INT")
		},
		accepted: func(t *testing.T, r *moveRig) { reshapeTarget(t, r, &MvSheetSame{}, generatedBodyLen(r.b.name)) },
	},
	{
		name: "generated on the target alone", backends: []string{"sqlite", "mariadb", "postgres"},
		column: "body_len", want: "generated",
		refused: func(t *testing.T, r *moveRig) {
			must(t, r.source.Exec("ALTER TABLE mv_sheets ADD COLUMN body_len INT").Error)
			must(t, r.source.Exec("UPDATE mv_sheets SET body_len = 7").Error)
			reshapeTarget(t, r, &MvSheetSame{}, generatedBodyLen(r.b.name))
		},
		accepted: func(t *testing.T, r *moveRig) {
			reshapeTarget(t, r, &MvSheetSame{}, "ALTER TABLE mv_sheets ADD COLUMN body_len INT")
		},
	},
}

// generatedBodyLen adds to mv_sheets a column generated from the body's
// length, in the backend's SQL.
func generatedBodyLen(backend string) string {
	return map[string]string{
		"mariadb":  "ALTER TABLE mv_sheets ADD COLUMN body_len INT AS (CHAR_LENGTH(body)) PERSISTENT",
		"postgres": "ALTER TABLE mv_sheets ADD COLUMN body_len INT GENERATED ALWAYS AS (length(body)) STORED",
		"sqlite":   "ALTER TABLE mv_sheets ADD COLUMN body_len INT GENERATED ALWAYS AS (length(body)) VIRTUAL",
	}[backend]
}

// TestMoveRefusesATargetWhoseColumnsCannotTakeTheSourcesRows: a target
// table whose columns would refuse, change or drop the source's values
// (a column the source lacks that is NOT NULL without a default, a shorter
// length, another affinity or character set, NOT NULL where the source's
// is nullable, a column generated on one side alone) is refused by the
// prepare with ErrMoveInvalid naming the table, the column and the target,
// before the source is fenced and with nothing written or recorded, rather
// than failing the copy with the driver's error or losing values. Once
// the target's table can take them (a column the source lacks that is
// nullable or has a default, a longer length, the same column), the move
// goes through with every value.
func TestMoveRefusesATargetWhoseColumnsCannotTakeTheSourcesRows(t *testing.T) {
	for _, c := range targetColumnsCases {
		t.Run(c.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, b backend) {
				if !strings.Contains(strings.Join(c.backends, ","), b.name) {
					t.Skipf("not a case on %s", b.name)
				}
				r, sheets := newSheetRig(t, b)
				version := r.p.MapVersion()
				c.refused(t, r)
				wantRefusedUntouched(t, r, sheets, version, moveSheets(t, r), c.column, c.want)

				c.accepted(t, r)
				must(t, moveSheets(t, r))
				wantSheets(t, r.target, "target", sheets)
				if c.after != nil {
					c.after(t, r)
				}
			})
		})
	}
}

// TestMoveNamesATargetColumnMadeNotNullWithoutADefaultDuringIt: a column
// the source lacks, added on the target alone while the move copies, NOT
// NULL without a default, fails the move with ErrMoveVerify naming the
// table, the column and the target and saying what to do, rather than
// with the driver's error; once the column has a default there, the move
// run again goes through with every sheet.
func TestMoveNamesATargetColumnMadeNotNullWithoutADefaultDuringIt(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, sheets := newSheetRig(t, b)
		target := b.name + "-target"
		altered := false
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: target, Models: sheetModels, ChunkSize: 5, Progress: func(p shardid.MoveProgress) {
			if altered || p.Table != "mv_sheets" || p.Step != "chunk" {
				return
			}
			altered = true
			must(t, r.target.Exec("ALTER TABLE mv_sheets ADD COLUMN region VARCHAR(20) NOT NULL DEFAULT 'x'").Error) // the rows copied so far take one
			must(t, r.target.Exec("ALTER TABLE mv_sheets ALTER COLUMN region DROP DEFAULT").Error)
		}})
		if !altered {
			t.Fatalf("the move never copied a chunk of mv_sheets (its error: %v)", err)
		}
		if !errors.Is(err, shardid.ErrMoveVerify) || !strings.Contains(err.Error(), "mv_sheets") || !strings.Contains(err.Error(), "region") ||
			!strings.Contains(err.Error(), target) || !strings.Contains(err.Error(), "give the column a default") {
			t.Fatalf("the move: %v; want ErrMoveVerify naming mv_sheets, region and %s, saying to give the column a default", err, target)
		}
		must(t, r.target.Exec("ALTER TABLE mv_sheets ALTER COLUMN region SET DEFAULT 'eu'").Error)
		r.move(t, shardid.Move{Models: sheetModels})
		wantSheets(t, r.target, "target", sheets)
	})
}
