package integration

import (
	"errors"
	"testing"

	"gorm.io/gorm"
)

// TestAnEmptyHashKeyInAConditionFindsNoRowAsOnOneDatabase: no row has an
// empty exact hash key (its Create is refused), so a condition on one (a
// login form sent empty) finds nothing, as on one database, instead of
// failing with ErrNoShard; in an IN list it is passed over. A delete on it
// deletes nothing.
func TestAnEmptyHashKeyInAConditionFindsNoRowAsOnOneDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		x := tenant{Code: "x"}
		must(t, r.db.Create(&x).Error)
		var got tenant
		if err := r.db.Where("code = ?", "").First(&got).Error; !errors.Is(err, gorm.ErrRecordNotFound) {
			t.Errorf("First by an empty key: %v, want record not found", err)
		}
		var list []tenant
		if err := r.db.Where("code IN ?", []string{"", "x"}).Find(&list).Error; err != nil || len(list) != 1 || list[0].ID != x.ID {
			t.Errorf("Find by an IN list with an empty key: %+v, %v; want the row of x", list, err)
		}
		var n int64
		if err := r.db.Model(&tenant{}).Where("code = ?", []byte{}).Count(&n).Error; err != nil || n != 0 {
			t.Errorf("Count by an empty key: %d, %v", n, err)
		}
		if res := r.db.Where("code = ?", "").Delete(&tenant{}); res.Error != nil || res.RowsAffected != 0 {
			t.Errorf("Delete by an empty key: %d rows, %v", res.RowsAffected, res.Error)
		}
		must(t, r.db.First(&got, x.ID).Error)
		if got.Code != "x" {
			t.Fatalf("the row of x now has key %q", got.Code)
		}
	})
}

// TestAnEmptyLooseHashKeyFindsTheBlankKeysItsColumnFinds: a loose column
// with PAD SPACE (MariaDB's _ci) finds a key of blanks equal to the empty
// one; such keys fold to nothing and were placed so, where a condition on
// the empty key looks for them.
func TestAnEmptyLooseHashKeyFindsTheBlankKeysItsColumnFinds(t *testing.T) {
	for _, b := range backends {
		if b.name != "mariadb" {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			r := newRouting(t, b)
			for _, db := range r.direct {
				must(t, db.Exec("DROP TABLE IF EXISTS hc_foldeds").Error)
				must(t, db.Exec("CREATE TABLE hc_foldeds (id bigint PRIMARY KEY, email varchar(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci)").Error)
			}
			must(t, r.plugin.AutoMigrate(r.db, &hcFolded{}))
			blank := hcFolded{Email: "   "}
			must(t, r.db.Create(&blank).Error)
			var got hcFolded
			if err := r.db.Where("email = ?", "").First(&got).Error; err != nil || got.ID != blank.ID {
				t.Errorf("First by the empty key: %+v, %v; want the blank key's row %d", got, err, blank.ID)
			}
		})
	}
}
