package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/google/uuid"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// Models of the fidelity tests: one wide table of many column types, a
// colocated child, a many2many with an unsharded side, a table with keyword
// column names.
type (
	FpTag struct {
		ID   int64
		Name string
	}
	FpItem struct {
		ID        int64 `shardid:"strategy:snowflake"`
		CreatedAt time.Time
		UpdatedAt time.Time
		DeletedAt gorm.DeletedAt `gorm:"index"`
		At        time.Time      `gorm:"precision:6"`
		MaybeAt   *time.Time     `gorm:"precision:6"`
		Amount    string         `gorm:"type:decimal(20,6)"`
		MaybeAmt  *string        `gorm:"type:decimal(30,10)"`
		F64       float64
		F32       float32
		Flag      bool
		MaybeFlag *bool
		Blob      []byte
		Text      string  `gorm:"type:text"`
		Doc       string  `gorm:"type:json"`
		Dflt      string  `gorm:"size:20;default:'dflt'"`
		A         int     `gorm:"uniqueIndex:idx_fp_items_ab"`
		B         string  `gorm:"size:20;uniqueIndex:idx_fp_items_ab"`
		Tags      []FpTag `gorm:"many2many:fp_item_tags"`
	}
	FpChild struct {
		ID     int64 `shardid:"strategy:snowflake;colocate:ItemID"`
		ItemID int64 `gorm:"index"`
		Data   []byte
		Note   *string
	}
	FpKeyword struct {
		ID    int64  `shardid:"strategy:snowflake"`
		Order int    `gorm:"column:order"`
		Key   string `gorm:"column:key;size:40"`
		Group string `gorm:"column:group;size:40"`
	}
)

var fpModels = []any{&FpItem{}, &FpChild{}, &FpKeyword{}}

var fpTables = []string{"fp_items", "fp_children", "fp_keywords", "fp_item_tags", "fp_tags"}

// newFidelityRig is a move rig with the fidelity tests' models migrated too.
func newFidelityRig(t *testing.T, b backend, extra ...any) *moveRig {
	t.Helper()
	dir := t.TempDir()
	drop := func() {
		for _, db := range direct(t, b, dir)[moveSource : moveTarget+1] {
			for _, m := range extra {
				_ = db.Migrator().DropTable(m)
			}
			for _, tb := range fpTables {
				_ = db.Migrator().DropTable(tb)
			}
		}
		if main, err := gorm.Open(b.dialector(t, dir)); err == nil {
			_ = main.Migrator().DropTable("fp_tags")
			if s, err := main.DB(); err == nil {
				_ = s.Close()
			}
		}
	}
	drop()
	r := newMoveRig(t, b, dir)
	t.Cleanup(drop)
	must(t, r.p.AutoMigrate(r.db, append(append([]any{}, fpModels...), extra...)...))
	return r
}

var fpLoc = time.FixedZone("fp+05:45", 5*3600+45*60)

func fpBlob(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed
	}
	if n > 3 {
		b[0], b[n-1], b[n/2] = 0, 0, 0
	}
	return b
}

const fpText = "quote ' double \" backslash \\ \\n percent % under _ tab\t cr\r nl\n bell\x07 esc\x1b unicode ÄÖü ñ 中文 emoji 😀🏳️‍🌈 end"

// fpItem is the i-th item of the fidelity tests.
func fpItem(i int) FpItem {
	at := time.Date(2024, 3, 31, 1, 59, 59, 123456000, fpLoc).Add(time.Duration(i) * time.Hour)
	it := FpItem{
		At:     at,
		Amount: fmt.Sprintf("%d.%06d", 12345678901234-i, 999999-i),
		F64:    []float64{math.MaxFloat64, math.SmallestNonzeroFloat64, -1e-300, 0.1 + 0.2, 1.0000000000000002, -123456789.123456789, math.Copysign(0, -1)}[i%7],
		F32:    []float32{1.0000001, 16777217, math.MaxFloat32, -math.SmallestNonzeroFloat32, 3.1415927}[i%5],
		Flag:   i%2 == 0,
		Blob:   fpBlob(10+i, byte(i)),
		Text:   fpText + fmt.Sprint(i),
		Doc:    fmt.Sprintf(`{"i": %d, "s": "a\"b\\c ü 😀", "n": null, "f": 1.5e300, "arr": [1, "x", {"k": true}]}`, i),
		A:      i % 3,
		B:      fmt.Sprintf("b%d", i),
	}
	if i%3 == 0 {
		it.MaybeAt = ptr(at.Add(-time.Microsecond))
		it.MaybeAmt = ptr("-0.0000000001")
		it.MaybeFlag = ptr(false)
	}
	if i%4 == 0 {
		it.Blob = nil
	}
	if i%5 == 0 {
		it.Blob = []byte{}
	}
	if i%11 == 0 {
		it.Text = ""
	}
	return it
}

const fpRows = 60

type fpSeed struct {
	items, children, keywords []int64
	tags                      []FpTag
}

// seedFidelity writes the fidelity tests' rows, in the moving range and out of it.
func seedFidelity(t *testing.T, r *moveRig) fpSeed {
	t.Helper()
	var s fpSeed
	for i := 0; i < 4; i++ {
		tag := FpTag{Name: fmt.Sprintf("tag%d", i)}
		must(t, r.db.Create(&tag).Error)
		s.tags = append(s.tags, tag)
	}
	for i := 0; i < fpRows; i++ {
		shard := movingRange.From + i%40
		if i%10 == 9 {
			shard = i // out of the range
		}
		it := fpItem(i)
		must(t, r.db.Clauses(shardid.OnShard(shard)).Create(&it).Error)
		s.items = append(s.items, it.ID)
		if i%2 == 0 {
			must(t, r.db.Model(&it).Omit("Tags.*").Association("Tags").Append(&s.tags[i%4], &s.tags[(i+1)%4]))
		}
		c := FpChild{ItemID: it.ID, Data: fpBlob(3+i, 9)}
		if i%3 == 0 {
			c.Note = ptr(fpText)
		}
		must(t, r.db.Create(&c).Error)
		s.children = append(s.children, c.ID)
		k := FpKeyword{Order: i, Key: "k'" + fmt.Sprint(i), Group: "g`\"" + fmt.Sprint(i)}
		must(t, r.db.Clauses(shardid.OnShard(shard)).Create(&k).Error)
		s.keywords = append(s.keywords, k.ID)
	}
	// soft-deleted rows in the range
	for _, id := range s.items[:6:6] {
		must(t, r.db.Delete(&FpItem{ID: id}).Error)
	}
	return s
}

// fpWrite writes during the move: updates of blobs (to 1 MB ones among
// them), NULLs set and unset, soft and hard deletes, new rows.
func fpWrite(t *testing.T, r *moveRig, s *fpSeed, round int) {
	t.Helper()
	for j, id := range s.items {
		if j%10 == 9 {
			continue
		}
		switch (j + round) % 6 {
		case 0:
			must(t, r.db.Unscoped().Model(&FpItem{ID: id}).Updates(map[string]any{"blob": fpBlob(1<<20, byte(round)), "maybe_at": nil, "maybe_amt": nil, "maybe_flag": nil}).Error)
		case 1:
			must(t, r.db.Unscoped().Model(&FpItem{ID: id}).Updates(map[string]any{"blob": nil, "maybe_at": time.Date(2038, 1, 19, 3, 14, 7, 999999000, time.UTC), "f64": math.Copysign(0, -1), "f32": float32(1.0000002), "text": fpText + "upd"}).Error)
		case 2:
			must(t, r.db.Unscoped().Model(&FpItem{ID: id}).Updates(map[string]any{"doc": `{"updated": [true, false, null], "q": "\u0000-free \\ \" '"}`, "amount": "-0.000001", "flag": true, "maybe_flag": true}).Error)
		}
	}
	for j, id := range s.children {
		if (j+round)%4 == 0 && j%10 != 9 {
			must(t, r.db.Model(&FpChild{ID: id}).Updates(map[string]any{"data": fpBlob(100000, byte(j)), "note": nil}).Error)
		}
	}
	// new rows, a hard and a soft delete
	for i := 0; i < 5; i++ {
		it := fpItem(1000*round + i)
		it.B = fmt.Sprintf("new%d-%d", round, i)
		must(t, r.db.Clauses(shardid.OnShard(movingRange.From+100+i)).Create(&it).Error)
		s.items = append(s.items, it.ID)
		must(t, r.db.Model(&it).Omit("Tags.*").Association("Tags").Append(&s.tags[i%4]))
		c := FpChild{ItemID: it.ID, Data: fpBlob(7, 1)}
		must(t, r.db.Create(&c).Error)
	}
	del := s.items[10+round]
	must(t, r.db.Unscoped().Select("Tags").Delete(&FpItem{ID: del}).Error)
	must(t, r.db.Delete(&FpItem{ID: s.items[20+round]}).Error)
	must(t, r.db.Model(&FpItem{ID: s.items[22+round]}).Omit("Tags.*").Association("Tags").Replace(&s.tags[3]))
	must(t, r.db.Model(&FpKeyword{ID: s.keywords[4+round]}).Updates(map[string]any{"order": -1, "key": nil, "group": "upd"}).Error)
}

// dumpRange reads a table's rows of the moving range directly, keyed by
// the text of their primary key, each as exact text of its values (the
// binary protocol on MariaDB, through an argument).
func dumpRange(t *testing.T, r *moveRig, db *gorm.DB, table, keyCol string) map[string]string {
	t.Helper()
	q := fmt.Sprintf("SELECT * FROM %s WHERE 1 = ?", quoteIdent(r.b.name, table))
	rows, err := db.Raw(q, 1).Rows()
	must(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	must(t, err)
	out := map[string]string{}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		must(t, rows.Scan(ptrs...))
		var key int64
		var parts []string
		for i, v := range vals {
			if cols[i] == keyCol {
				switch k := v.(type) {
				case int64:
					key = k
				default:
					_, _ = fmt.Sscan(fmt.Sprint(k), &key)
				}
			}
			parts = append(parts, cols[i]+"="+exactText(v))
		}
		if s := r.p.Layout().Shard(key); s < movingRange.From || s > movingRange.To {
			continue
		}
		k := strings.Join(parts[:1], "")
		if keyCol != "id" {
			k = strings.Join(parts, ";") // join rows: the whole row is the key
		} else {
			k = fmt.Sprint(key)
		}
		if _, dup := out[k]; dup {
			t.Fatalf("%s: row %s twice", table, k)
		}
		out[k] = strings.Join(parts, "; ")
	}
	must(t, rows.Err())
	return out
}

func exactText(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return fmt.Sprintf("bytes(%d):%x", len(x), x)
	case float64:
		return fmt.Sprintf("f64:%b", x)
	case float32:
		return fmt.Sprintf("f32:%b", x)
	case time.Time:
		return "time:" + x.UTC().Format(time.RFC3339Nano) + "@" + x.Location().String()
	}
	return fmt.Sprintf("%T:%#v", v, v)
}

func quoteIdent(backend, name string) string {
	if backend == "mariadb" {
		return "`" + strings.ReplaceAll(name, "`", "``") + "`"
	}
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = `"` + p + `"`
	}
	return strings.Join(parts, ".")
}

type fpTable struct{ name, key string }

var fpCompared = []fpTable{{"fp_items", "id"}, {"fp_children", "item_id"}, {"fp_keywords", "id"}, {"fp_item_tags", "fp_item_id"}}

// compareSides fails the test unless the target holds the source's rows of
// the range exactly.
func compareSides(t *testing.T, r *moveRig, tables []fpTable) map[string]map[string]string {
	t.Helper()
	snap := map[string]map[string]string{}
	for _, tb := range tables {
		src := dumpRange(t, r, r.source, tb.name, tb.key)
		dst := dumpRange(t, r, r.target, tb.name, tb.key)
		snap[tb.name] = src
		if len(src) == 0 {
			t.Errorf("%s: no rows of the range on the source", tb.name)
		}
		var diffs []string
		for k, v := range src {
			if dst[k] != v {
				diffs = append(diffs, fmt.Sprintf("%s\n  source: %.600s\n  target: %.600s", k, v, dst[k]))
			}
		}
		for k := range dst {
			if _, ok := src[k]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s only on the target: %.300s", k, dst[k]))
			}
		}
		sort.Strings(diffs)
		if len(diffs) > 0 {
			t.Errorf("%s: %d rows differ after the move:\n%s", tb.name, len(diffs), strings.Join(diffs[:min(5, len(diffs))], "\n"))
		}
	}
	return snap
}

// TestMoveKeepsEveryValueOfManyColumnTypes: a move of rows of many column types, written to
// during the copy and the catch-up, leaves the target holding the source's
// rows exactly, and after the cleanup the source none of them.
func TestMoveKeepsEveryValueOfManyColumnTypes(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newFidelityRig(t, b)
		s := seedFidelity(t, r)
		wrote := map[string]bool{}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 7, CatchUpBelow: 1,
			Models: append(append([]any{}, moveModels...), fpModels...), Progress: func(p shardid.MoveProgress) {
				key := p.Phase + p.Step
				if p.Phase == shardid.PhaseCopy && p.Table != "fp_items" {
					return
				}
				if wrote[key] || (p.Phase != shardid.PhaseCopy && p.Phase != shardid.PhaseCatchUp) {
					return
				}
				wrote[key] = true
				fpWrite(t, r, &s, len(wrote))
			}})
		must(t, err)
		if len(wrote) < 2 {
			t.Fatalf("wrote in %v only", wrote)
		}
		before := compareSides(t, r, fpCompared)
		// the same through the plugin
		var items []FpItem
		must(t, r.db.Unscoped().Preload("Tags").Find(&items, s.items).Error)
		for _, it := range items {
			if sh := r.p.Layout().Shard(it.ID); sh >= movingRange.From && sh <= movingRange.To && it.Blob != nil && len(it.Blob) == 1<<20 && !bytes.Equal(it.Blob[1:10], fpBlob(1<<20, it.Blob[1]-7)[1:10]) {
				t.Errorf("blob of %d altered", it.ID)
			}
		}
		must(t, r.p.CleanupMove(ctx, movingRange))
		for _, tb := range fpCompared {
			if left := dumpRange(t, r, r.source, tb.name, tb.key); len(left) > 0 {
				t.Errorf("%s: %d rows of the range left on the source after the cleanup", tb.name, len(left))
			}
			if after := dumpRange(t, r, r.target, tb.name, tb.key); fmt.Sprint(after) != fmt.Sprint(before[tb.name]) {
				t.Errorf("%s: the target's rows changed at the cleanup", tb.name)
			}
		}
	})
}

