package shardid

import (
	"strings"
	"testing"
)

type failReportCountry struct { // unsharded
	ID   uint
	Name string
}

type failReportCountryV2 struct { // its next version: a column added
	ID     uint
	Name   string
	Region string
}

func (failReportCountryV2) TableName() string { return "fail_report_countries" }

type failReportOrder struct {
	ID   int64 `shardid:""`
	Name string
}

// TestAFailedMigrationSaysThePluginsDatabaseStaysChanged: a migration of an
// unsharded and a sharded model that fails on a physical database says
// where it leaves tables that were there before changed: the plugin's
// database, whose unsharded table got its new column, among them.
func TestAFailedMigrationSaysThePluginsDatabaseStaysChanged(t *testing.T) {
	db, p, direct := twoSQLiteShards(t)
	must(t, p.AutoMigrate(db, &failReportCountry{}))
	must(t, direct[1].Exec("CREATE VIEW fail_report_orders AS SELECT 1 AS id").Error) // s1 refuses the table
	err := p.AutoMigrate(db, &failReportCountryV2{}, &failReportOrder{})
	if err == nil {
		t.Fatal("AutoMigrate made a table over a view")
	}
	if !db.Migrator().HasColumn("fail_report_countries", "region") {
		t.Fatal("the plugin's database did not get the new column first")
	}
	if !strings.Contains(err.Error(), "stays changed on the plugin's database") {
		t.Errorf("the error does not say the plugin's database stays changed: %v", err)
	}
}
