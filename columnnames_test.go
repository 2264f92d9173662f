package shardid

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// legacyColumns names a column after the hash key's Go field: "Login" is the
// handle's column, the key's is email.
type legacyColumns struct {
	ID     int64  `shardid:"hash:Login"`
	Login  string `gorm:"column:email"`
	Handle string `gorm:"column:Login"`
}

// A condition on a column whose name is the hash key's Go field name is on
// that column, not the key: it is not routed by the key's hash.
func TestAConditionOnAColumnNamedLikeTheKeysGoFieldIsNotOnTheKey(t *testing.T) {
	db, _, _, _ := routedOverN(t, 4, Config{}, &legacyColumns{})
	plain, err := gorm.Open(sqlite.Open("file:"+filepath.Join(t.TempDir(), "plain.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	must(t, plain.AutoMigrate(&legacyColumns{}))
	for i := range 20 {
		row := legacyColumns{Login: fmt.Sprint("user", i, "@example.com"), Handle: "bob"}
		must(t, db.Create(&row).Error)
		must(t, plain.Create(&row).Error)
	}
	for form, where := range map[string]func(*gorm.DB) *gorm.DB{
		`Where("\"Login\" = ?")`:     func(d *gorm.DB) *gorm.DB { return d.Where(`"Login" = ?`, "bob") },
		`Where(map{"Login": "bob"})`: func(d *gorm.DB) *gorm.DB { return d.Where(map[string]any{"Login": "bob"}) },
	} {
		var got, want []legacyColumns
		must(t, where(plain).Find(&want).Error)
		if err := where(db).Find(&got).Error; err == nil && len(got) != len(want) {
			t.Errorf("%s: %d rows, no error; one database returns %d", form, len(got), len(want))
		}
	}
}

// caseColumns has a hash key and no two columns named alike but for case.
type caseColumns struct {
	ID    int64 `shardid:"hash:Email"`
	Email string
	Name  string
}

// A condition naming the key's column in another case finds what one
// database finds: MySQL and SQLite ignore a column name's case and
// PostgreSQL folds a bare one.
func TestAConditionOnTheKeyInAnotherCaseIsOnTheKey(t *testing.T) {
	db, _, direct, _ := routedOverN(t, 4, Config{}, &caseColumns{})
	var rows []caseColumns
	for i := range 8 {
		row := caseColumns{Email: fmt.Sprint("user", i, "@example.com"), Name: "n"}
		must(t, db.Create(&row).Error)
		rows = append(rows, row)
	}
	for form, where := range map[string]func(*gorm.DB) *gorm.DB{
		`Where("EMAIL = ?")`:       func(d *gorm.DB) *gorm.DB { return d.Where("EMAIL = ?", rows[3].Email) },
		`Where("eMail IN ?")`:      func(d *gorm.DB) *gorm.DB { return d.Where("eMail IN ?", []string{rows[3].Email}) },
		`Where(map{"EMAIL": key})`: func(d *gorm.DB) *gorm.DB { return d.Where(map[string]any{"EMAIL": rows[3].Email}) },
		`Where("ID = ?")`:          func(d *gorm.DB) *gorm.DB { return d.Where("ID = ?", rows[3].ID) },
		`Where("Case_Columns.ID")`: func(d *gorm.DB) *gorm.DB { return d.Where("Case_Columns.ID = ?", rows[3].ID) },
	} {
		var got []caseColumns
		if err := where(db).Find(&got).Error; err != nil || len(got) != 1 || got[0].ID != rows[3].ID {
			t.Errorf("%s: %+v, %v; want the row %d", form, got, err, rows[3].ID)
		}
	}
	if err := db.Model(&caseColumns{}).Where("EMAIL = ?", rows[5].Email).Update("name", "m").Error; err != nil {
		t.Fatalf(`Where("EMAIL = ?").Update: %v`, err)
	}
	for k, d := range direct { // the row changed where it is, and nothing else anywhere
		var changed []caseColumns
		must(t, d.Where("name = ?", "m").Find(&changed).Error)
		var own int64
		must(t, d.Model(&caseColumns{}).Where("id = ?", rows[5].ID).Count(&own).Error)
		if want := int(own); len(changed) != want || want == 1 && changed[0].ID != rows[5].ID {
			t.Errorf(`Where("EMAIL = ?").Update: database %d has %+v changed, holds the row %d times`, k, changed, own)
		}
	}
}