// FpCheck is the table the corruption tests alter on the target.
type FpCheck struct {
	ID   int64 `shardid:"strategy:snowflake"`
	F32  float32
	F64  float64
	Blob []byte
	S1   *string   `gorm:"size:20"`
	S2   *string   `gorm:"size:20"`
	At   time.Time `gorm:"precision:6"`
}

type fpCorruption struct {
	name     string
	seed     FpCheck
	set      string // SQL assignment on the target
	backends string
}

// TestMoveCheckCatchesAValueAlteredOnTheTarget: a value of a copied row
// altered on the target behind the mover's back, after the copy, fails the
// cutover's check.
func TestMoveCheckCatchesAValueAlteredOnTheTarget(t *testing.T) {
	at := time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC)
	cases := []fpCorruption{
		{"float32 last bit", FpCheck{F32: 1.0000001, At: at}, "f32 = 1.0000002", "mariadb postgres"},
		{"float32 above 2^24", FpCheck{F32: 16777216, At: at}, "f32 = 16777218", "mariadb postgres"},
		{"null blob to a zero byte", FpCheck{At: at}, "`blob` = x'00'", "mariadb"},
		{"null blob to a zero byte", FpCheck{At: at}, `blob = '\x00'::bytea`, "postgres"},
		{"separator moved between columns", FpCheck{S1: ptr("a|b"), S2: ptr("c"), At: at}, "s1 = 'a', s2 = 'b|c'", "mariadb postgres"},
		{"null text to a NUL", FpCheck{S1: nil, S2: ptr("c"), At: at}, `s1 = '\0'`, "mariadb"},
		{"microsecond", FpCheck{At: at}, "at = at + INTERVAL 1 MICROSECOND", "mariadb"},
		{"microsecond", FpCheck{At: at}, "at = at + INTERVAL '1 microsecond'", "postgres"},
		{"double last bit", FpCheck{F64: 0.30000000000000004, At: at}, "f64 = 0.3e0", "mariadb postgres"},
	}
	forEachServer(t, func(t *testing.T, b backend) {
		for _, c := range cases {
			if !strings.Contains(c.backends, b.name) {
				continue
			}
			t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
				r := newFidelityRig(t, b, &FpCheck{})
				row := c.seed
				must(t, r.db.Clauses(shardid.OnShard(movingRange.From+3)).Create(&row).Error)
				var before, after string
				must(t, r.source.Raw("SELECT CONCAT(f32, '/', f64) FROM fp_checks WHERE id = ?", row.ID).Scan(&before).Error)
				done := false
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target",
					Models: append(append([]any{&FpCheck{}}, moveModels...), fpModels...), Progress: func(p shardid.MoveProgress) {
						if p.Phase != shardid.PhaseCatchUp || done {
							return
						}
						done = true
						res := r.target.Exec("UPDATE fp_checks SET "+c.set+" WHERE id = ?", row.ID)
						must(t, res.Error)
						if res.RowsAffected != 1 {
							t.Errorf("the corruption changed %d rows", res.RowsAffected)
						}
						must(t, r.target.Raw("SELECT CONCAT(f32, '/', f64) FROM fp_checks WHERE id = ?", row.ID).Scan(&after).Error)
					}})
				if !done {
					t.Fatalf("no catch-up: %v", err)
				}
				src := dumpRange(t, r, r.source, "fp_checks", "id")
				dst := dumpRange(t, r, r.target, "fp_checks", "id")
				if fmt.Sprint(src) == fmt.Sprint(dst) {
					t.Fatalf("the corruption changed nothing the test sees: %v", src)
				}
				if err == nil {
					t.Fatalf("the move succeeded with the target's row altered (%s):\n source %v\n target %v", c.set, src, dst)
				}
				if !strings.Contains(err.Error(), "fp_checks") {
					t.Fatalf("the move failed with %v; want its check naming fp_checks", err)
				}
			})
		}
	})
}

// Per-backend column types.
type (
	FpMy struct {
		ID   int64      `shardid:"strategy:snowflake"`
		U64  uint64     `gorm:"type:bigint unsigned"`
		U8   uint8      `gorm:"type:tinyint unsigned"`
		Bin  []byte     `gorm:"type:binary(16)"`
		Uuid string     `gorm:"type:char(36)"`
		E    string     `gorm:"type:enum('a','b','c d')"`
		Set  string     `gorm:"type:set('x','y','z')"`
		Ts   time.Time  `gorm:"type:timestamp(6) NULL"`
		Dt   *time.Time `gorm:"type:datetime(6)"`
		D    string     `gorm:"type:date"`
		Tm   string     `gorm:"type:time(6)"`
		Yr   int        `gorm:"type:year"`
		Bits []byte     `gorm:"type:bit(12)"`
		Js   string     `gorm:"type:json"`
		Ch   string     `gorm:"type:char(5)"`
		Vb   []byte     `gorm:"type:varbinary(20)"`
		Lat  string     `gorm:"type:varchar(20) CHARACTER SET latin1"`
		Dflt int        `gorm:"default:42"`
	}
	FpPg struct {
		ID     int64     `shardid:"strategy:snowflake"`
		U      string    `gorm:"type:uuid"`
		MaybeU *string   `gorm:"type:uuid"`
		Jb     string    `gorm:"type:jsonb"`
		J      string    `gorm:"type:json"`
		Tz     time.Time `gorm:"type:timestamptz(6)"`
		Ts     time.Time `gorm:"type:timestamp(6)"`
		Arr    string    `gorm:"type:text[]"`
		Iarr   string    `gorm:"type:int8[]"`
		Iv     string    `gorm:"type:interval"`
		N      string    `gorm:"type:numeric"`
		Tm     string    `gorm:"type:time(6)"`
		Ttz    string    `gorm:"type:timetz"`
		Inet   string    `gorm:"type:inet"`
		Bits   string    `gorm:"type:bit varying(12)"`
		Mon    string    `gorm:"type:money"`
		F4     float32   `gorm:"type:real"`
		Ch     string    `gorm:"type:char(5)"`
		Xml    string    `gorm:"type:xml"`
		Ts2    string    `gorm:"type:tsvector"`
		Dflt   int       `gorm:"default:42"`
	}
)

// TestMoveKeepsEveryValueOfEachServersOwnTypes: the same for the types of
// each server (MariaDB's unsigned, binary, ENUM, SET, BIT, YEAR, TIME;
// PostgreSQL's uuid, jsonb, arrays, interval, numeric NaN, money, inet, xml,
// tsvector), updated to NULL and deleted during the copy.
func TestMoveKeepsEveryValueOfEachServersOwnTypes(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		var model any = &FpMy{}
		if b.name == "postgres" {
			model = &FpPg{}
		}
		r := newFidelityRig(t, b, model)
		table := map[string]string{"mariadb": "fp_mies", "postgres": "fp_pgs"}[b.name]
		var ids []int64
		for i := 0; i < 30; i++ {
			shard := movingRange.From + i
			var row any
			if b.name == "mariadb" {
				dt := time.Date(1000+i*30, 1, 1, 0, 0, 0, 999999000, time.UTC)
				m := FpMy{U64: math.MaxUint64 - uint64(i), U8: 255, Bin: []byte{0xde, 0xad, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, Uuid: "0191d3c4-6d4e-7cc0-8a2a-0123456789ab",
					E: []string{"a", "b", "c d"}[i%3], Set: "x,z", Ts: time.Date(2037, 12, 31, 23, 59, 59, 999999000, time.UTC), D: "9999-12-31", Tm: "-838:59:59.000000", Yr: 2155,
					Bits: []byte{0x0f, 0xff}, Js: `{"a": "\u00e9\\\"", "b": [1.0, 2e10]}`, Ch: "ab", Vb: []byte{1, 0, 0}, Lat: "caf\u00e9"}
				if i%2 == 0 {
					m.Dt = &dt
				}
				row = &m
			} else {
				p := FpPg{U: "0191d3c4-6d4e-7cc0-8a2a-0123456789ab", Jb: `{"b": [1.0, 2e10, "\u00e9"], "a": {"z": null}}`, J: `{"b" : 1,  "b": 2 }`,
					Tz: time.Date(2024, 10, 27, 2, 30, 0, 1000, time.FixedZone("x", -3*3600-30*60)), Ts: time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC),
					Arr: `{"a,b","c\"d",NULL,""}`, Iarr: "{1,-9223372036854775808}", Iv: "1 year 2 mons -3 days 04:05:06.789", N: "123456789012345678901234567890.000000000000000000001",
					Tm: "23:59:59.999999", Ttz: "12:00:00+05:45", Inet: "2001:db8::1/64", Bits: "101", Mon: "12.34", F4: 1.0000001, Ch: "ab", Xml: "<a x='1'>&amp;</a>", Ts2: "a:1 fat:2,3 cat"}
				if i%2 == 0 {
					p.MaybeU = ptr("ffffffff-ffff-ffff-ffff-ffffffffffff")
				}
				if i%3 == 0 {
					p.N = "NaN"
				}
				row = &p
			}
			must(t, r.db.Clauses(shardid.OnShard(shard)).Create(row).Error)
			if b.name == "mariadb" {
				ids = append(ids, row.(*FpMy).ID)
			} else {
				ids = append(ids, row.(*FpPg).ID)
			}
		}
		wrote := false
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 7,
			Models: append(append([]any{model}, moveModels...), fpModels...), Progress: func(p shardid.MoveProgress) {
				if p.Table != table || p.Step != "chunk" || wrote {
					return
				}
				wrote = true
				for i, id := range ids {
					switch i % 3 {
					case 0:
						if b.name == "mariadb" {
							must(t, r.db.Model(&FpMy{ID: id}).Updates(map[string]any{"u64": uint64(math.MaxUint64), "dt": nil, "bin": []byte{0, 0, 0}, "e": "c d"}).Error)
						} else {
							must(t, r.db.Model(&FpPg{ID: id}).Updates(map[string]any{"maybe_u": nil, "jb": `[]`, "arr": "{}", "n": "-0.0"}).Error)
						}
					case 1:
						if b.name == "mariadb" {
							must(t, r.db.Delete(&FpMy{ID: id}).Error)
						} else {
							must(t, r.db.Delete(&FpPg{ID: id}).Error)
						}
					}
				}
			}})
		must(t, err)
		if !wrote {
			t.Fatal("no writes during the copy")
		}
		compareSides(t, r, []fpTable{{table, "id"}})
		must(t, r.p.CleanupMove(ctx, movingRange))
		if left := dumpRange(t, r, r.source, table, "id"); len(left) > 0 {
			t.Errorf("%d rows left", len(left))
		}
	})
}

type (
	FpGenMy struct {
		ID     int64 `shardid:"strategy:snowflake"`
		N      int
		Double int `gorm:"->;type:int AS (n * 2) VIRTUAL"`
		Stored int `gorm:"->;type:int AS (n * 3) PERSISTENT"`
	}
	FpGenPg struct {
		ID     int64 `shardid:"strategy:snowflake"`
		N      int
		Stored int `gorm:"->;-:migration"` // made below: GORM's migrator cannot migrate it twice
	}
	FpMixed struct {
		ID   int64 `shardid:"strategy:snowflake"`
		Name string
	}
	FpBig struct {
		ID   int64 `shardid:"strategy:snowflake"`
		Blob []byte
	}
)

func (FpGenMy) TableName() string { return "fp_gens" }
func (FpGenPg) TableName() string { return "fp_gens" }
func (FpMixed) TableName() string { return "FpMixedCase" }

// moveWith seeds n rows of model (made by mk) in the range and moves it.
func moveWith(t *testing.T, r *moveRig, model any, mk func(i int) any, n int, chunk int) error {
	t.Helper()
	for i := 0; i < n; i++ {
		must(t, r.db.Clauses(shardid.OnShard(movingRange.From+i)).Create(mk(i)).Error)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: r.b.name + "-target", ChunkSize: chunk,
		Models: append(append([]any{model}, moveModels...), fpModels...)})
	return err
}

// TestMoveCarriesATableWithGeneratedColumns: the copy leaves generated
// columns out, which the servers refuse a value for; each side computes its
// own, and they agree.
func TestMoveCarriesATableWithGeneratedColumns(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		var model any = &FpGenMy{}
		mk := func(i int) any { return &FpGenMy{N: i} }
		if b.name == "postgres" {
			model, mk = &FpGenPg{}, func(i int) any { return &FpGenPg{N: i} }
		}
		r := newFidelityRig(t, b, model)
		if b.name == "postgres" {
			for _, db := range []*gorm.DB{r.source, r.target} {
				must(t, db.Exec("ALTER TABLE fp_gens ADD COLUMN stored int GENERATED ALWAYS AS (n * 3) STORED").Error)
			}
		}
		must(t, moveWith(t, r, model, mk, 10, 0))
		compareSides(t, r, []fpTable{{"fp_gens", "id"}})
	})
}

