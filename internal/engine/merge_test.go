package engine

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/shardid/shardid/shardrouter"
)

type mergedRow struct {
	ID   int64 `shardid:""`
	Name string
}

// BenchmarkMergeOnly measures the k-way merge alone, on parts already
// fetched: its CPU per row stays the same when the rows quadruple.
func BenchmarkMergeOnly(b *testing.B) {
	db, e := openEngine(b, Config{}, false)
	stmt := &gorm.Statement{DB: db}
	if err := stmt.Parse(&mergedRow{}); err != nil {
		b.Fatal(err)
	}
	m, err := e.model(stmt.Schema)
	if err != nil {
		b.Fatal(err)
	}
	order := &shardrouter.Order{Columns: []shardrouter.OrderColumn{{Field: m.pk().field, Desc: true}}, Key: m.pk().field}
	rowsType := reflect.TypeOf([]mergedRow{})
	for _, perPart := range []int{1020, 4020} {
		parts := make([]reflect.Value, 4)
		for k := range parts {
			rows := make([]mergedRow, perPart)
			for i := range rows {
				rows[i].ID = int64(1<<50) - int64(i)*4 - int64(k)
			}
			parts[k] = reflect.ValueOf(rows)
		}
		b.Run(fmt.Sprintf("rows-%d", 4*perPart), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				merged, _, err := mergeOrdered(stmt, order, mergeOrder{}, rowsType, parts, nil, 20, perPart-20, true, false)
				if err != nil || merged.Len() != 20 {
					b.Fatal(err, merged.Len())
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(4*perPart), "ns/row")
		})
	}
}

// TestMariaDBsUUIDOrderIsItsStoredForms: UUIDs whose seventh byte is 0x01
// to 0x5F and whose ninth has its top bit set order by their segments from
// last to first, others (v7) by their bytes, as MariaDB 10.11 orders these
// (checked on the server).
func TestMariaDBsUUIDOrderIsItsStoredForms(t *testing.T) {
	inServerOrder := []string{ // as MariaDB 10.11.19 orders them
		"00000000-0000-5fff-7000-000000000000", // byte 8's top bit clear: as its bytes
		"00000000-0000-6000-e000-000000000000", // version 6: as its bytes
		"00000000-0000-7000-8000-000000000000",
		"00000000-0000-7000-8000-000000000002",
		"00000000-0000-7000-8000-000000000003",
		"00000001-0000-4000-8000-000000000000", // swapped: by node, clock sequence, ...
		"ffffffff-0000-4000-8000-000000000000",
		"00000000-0000-4000-8000-000000000001",
		"00000000-0000-4000-c000-000000000001", // variant 110: swapped too
		"00000000-0000-0100-8000-000000000002", // version 0, byte 6 not zero: swapped too
		"00000000-0000-4000-8000-000000000002",
		"10000000-0000-7000-8000-000000000001",
	}
	values := make([]orderValue, len(inServerOrder))
	for i, s := range inServerOrder {
		v, err := orderValueOf(reflect.ValueOf(uuid.MustParse(s)), true)
		if err != nil {
			t.Fatal(err)
		}
		values[i] = mariadbUUIDOrder(v)
	}
	for i := 1; i < len(values); i++ {
		if values[i-1].compare(values[i], false) >= 0 {
			t.Errorf("%s orders before %s on MariaDB, not in the merge", inServerOrder[i-1], inServerOrder[i])
		}
	}
	for version, swapsRFCOnly := range map[string]bool{"10.11.19-MariaDB-0+deb12u1": true, "10.11.4-MariaDB": false, "10.11.5-MariaDB": true, "10.10.6-MariaDB": true, "10.10.5-MariaDB": false, "10.9.8-MariaDB": false, "11.4.2-MariaDB": true} {
		if got := uuidOrderedBySegmentsOfRFCVersionsOnly(version); got != swapsRFCOnly {
			t.Errorf("MariaDB %s swaps only versions 1 to 5: %v, want %v", version, got, swapsRFCOnly)
		}
	}
}

// TestRowsOutOfTheMergesOrderAreRefusedNamingTheOrder: a part whose rows are
// not in the order the merge compares (a database ordering by a collation
// the merge did not foresee) fails the query with ErrCrossShard naming the
// ORDER BY and what to do, rather than merging rows out of order.
func TestRowsOutOfTheMergesOrderAreRefusedNamingTheOrder(t *testing.T) {
	db, e := openEngine(t, Config{}, false)
	stmt := &gorm.Statement{DB: db}
	if err := stmt.Parse(&mergedRow{}); err != nil {
		t.Fatal(err)
	}
	m, err := e.model(stmt.Schema)
	if err != nil {
		t.Fatal(err)
	}
	name := stmt.Schema.LookUpField("Name")
	order := &shardrouter.Order{Columns: []shardrouter.OrderColumn{{Field: name, Desc: true}}, Key: m.pk().field, TieKey: true}
	inOrder := reflect.ValueOf([]mergedRow{{ID: 1, Name: "b"}, {ID: 2, Name: "a"}})
	outOfOrder := reflect.ValueOf([]mergedRow{{ID: 3, Name: "a"}, {ID: 4, Name: "b"}})
	_, _, err = mergeOrdered(stmt, order, mergeOrder{}, reflect.TypeOf([]mergedRow{}), []reflect.Value{inOrder, outOfOrder}, nil, 0, 0, false, false)
	if !errors.Is(err, ErrCrossShard) {
		t.Fatalf("merge of a part out of order: %v, want ErrCrossShard", err)
	}
	for _, want := range []string{"ORDER BY name DESC, id", "OnShard"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	merged, _, err := mergeOrdered(stmt, order, mergeOrder{}, reflect.TypeOf([]mergedRow{}), []reflect.Value{inOrder, inOrder}, nil, 0, 0, false, false)
	if err != nil || merged.Len() != 4 {
		t.Fatalf("merge of parts in order: %v rows, %v", merged.Len(), err)
	}
}
