package integration

import (
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// Colocated models whose tables' names share their first 50 characters:
// the index the plugin makes on each one's colocate column,
// idx_shardid_<table>_<column>, is longer than the dialects take.
type (
	LnAccount struct {
		ID int64 `shardid:""`
	}
	LnInvoice struct {
		ID        int64 `shardid:"colocate:AccountID"`
		AccountID int64
	}
	LnPayment struct {
		ID        int64 `shardid:"colocate:AccountID"`
		AccountID int64
	}
)

const lnStart = "billing_records_of_accounts_in_the_region_of_europe"

func (LnInvoice) TableName() string { return lnStart + "_invoices" }
func (LnPayment) TableName() string { return lnStart + "_payments" }

// TestThePlacingIndexOfATableWithALongNameIsMadeOnce: the plugin's index on
// the colocate column of tables with long names is made (MySQL refuses a
// name over 64 characters), for each of two tables whose names share their
// start (PostgreSQL's index names are one per schema), once: migrating
// again makes no other. On PostgreSQL an index an earlier version made,
// whose name the server cut, is found, not made again.
func TestThePlacingIndexOfATableWithALongNameIsMadeOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		db := open(t, b, dir, shardid.Config{Shards: shards(t, b, dir)})
		models := []any{&LnAccount{}, &LnInvoice{}, &LnPayment{}}
		must(t, migrator(db).DropTable(models...))
		must(t, migrator(db).AutoMigrate(models...))
		must(t, migrator(db).AutoMigrate(models...))
		account := LnAccount{}
		must(t, db.Create(&account).Error)
		must(t, db.Create(&LnInvoice{AccountID: account.ID}).Error)
		must(t, db.Create(&LnPayment{AccountID: account.ID}).Error)
		for _, phys := range direct(t, b, dir) {
			for _, m := range models[1:] {
				if n := placingIndexes(t, phys, m); n != 1 {
					t.Errorf("%T has %d indexes leading with account_id, want 1", m, n)
				}
			}
		}
		if b.name != "postgres" {
			return
		}
		// An earlier version's index, its name cut by the server.
		must(t, migrator(db).DropTable(models...))
		for _, phys := range direct(t, b, dir) {
			must(t, phys.AutoMigrate(models...))
			must(t, phys.Exec("CREATE INDEX idx_shardid_"+lnStart+"_invoices_account_id ON "+lnStart+"_invoices (account_id)").Error)
		}
		must(t, migrator(db).AutoMigrate(models...))
		for _, phys := range direct(t, b, dir) {
			if n := placingIndexes(t, phys, &LnInvoice{}); n != 1 {
				t.Errorf("with an earlier version's index, %d indexes lead with account_id, want 1", n)
			}
		}
	})
}

// placingIndexes counts m's indexes whose first column is account_id.
func placingIndexes(t *testing.T, db *gorm.DB, m any) int {
	t.Helper()
	indexes, err := db.Migrator().GetIndexes(m)
	must(t, err)
	n := 0
	for _, idx := range indexes {
		if columns := idx.Columns(); len(columns) > 0 && strings.EqualFold(columns[0], "account_id") {
			n++
		}
	}
	return n
}