// TestMoveCarriesAMixedCaseTable: a table whose name has capitals moves,
// and its cleanup deletes the source's copy.
func TestMoveCarriesAMixedCaseTable(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newFidelityRig(t, b, &FpMixed{})
		must(t, moveWith(t, r, &FpMixed{}, func(i int) any { return &FpMixed{Name: fmt.Sprint(i)} }, 10, 3))
		compareSides(t, r, []fpTable{{"FpMixedCase", "id"}})
		must(t, r.p.CleanupMove(context.Background(), movingRange))
	})
}

// TestMoveCarriesLargeBlobsInDefaultChunks: rows of 1 MB blobs move in
// chunks of the default size, within the servers' packet limits, each
// chunk read and written bounded by the bytes of its values (a thousand
// rows of a few megabytes took gigabytes of memory), and so does the
// catch-up's read of rows changed during the copy.
func TestMoveCarriesLargeBlobsInDefaultChunks(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newFidelityRig(t, b, &FpBig{})
		var ids []int64
		for i := 0; i < 40; i++ {
			row := FpBig{Blob: fpBlob(1<<20, byte(i))}
			must(t, r.db.Clauses(shardid.OnShard(movingRange.From+i)).Create(&row).Error)
			ids = append(ids, row.ID)
		}
		var chunks []int64
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: r.b.name + "-target",
			Models: append(append([]any{&FpBig{}}, moveModels...), fpModels...), Progress: func(p shardid.MoveProgress) {
				if p.Table != "fp_bigs" || p.Step != "chunk" {
					return
				}
				chunks = append(chunks, p.Copied)
				if len(chunks) == 1 { // every row changed: the catch-up reads them all again
					for i, id := range ids {
						must(t, r.db.Model(&FpBig{ID: id}).Update("blob", fpBlob(1<<20, byte(100+i))).Error)
					}
				}
			}})
		must(t, err)
		compareSides(t, r, []fpTable{{"fp_bigs", "id"}})
		last := int64(0)
		for _, c := range chunks {
			if c-last > 17 { // 16 MB of values, and the row that passed them
				t.Errorf("a chunk copied %d rows of 1 MB at once (chunks ending at %v)", c-last, chunks)
			}
			last = c
		}
	})
}

// FpZoned holds MySQL's TIMESTAMP, which a session's time zone converts.
type FpZoned struct {
	ID int64      `shardid:"strategy:snowflake"`
	Ts *time.Time `gorm:"type:timestamp(6) NULL"`
}

// TestMoveKeepsTimestampsBetweenServersOfOtherTimeZones: a MySQL TIMESTAMP
// is read and written as the session's time zone shows it, and a target
// whose sessions have another (its server's default_time_zone, its DSN's
// time_zone) keeps the same instants as the source, written during the
// copy too; the move does not fail its check.
func TestMoveKeepsTimestampsBetweenServersOfOtherTimeZones(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		if b.name != "mariadb" {
			t.Skip("MySQL's session time zone")
		}
		physical := b.physical
		b.physical = func(t testing.TB, dir string, i int) gorm.Dialector {
			cfg, err := mysqldriver.ParseDSN(physical(t, dir, i).(*mysql.Dialector).DSN)
			must(t, err)
			if cfg.Params == nil {
				cfg.Params = map[string]string{}
			}
			cfg.Params["time_zone"] = map[bool]string{true: "'+02:00'", false: "'-07:00'"}[i == moveTarget]
			return mysql.Open(cfg.FormatDSN())
		}
		r := newFidelityRig(t, b, &FpZoned{})
		at := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
		var ids []int64
		for i := 0; i < 10; i++ {
			row := FpZoned{Ts: ptr(at.Add(time.Duration(i) * time.Hour))}
			must(t, r.db.Clauses(shardid.OnShard(movingRange.From+i)).Create(&row).Error)
			ids = append(ids, row.ID)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		wrote := false
		_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 3,
			Models: append(append([]any{&FpZoned{}}, moveModels...), fpModels...), Progress: func(p shardid.MoveProgress) {
				if p.Table == "fp_zoneds" && !wrote {
					wrote = true
					must(t, r.db.Model(&FpZoned{ID: ids[9]}).Update("ts", at.Add(-time.Hour)).Error)
				}
			}})
		must(t, err)
		instants := func(db *gorm.DB) string {
			var got []string
			must(t, db.Raw("SELECT CONCAT(id, '@', UNIX_TIMESTAMP(ts)) FROM fp_zoneds ORDER BY id").Scan(&got).Error)
			return fmt.Sprint(got)
		}
		if src, dst := instants(r.source), instants(r.target); src != dst {
			t.Errorf("the instants moved:\n source %s\n target %s", src, dst)
		}
	})
}

type FpSchemaThing struct {
	ID   int64 `shardid:"strategy:snowflake"`
	Name string
}

func (FpSchemaThing) TableName() string { return "fp_sch.fp_things" }

// TestMoveRefusesASchemaQualifiedTable: a model whose table is named with
// its schema (PostgreSQL's schema.table) is refused by a move before
// anything changes, naming the table: the target holds none of its rows,
// the source all of them, and the range stays where it was. An audit
// refuses it too, and both errors say to give the schema in the DSN.
func TestMoveRefusesASchemaQualifiedTable(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		if b.name != "postgres" {
			t.Skip("PostgreSQL's schemas")
		}
		dir := t.TempDir()
		for _, db := range direct(t, b, dir)[moveSource : moveTarget+1] {
			must(t, db.Exec("CREATE SCHEMA IF NOT EXISTS fp_sch").Error)
			must(t, db.Exec("DROP TABLE IF EXISTS fp_sch.fp_things").Error)
		}
		r := newFidelityRig(t, b, &FpSchemaThing{})
		version := r.p.MapVersion()
		err := moveWith(t, r, &FpSchemaThing{}, func(i int) any { return &FpSchemaThing{Name: fmt.Sprint(i)} }, 10, 3)
		if !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), "fp_sch.fp_things is named with its schema") {
			t.Fatalf("a move of a schema-qualified table: %v; want ErrMoveInvalid naming it", err)
		}
		if n := len(dumpRange(t, r, r.target, "fp_sch.fp_things", "id")); n != 0 {
			t.Errorf("the refused move left %d rows on the target", n)
		}
		if n := len(dumpRange(t, r, r.source, "fp_sch.fp_things", "id")); n != 10 {
			t.Errorf("the source holds %d rows of the range after the refused move; want 10", n)
		}
		if v, err := r.p.RefreshMap(context.Background()); err != nil || v != version {
			t.Errorf("the map after the refused move: version %d (%v); want %d", v, err, version)
		}
		// An audit reads no such table either; both say how to name it instead.
		_, auditErr := r.p.Audit(context.Background())
		for what, err := range map[string]error{"the move": moveWith(t, r, &FpSchemaThing{}, nil, 0, 3), "the audit": auditErr} {
			if !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), "fp_sch.fp_things is named with its schema") || !strings.Contains(err.Error(), "search_path=") {
				t.Errorf("%s of a schema-qualified table: %v; want ErrMoveInvalid naming it and saying to give the schema in the DSN's search_path", what, err)
			}
		}
	})
}

// TestMoveCheckCatchesADoubleAlteredUnderExtraFloatDigitsZero: a server
// (or database) configured with extra_float_digits = 0 prints float8 with
// 15 digits; the check still tells two doubles apart.
func TestMoveCheckCatchesADoubleAlteredUnderExtraFloatDigitsZero(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		if b.name != "postgres" {
			t.Skip("PostgreSQL's extra_float_digits")
		}
		dir := t.TempDir()
		main, err := gorm.Open(b.dialector(t, dir))
		must(t, err)
		for _, i := range []int{moveSource, moveTarget} {
			var cur string
			must(t, main.Raw("SELECT current_database()").Scan(&cur).Error)
			name := fmt.Sprintf("%s_%d", cur, i)
			must(t, main.Exec("ALTER DATABASE "+name+" SET extra_float_digits = 0").Error)
			t.Cleanup(func() { _ = main.Exec("ALTER DATABASE " + name + " RESET extra_float_digits").Error })
		}
		r := newFidelityRig(t, b, &FpCheck{})
		row := FpCheck{F64: 0.30000000000000004, At: time.Now()}
		must(t, r.db.Clauses(shardid.OnShard(movingRange.From+3)).Create(&row).Error)
		done := false
		_, err = r.p.Move(context.Background(), shardid.Move{Logical: movingRange, To: b.name + "-target",
			Models: append(append([]any{&FpCheck{}}, moveModels...), fpModels...), Progress: func(p shardid.MoveProgress) {
				if p.Phase == shardid.PhaseCatchUp && !done {
					done = true
					must(t, r.target.Exec("UPDATE fp_checks SET f64 = 0.3 WHERE id = ?", row.ID).Error)
				}
			}})
		if err == nil {
			t.Fatalf("the move succeeded with the target's double altered: %v / %v", dumpRange(t, r, r.source, "fp_checks", "id"), dumpRange(t, r, r.target, "fp_checks", "id"))
		}
		if !errors.Is(err, shardid.ErrMoveVerify) || !strings.Contains(err.Error(), "fp_checks") {
			t.Fatalf("the move failed with %v; want its check naming fp_checks", err)
		}
	})
}

type FpBinaryUUID struct {
	ID   uuid.UUID `gorm:"type:uuid" shardid:"strategy:uuidv7"` // MariaDB's UUID type: 16 bytes
	Name string
}

// TestMoveRefusesABinaryUUIDKeyBeforeAnythingChanges: a model whose key is
// of MariaDB's UUID type (stored as bytes, which the triggers cannot read)
// is refused by a move before anything changes: no move recorded, no
// trigger on any table of the source, the range where it was.
func TestMoveRefusesABinaryUUIDKeyBeforeAnythingChanges(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		if b.name != "mariadb" {
			t.Skip("MariaDB's UUID type")
		}
		dir := t.TempDir()
		for _, db := range direct(t, b, dir)[moveSource : moveTarget+1] {
			_ = db.Migrator().DropTable(&FpBinaryUUID{})
		}
		r := newFidelityRig(t, b, &FpBinaryUUID{})
		version := r.p.MapVersion()
		err := moveWith(t, r, &FpBinaryUUID{}, func(i int) any { return &FpBinaryUUID{Name: fmt.Sprint(i)} }, 5, 3)
		if !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), "fp_binary_uuids") {
			t.Fatalf("a move of a table keyed by MariaDB's UUID type: %v; want ErrMoveInvalid naming it", err)
		}
		if moves, err := r.p.Moves(context.Background()); err != nil || len(moves) != 0 {
			t.Errorf("the refused move left %v recorded (%v)", moves, err)
		}
		var triggers []string
		must(t, r.source.Raw("SELECT trigger_name FROM information_schema.triggers WHERE trigger_schema = DATABASE()").Scan(&triggers).Error)
		if len(triggers) > 0 {
			t.Errorf("the refused move left triggers on the source: %v", triggers)
		}
		if v, err := r.p.RefreshMap(context.Background()); err != nil || v != version {
			t.Errorf("the map after the refused move: version %d (%v); want %d", v, err, version)
		}
	})
}

// FpInterpolated holds the values MySQL's text protocol changes: a FLOAT
// (sent rounded to six digits) and text of another character set than the
// connection's (bound as a _binary literal, stored unconverted).
type FpInterpolated struct {
	ID   int64   `shardid:"strategy:snowflake"`
	F32  float32 `gorm:"type:float"`
	Lat  string  `gorm:"type:varchar(20) CHARACTER SET latin1"`
	Blob []byte
}

// TestMoveKeepsValuesWithInterpolatedParameters: with interpolateParams in
// the DSN, a common setting of go-sql-driver/mysql, a move still copies a
// FLOAT's every bit and latin1 text as it is, and succeeds.
func TestMoveKeepsValuesWithInterpolatedParameters(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		if b.name != "mariadb" {
			t.Skip("go-sql-driver/mysql's interpolateParams")
		}
		physical := b.physical
		b.physical = func(t testing.TB, dir string, i int) gorm.Dialector {
			cfg, err := mysqldriver.ParseDSN(physical(t, dir, i).(*mysql.Dialector).DSN)
			must(t, err)
			cfg.InterpolateParams = true
			return mysql.Open(cfg.FormatDSN())
		}
		r := newFidelityRig(t, b, &FpInterpolated{})
		ids := map[int64]bool{}
		for i := 0; i < 8; i++ {
			row := FpInterpolated{F32: []float32{1.0000001, 16777217, math.MaxFloat32, 3.1415927}[i%4], Lat: "café ÿ" + fmt.Sprint(i), Blob: fpBlob(5+i, byte(i))}
			must(t, r.db.Clauses(shardid.OnShard(movingRange.From+i)).Create(&row).Error)
			ids[row.ID] = true
		}
		must(t, moveWith(t, r, &FpInterpolated{}, func(i int) any { return &FpInterpolated{F32: 0.1, Lat: "é"} }, 2, 3))
		compareSides(t, r, []fpTable{{"fp_interpolateds", "id"}})
		var moved []FpInterpolated
		must(t, r.target.Find(&moved).Error)
		for _, m := range moved {
			if ids[m.ID] && !strings.HasPrefix(m.Lat, "café ÿ") {
				t.Errorf("row %d: latin1 text %q after the move", m.ID, m.Lat)
			}
		}
	})
}

