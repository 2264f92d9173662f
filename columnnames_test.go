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
