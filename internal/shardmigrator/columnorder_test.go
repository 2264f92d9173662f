package shardmigrator

import (
	"bytes"
	"testing"
)

type fakeUserEmailFirst struct {
	ID    int64
	Email string
	Name  string
}

func (fakeUserEmailFirst) TableName() string { return "fake_users" }

// TestColumnTypesAgreeWhateverTheColumnsOrder: a physical database whose
// table was made afresh from a model with a field added in its middle has
// the same columns as the others, which AutoMigrate added it to at the end,
// in another order: ColumnTypes answers, and does not report that the
// databases disagree.
func TestColumnTypesAgreeWhateverTheColumnsOrder(t *testing.T) {
	db, plugin := open(t, &bytes.Buffer{})
	m := New(plugin, db)
	if err := m.AutoMigrate(&fakeUser{}); err != nil {
		t.Fatal(err)
	}
	if err := plugin.physical[1].Migrator().DropTable("fake_users"); err != nil { // a database added later, or whose copy was dropped
		t.Fatal(err)
	}
	if err := m.AutoMigrate(&fakeUserEmailFirst{}); err != nil {
		t.Fatal(err)
	}
	columns, err := m.ColumnTypes(&fakeUserEmailFirst{})
	if err != nil || len(columns) != 3 {
		t.Fatalf("ColumnTypes = %d columns, %v; want the 3 columns every database has", len(columns), err)
	}
	if err := plugin.physical[1].Exec("ALTER TABLE fake_users ADD COLUMN drift INTEGER").Error; err != nil {
		t.Fatal(err)
	}
	if _, err := m.ColumnTypes(&fakeUserEmailFirst{}); err == nil {
		t.Fatal("ColumnTypes with an extra column on one database: no error")
	}
}