// FpPgExecMode holds the values pgx reads as bytes though they are not
// bytea: json, jsonb and xml.
type FpPgExecMode struct {
	ID   int64  `shardid:"strategy:snowflake"`
	J    string `gorm:"type:json"`
	Jb   string `gorm:"type:jsonb"`
	Xml  string `gorm:"type:xml"`
	Blob []byte
}

// TestMoveKeepsJSONAndXMLUnderPgxExecModes: with the DSN's
// default_query_exec_mode exec or simple_protocol (as PgBouncer's
// transaction pooling needs), where pgx sends a parameter by its Go type
// rather than the column's, a move still copies json, jsonb and xml as they
// are (not refused as a bytea, nor stored as its hex) beside a bytea.
func TestMoveKeepsJSONAndXMLUnderPgxExecModes(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		if b.name != "postgres" {
			t.Skip("pgx's query exec modes")
		}
		for _, mode := range []string{"exec", "simple_protocol"} {
			t.Run(mode, func(t *testing.T) {
				b, physical := b, b.physical
				b.physical = func(t testing.TB, dir string, i int) gorm.Dialector {
					u, err := url.Parse(physical(t, dir, i).(*postgres.Dialector).DSN)
					must(t, err)
					q := u.Query()
					q.Set("default_query_exec_mode", mode)
					u.RawQuery = q.Encode()
					return postgres.Open(u.String())
				}
				r := newFidelityRig(t, b, &FpPgExecMode{})
				mk := func(i int) any {
					return &FpPgExecMode{J: fmt.Sprintf(`{"b" : %d,  "b": "é" }`, i), Jb: fmt.Sprintf(`{"a": [%d, 1.50]}`, i), Xml: "<a x='1'>&amp;" + fmt.Sprint(i) + "</a>", Blob: fpBlob(5+i, byte(i))}
				}
				must(t, moveWith(t, r, &FpPgExecMode{}, mk, 8, 3))
				compareSides(t, r, []fpTable{{"fp_pg_exec_modes", "id"}})
			})
		}
	})
}

// Tables linked by a foreign key of the application's own (the plugin's
// migrator makes none): books reference their colocated writer, and sort
// before it by name.
type (
	FkWriter struct {
		ID   int64 `shardid:"strategy:snowflake"`
		Name string
	}
	FkBook struct {
		ID       int64 `shardid:"strategy:snowflake;colocate:WriterID"`
		WriterID int64 `gorm:"index"`
		Title    string
	}
)

// TestMoveCarriesTablesLinkedByForeignKeys: colocated tables linked by a
// foreign key (RESTRICT or ON DELETE CASCADE) on both databases move, with
// writers and their books made and deleted during the copy and the
// catch-up: parents are written before their children and deleted after
// them, a child copied after its parent's copy finds the parent, a cancel
// deletes the target's copies and the cleanup the source's, and the target
// ends holding the source's rows.
func TestMoveCarriesTablesLinkedByForeignKeys(t *testing.T) {
	withForeignKey(t, []any{&FkWriter{}, &FkBook{}}, "ALTER TABLE fk_books ADD CONSTRAINT fk_books_writer FOREIGN KEY (writer_id) REFERENCES fk_writers(id)",
		func(t *testing.T, b backend, r *moveRig, cascade bool) {
			models := append([]any{&FkWriter{}, &FkBook{}}, moveModels...)
			var writers []int64
			write := func(shard int) int64 {
				w := FkWriter{Name: fmt.Sprint(shard)}
				must(t, r.db.Clauses(shardid.OnShard(shard)).Create(&w).Error)
				for j := 0; j < 3; j++ {
					must(t, r.db.Create(&FkBook{WriterID: w.ID, Title: fmt.Sprint(j)}).Error)
				}
				return w.ID
			}
			unwrite := func(id int64) {
				must(t, r.db.Where("writer_id = ?", id).Delete(&FkBook{}).Error)
				must(t, r.db.Delete(&FkWriter{ID: id}).Error)
			}
			for i := 0; i < 20; i++ {
				writers = append(writers, write(movingRange.From+i))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()

			// A move stopped in its catch-up, then cancelled.
			stop, stopped := context.WithCancel(ctx)
			_, err := r.p.Move(stop, shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 5, CatchUpBelow: 1, Models: models,
				Progress: func(p shardid.MoveProgress) {
					if p.Phase == shardid.PhaseCatchUp {
						stopped()
					}
				}})
			if err == nil {
				t.Fatal("the stopped move succeeded")
			}
			if n := len(dumpRange(t, r, r.target, "fk_books", "writer_id")); n == 0 {
				t.Fatal("the stopped move copied no book")
			}
			must(t, r.p.CancelMove(ctx, movingRange))
			for _, table := range []string{"fk_books", "fk_writers"} {
				if n := countIn(t, r.target, table, true, r.p.Layout()); n != 0 {
					t.Errorf("%s: %d rows of the range left on the target by the cancel", table, n)
				}
			}

			wrote := map[string]bool{}
			_, err = r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 5, CatchUpBelow: 1, Models: models,
				Progress: func(p shardid.MoveProgress) {
					step := p.Phase + p.Table
					if wrote[step] || !(p.Phase == shardid.PhaseCopy && p.Table == "fk_books" || p.Phase == shardid.PhaseCatchUp) {
						return
					}
					wrote[step] = true
					// made after the writers' copy ended: the books' copy reads their books
					writers = append(writers, write(movingRange.From+100+len(wrote)))
					unwrite(writers[len(wrote)])
					if cascade {
						must(t, r.db.Delete(&FkWriter{ID: writers[5+len(wrote)]}).Error) // its books with it
					}
				}})
			must(t, err)
			if len(wrote) != 2 {
				t.Fatalf("wrote in %v", wrote)
			}
			compareSides(t, r, []fpTable{{"fk_writers", "id"}, {"fk_books", "id"}})
			cleanUpLeavingNone(t, ctx, r, "fk_books", "fk_writers")
			var books []FkBook
			must(t, r.db.Where("writer_id = ?", writers[len(writers)-1]).Find(&books).Error)
			if len(books) != 3 {
				t.Errorf("the last writer has %d books after the move; want 3", len(books))
			}
			must(t, r.db.Create(&FkBook{WriterID: writers[len(writers)-1], Title: "after"}).Error)
		})
}

// withForeignKey runs f on a move rig of each server whose source and
// target hold the tables of models (parents first), linked by the key
// constraint adds (none: unlinked), once with RESTRICT and once with ON
// DELETE CASCADE (a key saying what a delete does: once).
func withForeignKey(t *testing.T, models []any, constraint string, f func(t *testing.T, b backend, r *moveRig, cascade bool)) {
	forEachServer(t, func(t *testing.T, b backend) {
		for _, cascade := range []bool{false, true} {
			t.Run(map[bool]string{false: "restrict", true: "cascade"}[cascade], func(t *testing.T) {
				if cascade && strings.Contains(constraint, " ON DELETE ") {
					t.Skip("the key says what a delete does")
				}
				dir := t.TempDir()
				childrenFirst := slices.Clone(models)
				slices.Reverse(childrenFirst)
				drop := func() {
					for _, db := range direct(t, b, dir)[moveSource : moveTarget+1] {
						_ = db.Migrator().DropTable(childrenFirst...)
					}
				}
				drop()
				t.Cleanup(drop)
				r := newMoveRig(t, b, dir)
				must(t, r.p.AutoMigrate(r.db, models...))
				for _, db := range []*gorm.DB{r.source, r.target} {
					if constraint != "" {
						must(t, db.Exec(constraint+map[bool]string{false: "", true: " ON DELETE CASCADE"}[cascade]).Error)
					}
				}
				f(t, b, r, cascade)
			})
		}
	})
}

// FpNoKey is a table its owner made without the plugin's migrator, and
// without a primary key.
type FpNoKey struct {
	ID   int64 `shardid:"strategy:snowflake"`
	Name string
}

// TestMoveRefusesATargetTableWithoutAUniqueKey: a target's table without a
// primary key or unique index on the key (made by hand) is refused at the
// prepare, naming it, before anything changes: the copy's upsert would
// fail there (PostgreSQL) or write rows twice (MySQL) once the source was
// fenced. Given one, the move goes on.
func TestMoveRefusesATargetTableWithoutAUniqueKey(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newFidelityRig(t, b, &FpNoKey{})
		must(t, r.target.Exec("DROP TABLE fp_no_keys").Error)
		must(t, r.target.Exec("CREATE TABLE fp_no_keys (id bigint NOT NULL, name "+map[bool]string{true: "longtext", false: "text"}[b.name == "mariadb"]+")").Error)
		must(t, r.target.Exec("CREATE INDEX fp_no_keys_id ON fp_no_keys (id)").Error)
		var ids []int64
		for i := 0; i < 10; i++ {
			row := FpNoKey{Name: fmt.Sprint(i)}
			must(t, r.db.Clauses(shardid.OnShard(movingRange.From+i)).Create(&row).Error)
			ids = append(ids, row.ID)
		}
		version := r.p.MapVersion()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		move := func() error {
			done := false
			_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 3, CatchUpBelow: 1,
				Models: append(append([]any{&FpNoKey{}}, moveModels...), fpModels...), Progress: func(p shardid.MoveProgress) {
					if p.Phase == shardid.PhaseCatchUp && !done {
						done = true // a row copied already, read again
						must(t, r.db.Model(&FpNoKey{ID: ids[1]}).Update("name", "x").Error)
					}
				}})
			return err
		}
		err := move()
		if !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), "fp_no_keys") || !strings.Contains(err.Error(), "primary key") {
			t.Fatalf("a move to a table without a unique key: %v; want ErrMoveInvalid naming it", err)
		}
		if moves, err := r.p.Moves(ctx); err != nil || len(moves) != 0 {
			t.Errorf("the refused move left %v recorded (%v)", moves, err)
		}
		var n int64
		must(t, r.target.Table("fp_no_keys").Count(&n).Error)
		if n != 0 {
			t.Errorf("the refused move wrote %d rows on the target", n)
		}
		if v, err := r.p.RefreshMap(ctx); err != nil || v != version {
			t.Errorf("the map after the refused move: version %d (%v); want %d", v, err, version)
		}
		must(t, r.target.Exec("ALTER TABLE fp_no_keys ADD PRIMARY KEY (id)").Error)
		must(t, move())
		compareSides(t, r, []fpTable{{"fp_no_keys", "id"}})
	})
}

// FpHidden gets an INVISIBLE column, which SELECT * leaves out.
type FpHidden struct {
	ID   int64 `shardid:"strategy:snowflake"`
	Name string
}

// TestMoveCarriesInvisibleColumns: MariaDB's INVISIBLE columns (MySQL's
// too), which SELECT * does not return, are copied with the others, written
// during the copy too, and the cleanup leaves their values on the target.
func TestMoveCarriesInvisibleColumns(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		if b.name != "mariadb" {
			t.Skip("MariaDB's invisible columns")
		}
		r := newFidelityRig(t, b, &FpHidden{})
		for _, db := range []*gorm.DB{r.source, r.target} {
			must(t, db.Exec("ALTER TABLE fp_hiddens ADD COLUMN secret varchar(20) INVISIBLE").Error)
		}
		var ids []int64
		for i := 0; i < 8; i++ {
			row := FpHidden{Name: fmt.Sprint(i)}
			must(t, r.db.Clauses(shardid.OnShard(movingRange.From+i)).Create(&row).Error)
			ids = append(ids, row.ID)
		}
		must(t, r.source.Exec("UPDATE fp_hiddens SET secret = CONCAT('s', name)").Error)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		wrote := false
		_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 3,
			Models: append(append([]any{&FpHidden{}}, moveModels...), fpModels...), Progress: func(p shardid.MoveProgress) {
				if p.Table == "fp_hiddens" && !wrote {
					wrote = true
					must(t, r.db.Clauses(shardid.ByID(ids[7])).Exec("UPDATE fp_hiddens SET secret = 'changed' WHERE id = ?", ids[7]).Error)
				}
			}})
		must(t, err)
		must(t, r.p.CleanupMove(ctx, movingRange))
		var got []string
		must(t, r.target.Raw("SELECT CONCAT(name, ':', COALESCE(secret, 'NULL')) FROM fp_hiddens ORDER BY id").Scan(&got).Error)
		if want := "[0:s0 1:s1 2:s2 3:s3 4:s4 5:s5 6:s6 7:changed]"; fmt.Sprint(got) != want {
			t.Errorf("the invisible column on the target after the move: %v; want %s", got, want)
		}
	})
}

// FpPgTexts holds values pgx reads as PostgreSQL's text, which follows the
// session's settings: arrays of float8, dates and timestamps.
type FpPgTexts struct {
	ID    int64  `shardid:"strategy:snowflake"`
	Fs    string `gorm:"type:float8[]"`
	Ds    string `gorm:"type:date[]"`
	Ts    string `gorm:"type:timestamptz[]"`
	Maybe *string
}

// TestMoveKeepsArraysUnderASourcesOwnTextSettings: a source database whose
// own settings print values otherwise (extra_float_digits 0, which drops a
// float8's last digits, DateStyle 'SQL, DMY', a time zone) moves arrays of
// them to a target of the defaults exactly: the values are read with the
// settings made canonical, and the check compares them so too.
func TestMoveKeepsArraysUnderASourcesOwnTextSettings(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		if b.name != "postgres" {
			t.Skip("PostgreSQL's text settings")
		}
		dir := t.TempDir()
		main, err := gorm.Open(b.dialector(t, dir))
		must(t, err)
		var cur string
		must(t, main.Raw("SELECT current_database()").Scan(&cur).Error)
		name := fmt.Sprintf("%s_%d", cur, moveSource)
		for _, set := range []string{"extra_float_digits = 0", "DateStyle = 'SQL, DMY'", "TimeZone = 'Asia/Kathmandu'"} {
			must(t, main.Exec("ALTER DATABASE "+name+" SET "+set).Error)
		}
		t.Cleanup(func() { _ = main.Exec("ALTER DATABASE " + name + " RESET ALL").Error })
		r := newFidelityRig(t, b, &FpPgTexts{})
		must(t, moveWith(t, r, &FpPgTexts{}, func(i int) any {
			return &FpPgTexts{Fs: "{0.30000000000000004,1.0000000000000002,-1e-300}", Ds: "{2024-01-02,2024-12-31}", Ts: `{"2024-10-27 02:30:00.000001+00"}`}
		}, 6, 4))
		q := "SELECT id || ':' || (fs = '{0.30000000000000004,1.0000000000000002,-1e-300}'::float8[])::text || ':' || to_char(ds[1], 'YYYY-MM-DD') || ',' || to_char(ds[2], 'YYYY-MM-DD') || ':' || extract(epoch FROM ts[1])::text FROM fp_pg_texts ORDER BY id"
		var src, dst []string
		must(t, r.source.Raw(q).Scan(&src).Error)
		must(t, r.target.Raw(q).Scan(&dst).Error)
		if len(src) != 6 || !strings.Contains(src[0], ":true:2024-01-02,2024-12-31:1729996200.000001") {
			t.Fatalf("the source's rows read %v", src)
		}
		if fmt.Sprint(src) != fmt.Sprint(dst) {
			t.Errorf("the values moved:\n source %v\n target %v", src, dst)
		}
	})
}

// FkNode is a node of a thread, colocated with it, that references the node
// it answers (a foreign key to its own table).
type FkNode struct {
	ID       int64  `shardid:"strategy:snowflake;colocate:ThreadID"`
	ThreadID int64  `gorm:"index"`
	ParentID *int64 `gorm:"index"`
	Body     string
}

// TestMoveCarriesATableReferencingItself: replies reference the node they
// answer in the same table (RESTRICT or ON DELETE CASCADE), a parent made
// after its child (re-parented) among them, in the copy and in the
// catch-up: the move copies every node, its cancel and cleanup delete
// them, and the target ends holding the source's rows.
func TestMoveCarriesATableReferencingItself(t *testing.T) {
	withForeignKey(t, []any{&FkWriter{}, &FkNode{}}, "ALTER TABLE fk_nodes ADD CONSTRAINT fk_nodes_parent FOREIGN KEY (parent_id) REFERENCES fk_nodes(id)",
		func(t *testing.T, b backend, r *moveRig, _ bool) {
			models := append([]any{&FkWriter{}, &FkNode{}}, moveModels...)
			var first []int64 // the first thread's nodes, and the thread
			for i := 0; i < 4; i++ {
				thread := FkWriter{Name: "thread"}
				must(t, r.db.Clauses(shardid.OnShard(movingRange.From+i)).Create(&thread).Error)
				var parent *int64
				var nodes []int64
				for j := 0; j < 12; j++ {
					node := FkNode{ThreadID: thread.ID, ParentID: parent, Body: fmt.Sprint(j)}
					must(t, r.db.Create(&node).Error)
					parent = &node.ID
					nodes = append(nodes, node.ID)
				}
				later := FkNode{ThreadID: thread.ID, Body: "later"}
				must(t, r.db.Create(&later).Error)
				must(t, r.db.Model(&FkNode{ID: nodes[0], ThreadID: thread.ID}).Update("parent_id", later.ID).Error) // made before its parent
				if i == 0 {
					first = append(nodes, thread.ID)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			stop, stopped := context.WithCancel(ctx)
			chunks := 0
			_, err := r.p.Move(stop, shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 5, Models: models,
				Progress: func(p shardid.MoveProgress) {
					if p.Phase == shardid.PhaseCopy && p.Step == "chunk" {
						if chunks++; chunks == 4 {
							stopped()
						}
					}
				}})
			if err == nil {
				t.Fatal("the stopped move succeeded")
			}
			must(t, r.p.CancelMove(ctx, movingRange))
			if n := countIn(t, r.target, "fk_nodes", true, r.p.Layout()); n != 0 {
				t.Errorf("%d nodes of the range left on the target by the cancel", n)
			}
			// In the catch-up: a node re-parented to one made after it, logged
			// before it; a reply deleted, then the node it answered.
			caughtUp := false
			_, err = r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 5, CatchUpBelow: 1, Models: models,
				Progress: func(p shardid.MoveProgress) {
					if p.Phase != shardid.PhaseCatchUp || caughtUp {
						return
					}
					caughtUp = true
					thread := first[12]
					must(t, r.db.Model(&FkNode{ID: first[5], ThreadID: thread}).Update("body", "re-parented").Error)
					newer := FkNode{ThreadID: thread, Body: "newer"}
					must(t, r.db.Create(&newer).Error)
					must(t, r.db.Model(&FkNode{ID: first[5], ThreadID: thread}).Update("parent_id", newer.ID).Error)
					must(t, r.db.Delete(&FkNode{ID: first[11], ThreadID: thread}).Error)
					must(t, r.db.Delete(&FkNode{ID: first[10], ThreadID: thread}).Error)
				}})
			must(t, err)
			if !caughtUp {
				t.Fatal("the move had no catch-up round")
			}
			compareSides(t, r, []fpTable{{"fk_nodes", "id"}})
			cleanUpLeavingNone(t, ctx, r, "fk_nodes")
		})
}

// TestCancelAndCleanupDeleteRowsReferencingEachOther: nodes of a table
// referencing itself made a cycle during the catch-up (a thread's first
// node re-parented to its last reply), which the target holds: MariaDB,
// checking each row as it deletes it, refuses them in any order. The
// cancel deletes them from the target, and the cleanup, after a move that
// carried another such cycle, from the source.
func TestCancelAndCleanupDeleteRowsReferencingEachOther(t *testing.T) {
	withForeignKey(t, []any{&FkWriter{}, &FkNode{}}, "ALTER TABLE fk_nodes ADD CONSTRAINT fk_nodes_parent FOREIGN KEY (parent_id) REFERENCES fk_nodes(id)",
		func(t *testing.T, b backend, r *moveRig, _ bool) {
			models := append([]any{&FkWriter{}, &FkNode{}}, moveModels...)
			type thread struct{ id, first, last int64 }
			var threads []thread
			for i := 0; i < 2; i++ {
				w := FkWriter{Name: "thread"}
				must(t, r.db.Clauses(shardid.OnShard(movingRange.From+i)).Create(&w).Error)
				th := thread{id: w.ID}
				var parent *int64
				for j := 0; j < 6; j++ {
					node := FkNode{ThreadID: w.ID, ParentID: parent, Body: fmt.Sprint(j)}
					must(t, r.db.Create(&node).Error)
					parent = &node.ID
					if j == 0 {
						th.first = node.ID
					}
					th.last = node.ID
				}
				threads = append(threads, th)
			}
			cycle := func(th thread, parent any) {
				must(t, r.db.Model(&FkNode{ID: th.first, ThreadID: th.id}).Update("parent_id", parent).Error)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			stop, stopped := context.WithCancel(ctx)
			rounds := 0
			_, err := r.p.Move(stop, shardid.Move{Logical: movingRange, To: b.name + "-target", CatchUpBelow: 1, Models: models,
				Progress: func(p shardid.MoveProgress) {
					switch {
					case p.Phase == shardid.PhaseCopy && p.Table == "fk_nodes" && rounds == 0:
						rounds++
						cycle(threads[0], threads[0].last) // the catch-up's first round carries it
					case p.Phase == shardid.PhaseCatchUp && rounds > 0:
						if rounds++; rounds == 3 {
							stopped()
						}
					}
				}})
			if err == nil {
				t.Fatal("the stopped move succeeded")
			}
			must(t, r.p.CancelMove(ctx, movingRange))
			if n := countIn(t, r.target, "fk_nodes", true, r.p.Layout()); n != 0 {
				t.Errorf("%d nodes of the range left on the target by the cancel", n)
			}
			cycle(threads[0], nil)
			caughtUp := false
			_, err = r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", CatchUpBelow: 1, Models: models,
				Progress: func(p shardid.MoveProgress) {
					if p.Phase == shardid.PhaseCatchUp && !caughtUp {
						caughtUp = true
						cycle(threads[1], threads[1].last)
					}
				}})
			must(t, err)
			compareSides(t, r, []fpTable{{"fk_nodes", "id"}})
			cleanUpLeavingNone(t, ctx, r, "fk_nodes")
		})
}

// TestMoveWritesManyRowsMadeBeforeTheirParents: every node of a table
// referencing itself is re-parented to one made after all of them, so the
// copy keeps each aside until the table's last chunk: more than MariaDB's
// TEXT holds in the move's record (thousands), and on PostgreSQL more than
// one statement takes parameters (65535). The move copies them all.
func TestMoveWritesManyRowsMadeBeforeTheirParents(t *testing.T) {
	withForeignKey(t, []any{&FkWriter{}, &FkNode{}}, "ALTER TABLE fk_nodes ADD CONSTRAINT fk_nodes_parent FOREIGN KEY (parent_id) REFERENCES fk_nodes(id)",
		func(t *testing.T, b backend, r *moveRig, cascade bool) {
			if cascade {
				t.Skip("nothing is deleted: the cascade changes nothing")
			}
			thread := FkWriter{Name: "thread"}
			must(t, r.db.Clauses(shardid.OnShard(movingRange.From)).Create(&thread).Error)
			nodes := make([]FkNode, map[bool]int{false: 4000, true: 66000}[b.name == "postgres"])
			for i := range nodes {
				nodes[i] = FkNode{ThreadID: thread.ID, Body: "early"}
			}
			must(t, r.db.CreateInBatches(&nodes, 2000).Error)
			later := FkNode{ThreadID: thread.ID, Body: "later"}
			must(t, r.db.Create(&later).Error)
			must(t, r.source.Exec("UPDATE fk_nodes SET parent_id = ? WHERE id <> ?", later.ID, later.ID).Error)
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			defer cancel()
			_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", Models: append([]any{&FkWriter{}, &FkNode{}}, moveModels...)})
			if err != nil {
				t.Errorf("move: %v", err)
				must(t, r.p.CancelMove(ctx, movingRange))
				return
			}
			compareSides(t, r, []fpTable{{"fk_nodes", "id"}})
			must(t, r.p.CleanupMove(ctx, movingRange))
		})
}

// TestMoveRefusesATableReferencedByATableItDoesNotCarry: a table outside
// the move (fk_outside, on the source) references a moved one by a foreign
// key: the dry run and the move are refused with ErrMoveInvalid naming it,
// before anything changes, and so is a cleanup when such a key was made
// after the cutover, with RESTRICT or ON DELETE CASCADE: its deletes would
// fail, or take the outside rows with them, which the target never got.
func TestMoveRefusesATableReferencedByATableItDoesNotCarry(t *testing.T) {
	withForeignKey(t, []any{&FkWriter{}, &FkBook{}}, "ALTER TABLE fk_books ADD CONSTRAINT fk_books_writer FOREIGN KEY (writer_id) REFERENCES fk_writers(id)",
		func(t *testing.T, b backend, r *moveRig, cascade bool) {
			models := append([]any{&FkWriter{}, &FkBook{}}, moveModels...)
			writer := FkWriter{Name: "w"}
			must(t, r.db.Clauses(shardid.OnShard(movingRange.From)).Create(&writer).Error)
			must(t, r.db.Create(&FkBook{WriterID: writer.ID, Title: "t"}).Error)
			outside := func() {
				must(t, r.source.Exec("CREATE TABLE fk_outside (id BIGINT PRIMARY KEY, book_id BIGINT)").Error)
				t.Cleanup(func() { _ = r.source.Exec("DROP TABLE IF EXISTS fk_outside").Error })
				action := map[bool]string{false: "", true: " ON DELETE CASCADE"}[cascade]
				must(t, r.source.Exec("ALTER TABLE fk_outside ADD CONSTRAINT fk_outside_book FOREIGN KEY (book_id) REFERENCES fk_books(id)"+action).Error)
				var book FkBook
				must(t, r.db.Where("writer_id = ?", writer.ID).First(&book).Error)
				must(t, r.source.Exec("INSERT INTO fk_outside (id, book_id) VALUES (1, ?)", book.ID).Error)
			}
			outside()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			move := shardid.Move{Logical: movingRange, To: b.name + "-target", Models: models}
			dry := move
			dry.DryRun = true
			for _, m := range []shardid.Move{dry, move} {
				if _, err := r.p.Move(ctx, m); !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), "fk_outside") {
					t.Errorf("a move (dry run %v) of a table fk_outside references: %v, want ErrMoveInvalid naming fk_outside", m.DryRun, err)
				}
			}
			if n := countIn(t, r.target, "fk_books", true, r.p.Layout()); n != 0 {
				t.Errorf("the refused move copied %d books", n)
			}

			must(t, r.source.Exec("DROP TABLE fk_outside").Error)
			_, err := r.p.Move(ctx, move)
			must(t, err)
			outside() // a key made after the cutover
			if err := r.p.CleanupMove(ctx, movingRange); !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), "fk_outside") {
				t.Errorf("a cleanup of a table fk_outside references: %v, want ErrMoveInvalid naming fk_outside", err)
			}
			var left int64
			must(t, r.source.Raw("SELECT count(*) FROM fk_outside").Scan(&left).Error)
			if left != 1 {
				t.Errorf("%d rows of fk_outside left on the source after the refused cleanup, want 1", left)
			}
			must(t, r.source.Exec("DROP TABLE fk_outside").Error)
			must(t, r.p.CleanupMove(ctx, movingRange))
		})
}

// TestMoveRefusesTablesReferencingEachOther: writers reference their
// favourite book and books their writer: the copy could write neither
// table first, so the dry run and the move are refused with ErrMoveInvalid
// naming both, before anything changes.
func TestMoveRefusesTablesReferencingEachOther(t *testing.T) {
	withForeignKey(t, []any{&FkWriter{}, &FkBook{}}, "ALTER TABLE fk_books ADD CONSTRAINT fk_books_writer FOREIGN KEY (writer_id) REFERENCES fk_writers(id)",
		func(t *testing.T, b backend, r *moveRig, cascade bool) {
			if cascade {
				t.Skip("refused before any delete")
			}
			for _, db := range []*gorm.DB{r.source, r.target} {
				must(t, db.Exec("ALTER TABLE fk_writers ADD COLUMN favourite BIGINT NULL").Error)
				must(t, db.Exec("ALTER TABLE fk_writers ADD CONSTRAINT fk_writers_favourite FOREIGN KEY (favourite) REFERENCES fk_books(id)").Error)
			}
			writer := FkWriter{Name: "w"}
			must(t, r.db.Clauses(shardid.OnShard(movingRange.From)).Create(&writer).Error)
			must(t, r.db.Create(&FkBook{WriterID: writer.ID, Title: "t"}).Error)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			move := shardid.Move{Logical: movingRange, To: b.name + "-target", Models: append([]any{&FkWriter{}, &FkBook{}}, moveModels...)}
			dry := move
			dry.DryRun = true
			for _, m := range []shardid.Move{dry, move} {
				if _, err := r.p.Move(ctx, m); !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), "fk_writers") || !strings.Contains(err.Error(), "fk_books") {
					t.Errorf("a move (dry run %v) of tables referencing each other: %v, want ErrMoveInvalid naming both", m.DryRun, err)
				}
			}
			if n := countIn(t, r.target, "fk_writers", true, r.p.Layout()); n != 0 {
				t.Errorf("the refused move copied %d writers", n)
			}
		})
}

// TestMoveRefusesRowsReferencingAcrossTheRangesEdge: a node outside the
// range answers one inside it (or one inside answers one outside), by a
// foreign key of the table referencing itself: a move carries rows by their
// own key, so the key would span two databases. The dry run and the move
// are refused with ErrMoveInvalid naming the table and the key, before
// anything changes; such a reference made during the move refuses the
// cleanup, which would otherwise fail on it, or delete (ON DELETE CASCADE)
// a row of a range the source still serves; once it is gone, the cleanup
// goes on.
func TestMoveRefusesRowsReferencingAcrossTheRangesEdge(t *testing.T) {
	withForeignKey(t, []any{&FkWriter{}, &FkNode{}}, "ALTER TABLE fk_nodes ADD CONSTRAINT fk_nodes_parent FOREIGN KEY (parent_id) REFERENCES fk_nodes(id)",
		func(t *testing.T, b backend, r *moveRig, cascade bool) {
			models := append([]any{&FkWriter{}, &FkNode{}}, moveModels...)
			node := func(shard int, parent *int64) FkNode {
				w := FkWriter{Name: "thread"}
				must(t, r.db.Clauses(shardid.OnShard(shard)).Create(&w).Error)
				n := FkNode{ThreadID: w.ID, ParentID: parent, Body: fmt.Sprint(shard)}
				must(t, r.db.Create(&n).Error)
				return n
			}
			inside := node(movingRange.From, nil)
			outside := node(movingRange.From-1, &inside.ID)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			move := shardid.Move{Logical: movingRange, To: b.name + "-target", Models: models}
			dry := move
			dry.DryRun = true
			refused := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), "fk_nodes") || !strings.Contains(err.Error(), "fk_nodes_parent") {
					t.Errorf("%s: %v, want ErrMoveInvalid naming fk_nodes and fk_nodes_parent", what, err)
				}
			}
			for _, m := range []shardid.Move{dry, move} {
				_, err := r.p.Move(ctx, m)
				refused(fmt.Sprintf("a move (dry run %v) of a node answered from outside the range", m.DryRun), err)
			}
			must(t, r.db.Model(&FkNode{ID: outside.ID, ThreadID: outside.ThreadID}).Update("parent_id", nil).Error)
			far := node(movingRange.From-2, nil)
			must(t, r.db.Model(&FkNode{ID: inside.ID, ThreadID: inside.ThreadID}).Update("parent_id", far.ID).Error)
			for _, m := range []shardid.Move{dry, move} {
				_, err := r.p.Move(ctx, m)
				refused(fmt.Sprintf("a move (dry run %v) of a node answering one outside the range", m.DryRun), err)
			}
			if n := countIn(t, r.target, "fk_nodes", true, r.p.Layout()); n != 0 {
				t.Errorf("the refused moves copied %d nodes", n)
			}

			must(t, r.db.Model(&FkNode{ID: inside.ID, ThreadID: inside.ThreadID}).Update("parent_id", nil).Error)
			_, err := r.p.Move(ctx, move)
			must(t, err)
			// Made after the cutover on the source, behind the new map's back.
			must(t, r.source.Exec("UPDATE fk_nodes SET parent_id = ? WHERE id = ?", inside.ID, outside.ID).Error)
			refused("a cleanup of a node answered from outside the range", r.p.CleanupMove(ctx, movingRange))
			var kept []FkNode
			must(t, r.source.Table("fk_nodes").Where("id = ?", outside.ID).Find(&kept).Error)
			if len(kept) != 1 || kept[0].ParentID == nil || *kept[0].ParentID != inside.ID {
				t.Errorf("the node outside the range on the source after the refused cleanup: %+v", kept)
			}
			must(t, r.source.Exec("UPDATE fk_nodes SET parent_id = NULL WHERE id = ?", outside.ID).Error)
			cleanUpLeavingNone(t, ctx, r, "fk_nodes")
			if n := countIn(t, r.source, "fk_nodes", false, r.p.Layout()); n != 2 {
				t.Errorf("%d nodes outside the range on the source after the cleanup, want 2", n)
			}
		})
}

// A singer's albums reference it by two columns, its key and its handle,
// a unique index other than the primary key, whose renames cascade (ON
// UPDATE CASCADE). The albums' table comes first by name.
type (
	FkSinger struct {
		ID     int64  `gorm:"uniqueIndex:fk_singers_id_handle,priority:1" shardid:"strategy:snowflake"`
		Handle string `gorm:"size:40;uniqueIndex:fk_singers_id_handle,priority:2"`
	}
	FkAlbum struct {
		ID           int64  `shardid:"strategy:snowflake;colocate:SingerID"`
		SingerID     int64  `gorm:"index"`
		SingerHandle string `gorm:"size:40"`
		Title        string
	}
)

// TestMoveCarriesCompositeKeysOnAUniqueIndexWithCascadingUpdates: albums
// reference their singer by (singer_id, singer_handle), the singers'
// unique index (id, handle), renames cascading to them. A singer renamed
// while its albums are copied, and in the catch-up, one deleted, one
// made: the cancel of a stopped move deletes every copy from the target,
// and the move then leaves the target holding the source's rows, which the
// cleanup deletes from the source.
func TestMoveCarriesCompositeKeysOnAUniqueIndexWithCascadingUpdates(t *testing.T) {
	withForeignKey(t, []any{&FkSinger{}, &FkAlbum{}}, "ALTER TABLE fk_albums ADD CONSTRAINT fk_albums_singer FOREIGN KEY (singer_id, singer_handle) REFERENCES fk_singers(id, handle) ON UPDATE CASCADE",
		func(t *testing.T, b backend, r *moveRig, cascade bool) {
			models := append([]any{&FkSinger{}, &FkAlbum{}}, moveModels...)
			var singers []FkSinger
			write := func(shard int) {
				s := FkSinger{Handle: fmt.Sprint("s", shard)}
				must(t, r.db.Clauses(shardid.OnShard(shard)).Create(&s).Error)
				for j := 0; j < 3; j++ {
					must(t, r.db.Create(&FkAlbum{SingerID: s.ID, SingerHandle: s.Handle, Title: fmt.Sprint(j)}).Error)
				}
				singers = append(singers, s)
			}
			rename := func(i int) {
				singers[i].Handle += "x"
				must(t, r.db.Model(&FkSinger{ID: singers[i].ID}).Update("handle", singers[i].Handle).Error)
			}
			remove := func(i int) {
				if !cascade {
					must(t, r.db.Where("singer_id = ?", singers[i].ID).Delete(&FkAlbum{}).Error)
				}
				must(t, r.db.Delete(&FkSinger{ID: singers[i].ID}).Error)
			}
			for i := 0; i < 8; i++ {
				write(movingRange.From + i)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			stop, stopped := context.WithCancel(ctx)
			_, err := r.p.Move(stop, shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 4, CatchUpBelow: 1, Models: models,
				Progress: func(p shardid.MoveProgress) {
					if p.Phase == shardid.PhaseCopy && p.Table == "fk_albums" {
						rename(0)
					}
					if p.Phase == shardid.PhaseCatchUp {
						stopped()
					}
				}})
			if err == nil {
				t.Fatal("the stopped move succeeded")
			}
			must(t, r.p.CancelMove(ctx, movingRange))
			for _, table := range []string{"fk_albums", "fk_singers"} {
				if n := countIn(t, r.target, table, true, r.p.Layout()); n != 0 {
					t.Errorf("%s: %d rows of the range left on the target by the cancel", table, n)
				}
			}
			wrote := map[string]bool{}
			_, err = r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 4, CatchUpBelow: 1, Models: models,
				Progress: func(p shardid.MoveProgress) {
					step := p.Phase + p.Table
					if wrote[step] || !(p.Phase == shardid.PhaseCopy && p.Table == "fk_albums" || p.Phase == shardid.PhaseCatchUp) {
						return
					}
					wrote[step] = true
					n := len(wrote)
					rename(n)     // its albums copied or not yet
					rename(7)     // the last, not yet copied
					remove(2 + n) // with its albums
					write(movingRange.From + 100 + n)
				}})
			must(t, err)
			if len(wrote) != 2 {
				t.Fatalf("wrote in %v", wrote)
			}
			compareSides(t, r, []fpTable{{"fk_singers", "id"}, {"fk_albums", "id"}})
			var stale int64
			must(t, r.target.Raw("SELECT count(*) FROM fk_albums a JOIN fk_singers s ON s.id = a.singer_id WHERE s.handle <> a.singer_handle").Scan(&stale).Error)
			if stale != 0 {
				t.Errorf("%d albums on the target with their singer's old handle", stale)
			}
			cleanUpLeavingNone(t, ctx, r, "fk_albums", "fk_singers")
		})
}

// TestMoveRefusesATableOfAnotherSchemaReferencingAMovedTable: a table of
// another schema (MariaDB: another database of the server) of the same
// name as a moved one references it by a foreign key, ON DELETE CASCADE:
// the dry run and the move are refused with ErrMoveInvalid naming it, as
// the cleanup's deletes would take its rows with them.
func TestMoveRefusesATableOfAnotherSchemaReferencingAMovedTable(t *testing.T) {
	withForeignKey(t, []any{&FkWriter{}, &FkBook{}}, "ALTER TABLE fk_books ADD CONSTRAINT fk_books_writer FOREIGN KEY (writer_id) REFERENCES fk_writers(id)",
		func(t *testing.T, b backend, r *moveRig, cascade bool) {
			if cascade {
				t.Skip("refused before any delete")
			}
			models := append([]any{&FkWriter{}, &FkBook{}}, moveModels...)
			writer := FkWriter{Name: "w"}
			must(t, r.db.Clauses(shardid.OnShard(movingRange.From)).Create(&writer).Error)
			book := FkBook{WriterID: writer.ID, Title: "t"}
			must(t, r.db.Create(&book).Error)
			var own string
			if b.name == "postgres" {
				must(t, r.source.Raw("SELECT current_schema()").Scan(&own).Error)
			} else {
				must(t, r.source.Raw("SELECT DATABASE()").Scan(&own).Error)
			}
			other := own + "_fk_other"
			q := func(s string) string {
				if b.name == "postgres" {
					return `"` + s + `"`
				}
				return "`" + s + "`"
			}
			if b.name == "postgres" {
				must(t, r.source.Exec("CREATE SCHEMA "+q(other)).Error)
				t.Cleanup(func() { _ = r.source.Exec("DROP SCHEMA " + q(other) + " CASCADE").Error })
			} else {
				must(t, r.source.Exec("CREATE DATABASE "+q(other)).Error)
				t.Cleanup(func() { _ = r.source.Exec("DROP DATABASE " + q(other)).Error })
			}
			must(t, r.source.Exec("CREATE TABLE "+q(other)+".fk_books (id BIGINT PRIMARY KEY, book_id BIGINT, CONSTRAINT fk_other_book FOREIGN KEY (book_id) REFERENCES "+q(own)+".fk_books(id) ON DELETE CASCADE)").Error)
			must(t, r.source.Exec("INSERT INTO "+q(other)+".fk_books (id, book_id) VALUES (1, ?)", book.ID).Error)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			move := shardid.Move{Logical: movingRange, To: b.name + "-target", Models: models}
			dry := move
			dry.DryRun = true
			for _, m := range []shardid.Move{dry, move} {
				if _, err := r.p.Move(ctx, m); !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), other) {
					t.Errorf("a move (dry run %v) of a table %s.fk_books references: %v, want ErrMoveInvalid naming it", m.DryRun, other, err)
				}
			}
			if n := countIn(t, r.target, "fk_books", true, r.p.Layout()); n != 0 {
				t.Errorf("the refused move copied %d books", n)
			}
		})
}

// TestMoveFailsNamingARowMadeToReferenceAcrossTheRangesEdge: while the
// move copies, and in its catch-up, a node of the range is made to answer
// one outside it, which the target never receives: the move fails with
// ErrMoveInvalid naming the table and the key, the source serving the
// range still; once the node is pointed back, the move run again carries
// every node.
func TestMoveFailsNamingARowMadeToReferenceAcrossTheRangesEdge(t *testing.T) {
	withForeignKey(t, []any{&FkWriter{}, &FkNode{}}, "ALTER TABLE fk_nodes ADD CONSTRAINT fk_nodes_parent FOREIGN KEY (parent_id) REFERENCES fk_nodes(id)",
		func(t *testing.T, b backend, r *moveRig, cascade bool) {
			if cascade {
				t.Skip("nothing is deleted")
			}
			models := append([]any{&FkWriter{}, &FkNode{}}, moveModels...)
			node := func(shard int) FkNode {
				w := FkWriter{Name: "thread"}
				must(t, r.db.Clauses(shardid.OnShard(shard)).Create(&w).Error)
				n := FkNode{ThreadID: w.ID, Body: fmt.Sprint(shard)}
				must(t, r.db.Create(&n).Error)
				return n
			}
			var inside []FkNode
			for i := 0; i < 6; i++ {
				inside = append(inside, node(movingRange.From+i))
			}
			outside := node(movingRange.From - 1)
			point := func(n FkNode, parent any) {
				must(t, r.db.Model(&FkNode{ID: n.ID, ThreadID: n.ThreadID}).Update("parent_id", parent).Error)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			for _, phase := range []string{shardid.PhaseCopy, shardid.PhaseCatchUp} {
				done := false
				_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 2, CatchUpBelow: 1, Models: models,
					Progress: func(p shardid.MoveProgress) {
						if p.Phase == phase && (phase != shardid.PhaseCopy || p.Table == "fk_nodes") && !done {
							done = true
							point(inside[0], outside.ID) // copied already
							point(inside[5], outside.ID) // not yet, in the copy
						}
					}})
				if !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), "fk_nodes") || !strings.Contains(err.Error(), "fk_nodes_parent") {
					t.Errorf("a move whose node came to answer one outside the range in its %s: %v, want ErrMoveInvalid naming fk_nodes and fk_nodes_parent", phase, err)
				}
				point(inside[0], nil)
				point(inside[5], nil)
				if phase == shardid.PhaseCopy {
					must(t, r.p.CancelMove(ctx, movingRange))
					if n := countIn(t, r.target, "fk_nodes", true, r.p.Layout()); n != 0 {
						t.Errorf("%d nodes of the range left on the target by the cancel", n)
					}
				}
			}
			_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", Models: models})
			must(t, err)
			compareSides(t, r, []fpTable{{"fk_nodes", "id"}})
			must(t, r.p.CleanupMove(ctx, movingRange))
		})
}

// TestMoveCarriesATableReferencingItselfByADeferrableKey: on PostgreSQL,
// replies reference the node they answer by a key DEFERRABLE, INITIALLY
// DEFERRED or IMMEDIATE, which is checked as a transaction commits: nodes
// re-parented to nodes made after them, in the copy and in the catch-up,
// a cancel of a move stopped in its copy, then a move and its cleanup
// leave the target holding the source's rows, and the source none.
func TestMoveCarriesATableReferencingItselfByADeferrableKey(t *testing.T) {
	for _, initially := range []string{"DEFERRED", "IMMEDIATE"} {
		t.Run(initially, func(t *testing.T) {
			withForeignKey(t, []any{&FkWriter{}, &FkNode{}}, "ALTER TABLE fk_nodes ADD CONSTRAINT fk_nodes_parent FOREIGN KEY (parent_id) REFERENCES fk_nodes(id)",
				func(t *testing.T, b backend, r *moveRig, cascade bool) {
					if b.name != "postgres" {
						t.Skip("PostgreSQL's deferrable keys")
					}
					for _, db := range []*gorm.DB{r.source, r.target} {
						must(t, db.Exec("ALTER TABLE fk_nodes ALTER CONSTRAINT fk_nodes_parent DEFERRABLE INITIALLY "+initially).Error)
					}
					models := append([]any{&FkWriter{}, &FkNode{}}, moveModels...)
					thread := FkWriter{Name: "thread"}
					must(t, r.db.Clauses(shardid.OnShard(movingRange.From)).Create(&thread).Error)
					var nodes []int64
					var parent *int64
					for j := 0; j < 10; j++ {
						node := FkNode{ThreadID: thread.ID, ParentID: parent, Body: fmt.Sprint(j)}
						must(t, r.db.Create(&node).Error)
						parent, nodes = &node.ID, append(nodes, node.ID)
					}
					reparent := func(id int64) {
						later := FkNode{ThreadID: thread.ID, Body: "later"}
						must(t, r.db.Create(&later).Error)
						must(t, r.db.Model(&FkNode{ID: id, ThreadID: thread.ID}).Update("parent_id", later.ID).Error)
					}
					reparent(nodes[0])
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					defer cancel()
					stop, stopped := context.WithCancel(ctx)
					_, err := r.p.Move(stop, shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 3, Models: models,
						Progress: func(p shardid.MoveProgress) {
							if p.Phase == shardid.PhaseCopy && p.Table == "fk_nodes" && p.Copied >= 6 {
								stopped()
							}
						}})
					if err == nil {
						t.Fatal("the stopped move succeeded")
					}
					must(t, r.p.CancelMove(ctx, movingRange))
					if n := countIn(t, r.target, "fk_nodes", true, r.p.Layout()); n != 0 {
						t.Errorf("%d nodes of the range left on the target by the cancel", n)
					}
					wrote := map[string]bool{}
					_, err = r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 3, CatchUpBelow: 1, Models: models,
						Progress: func(p shardid.MoveProgress) {
							if (p.Phase == shardid.PhaseCopy && p.Table == "fk_nodes" || p.Phase == shardid.PhaseCatchUp) && !wrote[p.Phase] {
								wrote[p.Phase] = true
								reparent(nodes[len(wrote)])
								must(t, r.db.Delete(&FkNode{ID: nodes[len(nodes)-1], ThreadID: thread.ID}).Error) // a reply no node answers
								nodes = nodes[:len(nodes)-1]
							}
						}})
					must(t, err)
					compareSides(t, r, []fpTable{{"fk_nodes", "id"}})
					cleanUpLeavingNone(t, ctx, r, "fk_nodes")
				})
		})
	}
}

// TestCancelRefusesWhileARowOfTheTargetReferencesACopy: a node of a range
// the target serves answers a node the stopped move copied there: the
// cancel is refused with ErrMoveInvalid naming the table and the key,
// nothing deleted, as its delete of the copy would fail, or (ON DELETE
// CASCADE) delete that node with it; once it answers none, the cancel
// deletes the copies and keeps it.
func TestCancelRefusesWhileARowOfTheTargetReferencesACopy(t *testing.T) {
	withForeignKey(t, []any{&FkWriter{}, &FkNode{}}, "ALTER TABLE fk_nodes ADD CONSTRAINT fk_nodes_parent FOREIGN KEY (parent_id) REFERENCES fk_nodes(id)",
		func(t *testing.T, b backend, r *moveRig, cascade bool) {
			models := append([]any{&FkWriter{}, &FkNode{}}, moveModels...)
			_, copied := nodeToCopy(t, r)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			stop, stopped := context.WithCancel(ctx)
			_, err := r.p.Move(stop, shardid.Move{Logical: movingRange, To: b.name + "-target", CatchUpBelow: 1, Models: models,
				Progress: func(p shardid.MoveProgress) {
					if p.Phase == shardid.PhaseCatchUp {
						stopped()
					}
				}})
			if err == nil {
				t.Fatal("the stopped move succeeded")
			}
			own := r.p.Layout().Compose(time.Now(), movingRange.From-1, 1) // a logical shard the target would serve
			must(t, r.target.Exec("INSERT INTO fk_nodes (id, thread_id, parent_id, body) VALUES (?, ?, ?, 'own')", own, own, copied.ID).Error)
			err = r.p.CancelMove(ctx, movingRange)
			if !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), "fk_nodes") || !strings.Contains(err.Error(), "fk_nodes_parent") {
				t.Errorf("a cancel of a copy a node of the target answers: %v, want ErrMoveInvalid naming fk_nodes and fk_nodes_parent", err)
			}
			var kept int64
			must(t, r.target.Raw("SELECT count(*) FROM fk_nodes WHERE id = ? AND parent_id = ?", own, copied.ID).Scan(&kept).Error)
			if kept != 1 {
				t.Errorf("the node of the target answering the copy: %d rows after the refused cancel, want 1", kept)
			}
			must(t, r.target.Exec("UPDATE fk_nodes SET parent_id = NULL WHERE id = ?", own).Error)
			must(t, r.p.CancelMove(ctx, movingRange))
			if n := countIn(t, r.target, "fk_nodes", true, r.p.Layout()); n != 0 {
				t.Errorf("%d nodes of the range left on the target by the cancel", n)
			}
			if n := countIn(t, r.target, "fk_nodes", false, r.p.Layout()); n != 1 {
				t.Errorf("%d nodes outside the range on the target after the cancel, want 1", n)
			}
			var source int64
			must(t, r.db.Model(&FkNode{}).Where("id = ?", copied.ID).Count(&source).Error)
			if source != 1 {
				t.Errorf("the copied node read through the plugin after the cancel: %d rows, want 1", source)
			}
		})
}

// nodeToCopy writes a thread of the moving range and a node of it.
func nodeToCopy(t *testing.T, r *moveRig) (FkWriter, FkNode) {
	w := FkWriter{Name: "thread"}
	must(t, r.db.Clauses(shardid.OnShard(movingRange.From)).Create(&w).Error)
	copied := FkNode{ThreadID: w.ID, Body: "copied"}
	must(t, r.db.Create(&copied).Error)
	return w, copied
}

// TestMoveRefusesDeletingACopyARowOfTheTargetReferences: while the move
// runs, a node of a range the target serves comes to answer a copied node
// there, and the source deletes that node. The catch-up's delete of the
// copy would fail (RESTRICT) or take the target's node with it (CASCADE):
// the move fails with ErrMoveInvalid naming the key, the target's node
// kept; once it answers no copy, the move run again completes.
func TestMoveRefusesDeletingACopyARowOfTheTargetReferences(t *testing.T) {
	withForeignKey(t, []any{&FkWriter{}, &FkNode{}}, "ALTER TABLE fk_nodes ADD CONSTRAINT fk_nodes_parent FOREIGN KEY (parent_id) REFERENCES fk_nodes(id)",
		func(t *testing.T, b backend, r *moveRig, cascade bool) {
			models := append([]any{&FkWriter{}, &FkNode{}}, moveModels...)
			w, copied := nodeToCopy(t, r)
			own := r.p.Layout().Compose(time.Now(), movingRange.From-1, 1) // a logical shard the target serves
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			made := false
			_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", CatchUpBelow: 1, Models: models,
				Progress: func(p shardid.MoveProgress) {
					if p.Phase == shardid.PhaseCatchUp && !made {
						made = true
						must(t, r.target.Exec("INSERT INTO fk_nodes (id, thread_id, parent_id, body) VALUES (?, ?, ?, 'own')", own, own, copied.ID).Error)
						must(t, r.db.Delete(&copied).Error)
					}
				}})
			if !made {
				t.Fatalf("no catch-up: %v", err)
			}
			if !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), "fk_nodes") || !strings.Contains(err.Error(), "fk_nodes_parent") {
				t.Fatalf("a move whose catch-up deletes a copy a node of the target answers: %v, want ErrMoveInvalid naming fk_nodes and fk_nodes_parent", err)
			}
			var kept int64
			must(t, r.target.Raw("SELECT count(*) FROM fk_nodes WHERE id = ? AND parent_id = ?", own, copied.ID).Scan(&kept).Error)
			if kept != 1 {
				t.Fatalf("the node of the target answering the copy: %d rows after the refused catch-up, want 1", kept)
			}
			must(t, r.db.Create(&FkNode{ThreadID: w.ID, Body: "written after the refusal"}).Error) // the range is not left frozen
			must(t, r.target.Exec("UPDATE fk_nodes SET parent_id = NULL WHERE id = ?", own).Error)
			_, err = r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", CatchUpBelow: 1, Models: models})
			must(t, err)
			var left int64
			must(t, r.target.Raw("SELECT count(*) FROM fk_nodes WHERE id = ?", copied.ID).Scan(&left).Error)
			if left != 0 {
				t.Errorf("the node deleted on the source during the move: %d copies on the target, want 0", left)
			}
			if n := countIn(t, r.target, "fk_nodes", false, r.p.Layout()); n != 1 {
				t.Errorf("%d nodes outside the range on the target after the move, want 1", n)
			}
			if n := countIn(t, r.target, "fk_nodes", true, r.p.Layout()); n != 1 {
				t.Errorf("%d nodes of the range on the target after the move, want the one written after the refusal", n)
			}
		})
}

// TestMoveRefusesDeletingACopyWhoseCascadeReachesARowOfTheTarget: while
// the move runs, a node of a range the target serves comes to answer the
// copy of a reply, and the source deletes the node the reply answers,
// which its ON DELETE CASCADE deletes the reply with. MySQL/MariaDB run no
// trigger for a cascade's deletes, so the log names the deleted node alone;
// the catch-up's delete of its copy cascaded on the target to the reply's
// copy and on to the target's own node, the move completing without a
// word. The copies referencing a deleted one are read again on the source:
// the reply's gone too, the move is refused naming the key, the target's
// node kept; once it answers no copy, the move run again completes, no
// copy of either left.
func TestMoveRefusesDeletingACopyWhoseCascadeReachesARowOfTheTarget(t *testing.T) {
	withForeignKey(t, []any{&FkWriter{}, &FkNode{}}, "ALTER TABLE fk_nodes ADD CONSTRAINT fk_nodes_parent FOREIGN KEY (parent_id) REFERENCES fk_nodes(id)",
		func(t *testing.T, b backend, r *moveRig, cascade bool) {
			if !cascade {
				t.Skip("the source refuses to delete a node a reply answers")
			}
			models := append([]any{&FkWriter{}, &FkNode{}}, moveModels...)
			w, copied := nodeToCopy(t, r)
			reply := FkNode{ThreadID: w.ID, ParentID: &copied.ID, Body: "reply"}
			must(t, r.db.Create(&reply).Error)
			own := r.p.Layout().Compose(time.Now(), movingRange.From-1, 1) // a logical shard the target serves
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			made := false
			_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", CatchUpBelow: 1, Models: models,
				Progress: func(p shardid.MoveProgress) {
					if p.Phase == shardid.PhaseCatchUp && !made {
						made = true
						must(t, r.target.Exec("INSERT INTO fk_nodes (id, thread_id, parent_id, body) VALUES (?, ?, ?, 'own')", own, own, reply.ID).Error)
						must(t, r.db.Delete(&copied).Error) // and the reply with it
					}
				}})
			if !made {
				t.Fatalf("no catch-up: %v", err)
			}
			var kept int64
			must(t, r.target.Raw("SELECT count(*) FROM fk_nodes WHERE id = ? AND parent_id = ?", own, reply.ID).Scan(&kept).Error)
			if kept != 1 {
				t.Fatalf("the node of the target answering the reply's copy: %d rows after the catch-up (move: %v), want 1", kept, err)
			}
			if !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), "fk_nodes_parent") {
				t.Fatalf("a move whose catch-up's delete of a copy cascades to a node of the target: %v, want ErrMoveInvalid naming fk_nodes_parent", err)
			}
			must(t, r.target.Exec("UPDATE fk_nodes SET parent_id = NULL WHERE id = ?", own).Error)
			_, err = r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", CatchUpBelow: 1, Models: models})
			must(t, err)
			var left int64
			must(t, r.target.Raw("SELECT count(*) FROM fk_nodes WHERE id IN (?, ?)", copied.ID, reply.ID).Scan(&left).Error)
			if left != 0 {
				t.Errorf("the node deleted on the source and its reply: %d copies on the target, want 0", left)
			}
			if n := countIn(t, r.target, "fk_nodes", false, r.p.Layout()); n != 1 {
				t.Errorf("%d nodes outside the range on the target after the move, want 1", n)
			}
		})
}

// TestMoveDeletesTheCopyOfARowASourcesCascadeDeleted: a key with ON
// DELETE CASCADE made on the source alone (by hand) deletes a reply with
// the node it answers there, while the move runs. MySQL/MariaDB log no row
// a cascade deleted: the reply's copy stayed on the target, without a key
// there to take it with the node's, and the move failed its verification.
// The copies referencing a deleted copy by the source's keys are read again
// there: the reply's goes too, and the move completes.
func TestMoveDeletesTheCopyOfARowASourcesCascadeDeleted(t *testing.T) {
	withForeignKey(t, []any{&FkWriter{}, &FkNode{}}, "", func(t *testing.T, b backend, r *moveRig, cascade bool) {
		if cascade {
			t.Skip("the key is made below, on the source alone")
		}
		must(t, r.source.Exec("ALTER TABLE fk_nodes ADD CONSTRAINT fk_nodes_parent FOREIGN KEY (parent_id) REFERENCES fk_nodes(id) ON DELETE CASCADE").Error)
		models := append([]any{&FkWriter{}, &FkNode{}}, moveModels...)
		w, copied := nodeToCopy(t, r)
		reply := FkNode{ThreadID: w.ID, ParentID: &copied.ID, Body: "reply"}
		must(t, r.db.Create(&reply).Error)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		made := false
		_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", CatchUpBelow: 1, Models: models,
			Progress: func(p shardid.MoveProgress) {
				if p.Phase == shardid.PhaseCatchUp && !made {
					made = true
					must(t, r.db.Delete(&copied).Error) // and the reply with it, on the source
				}
			}})
		if !made {
			t.Fatalf("no catch-up: %v", err)
		}
		must(t, err)
		var left int64
		must(t, r.target.Raw("SELECT count(*) FROM fk_nodes WHERE id IN (?, ?)", copied.ID, reply.ID).Scan(&left).Error)
		if left != 0 {
			t.Errorf("the node deleted on the source and its reply: %d copies on the target, want 0", left)
		}
	})
}

// TestMoveFollowsAForeignKeyMadeOnTheTargetWhileItRuns: the albums' key
// on their singer is made on the target as the move begins (after it read
// the keys, before it copies), or once it copied (a singer and its albums
// made then, for the catch-up): the albums' table, first by name, then
// needs the singers' first. The move carries every row all the same.
func TestMoveFollowsAForeignKeyMadeOnTheTargetWhileItRuns(t *testing.T) {
	for _, when := range []string{shardid.PhasePrepare, shardid.PhaseCatchUp} {
		t.Run(when, func(t *testing.T) {
			withForeignKey(t, []any{&FkSinger{}, &FkAlbum{}}, "",
				func(t *testing.T, b backend, r *moveRig, cascade bool) {
					if cascade {
						t.Skip("nothing is deleted")
					}
					models := append([]any{&FkSinger{}, &FkAlbum{}}, moveModels...)
					write := func(shard int) {
						s := FkSinger{Handle: fmt.Sprint("s", shard)}
						must(t, r.db.Clauses(shardid.OnShard(shard)).Create(&s).Error)
						for j := 0; j < 3; j++ {
							must(t, r.db.Create(&FkAlbum{SingerID: s.ID, SingerHandle: s.Handle, Title: fmt.Sprint(j)}).Error)
						}
					}
					for i := 0; i < 4; i++ {
						write(movingRange.From + i)
					}
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					defer cancel()
					made := false
					_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 4, CatchUpBelow: 1, Models: models,
						Progress: func(p shardid.MoveProgress) {
							if p.Phase == when && (when != shardid.PhasePrepare || p.Step == "triggers") && !made {
								made = true
								must(t, r.target.Exec("ALTER TABLE fk_albums ADD CONSTRAINT fk_albums_singer FOREIGN KEY (singer_id) REFERENCES fk_singers(id)").Error)
								write(movingRange.From + 10)
							}
						}})
					must(t, err)
					if !made {
						t.Fatalf("no %s", when)
					}
					compareSides(t, r, []fpTable{{"fk_singers", "id"}, {"fk_albums", "id"}})
				})
		})
	}
}

// TestMoveCarriesATableReferencingItselfWithDeletesSettingNull: replies
// reference the node they answer ON DELETE SET NULL; nodes deleted while
// the move copies and in its catch-up null their replies on the source
// (on MariaDB unseen by triggers) and, replayed, on the target: a cancel
// of a stopped move, then a move and its cleanup, leave the target holding
// the source's rows and the source none of the range.
func TestMoveCarriesATableReferencingItselfWithDeletesSettingNull(t *testing.T) {
	withForeignKey(t, []any{&FkWriter{}, &FkNode{}}, "ALTER TABLE fk_nodes ADD CONSTRAINT fk_nodes_parent FOREIGN KEY (parent_id) REFERENCES fk_nodes(id) ON DELETE SET NULL",
		func(t *testing.T, b backend, r *moveRig, cascade bool) {
			models := append([]any{&FkWriter{}, &FkNode{}}, moveModels...)
			thread := FkWriter{Name: "thread"}
			must(t, r.db.Clauses(shardid.OnShard(movingRange.From)).Create(&thread).Error)
			var nodes []int64
			var parent *int64
			for j := 0; j < 12; j++ {
				node := FkNode{ThreadID: thread.ID, ParentID: parent, Body: fmt.Sprint(j)}
				must(t, r.db.Create(&node).Error)
				parent, nodes = &node.ID, append(nodes, node.ID)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			stop, stopped := context.WithCancel(ctx)
			_, err := r.p.Move(stop, shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 3, CatchUpBelow: 1, Models: models,
				Progress: func(p shardid.MoveProgress) {
					if p.Phase == shardid.PhaseCatchUp {
						stopped()
					}
				}})
			if err == nil {
				t.Fatal("the stopped move succeeded")
			}
			must(t, r.p.CancelMove(ctx, movingRange))
			if n := countIn(t, r.target, "fk_nodes", true, r.p.Layout()); n != 0 {
				t.Errorf("%d nodes of the range left on the target by the cancel", n)
			}
			deleted := map[string]bool{}
			_, err = r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 3, CatchUpBelow: 1, Models: models,
				Progress: func(p shardid.MoveProgress) {
					if (p.Phase == shardid.PhaseCopy && p.Table == "fk_nodes" || p.Phase == shardid.PhaseCatchUp) && !deleted[p.Phase] {
						deleted[p.Phase] = true
						i := map[string]int{shardid.PhaseCopy: 1, shardid.PhaseCatchUp: 8}[p.Phase] // copied already, or in a later chunk
						must(t, r.db.Delete(&FkNode{ID: nodes[i], ThreadID: thread.ID}).Error)
					}
				}})
			must(t, err)
			if len(deleted) != 2 {
				t.Fatalf("deleted in %v", deleted)
			}
			compareSides(t, r, []fpTable{{"fk_nodes", "id"}})
			var orphans int64
			must(t, r.target.Raw("SELECT count(*) FROM fk_nodes WHERE parent_id IS NULL").Scan(&orphans).Error)
			if orphans != 3 {
				t.Errorf("%d nodes without a parent on the target, want 3 (the first, and the replies of the two deleted)", orphans)
			}
			cleanUpLeavingNone(t, ctx, r, "fk_nodes")
		})
}

// TestMoveFailingOnATargetsKeyToATableItDoesNotCarryNamesIt: books
// reference a genre, a table the move does not carry, whose rows the
// target lacks: the copy fails there, and the error names the key's table
// and says the move does not carry it; the source serves the range still,
// and once the target holds the genre, the move run again carries every
// book.
func TestMoveFailingOnATargetsKeyToATableItDoesNotCarryNamesIt(t *testing.T) {
	withForeignKey(t, []any{&FkWriter{}, &FkBook{}}, "",
		func(t *testing.T, b backend, r *moveRig, cascade bool) {
			if cascade {
				t.Skip("nothing is deleted")
			}
			for _, db := range []*gorm.DB{r.source, r.target} {
				must(t, db.Exec("CREATE TABLE fk_genres (id BIGINT PRIMARY KEY)").Error)
				must(t, db.Exec("ALTER TABLE fk_books ADD COLUMN genre_id BIGINT NULL").Error)
				must(t, db.Exec("ALTER TABLE fk_books ADD CONSTRAINT fk_books_genre FOREIGN KEY (genre_id) REFERENCES fk_genres(id)").Error)
			}
			t.Cleanup(func() {
				for _, db := range []*gorm.DB{r.source, r.target} {
					_ = db.Exec("ALTER TABLE fk_books DROP " + map[bool]string{true: "CONSTRAINT", false: "FOREIGN KEY"}[b.name == "postgres"] + " fk_books_genre").Error
					_ = db.Exec("DROP TABLE fk_genres").Error
				}
			})
			must(t, r.source.Exec("INSERT INTO fk_genres (id) VALUES (1)").Error)
			models := append([]any{&FkWriter{}, &FkBook{}}, moveModels...)
			w := FkWriter{Name: "w"}
			must(t, r.db.Clauses(shardid.OnShard(movingRange.From)).Create(&w).Error)
			book := FkBook{WriterID: w.ID, Title: "t"}
			must(t, r.db.Create(&book).Error)
			must(t, r.source.Exec("UPDATE fk_books SET genre_id = 1 WHERE id = ?", book.ID).Error)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			move := shardid.Move{Logical: movingRange, To: b.name + "-target", Models: models}
			_, err := r.p.Move(ctx, move)
			if err == nil || !strings.Contains(err.Error(), "fk_genres") || !strings.Contains(err.Error(), "does not carry") {
				t.Errorf("a move of books whose genre the target lacks: %v, want an error naming fk_genres, which the move does not carry", err)
			}
			must(t, r.target.Exec("INSERT INTO fk_genres (id) VALUES (1)").Error)
			_, err = r.p.Move(ctx, move)
			must(t, err)
			compareSides(t, r, []fpTable{{"fk_books", "id"}})
		})
}

// cleanUpLeavingNone cleans the move of movingRange up, and fails t for
// each of tables that keeps rows of the range on the source.
func cleanUpLeavingNone(t *testing.T, ctx context.Context, r *moveRig, tables ...string) {
	t.Helper()
	must(t, r.p.CleanupMove(ctx, movingRange))
	for _, table := range tables {
		if n := countIn(t, r.source, table, true, r.p.Layout()); n != 0 {
			t.Errorf("%s: %d rows of the range left on the source after the cleanup", table, n)
		}
	}
}
