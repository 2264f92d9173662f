package engine

import (
	"errors"
	"testing"

	"gorm.io/gorm"
)

// TestAShardTransactionBegunWhileTrustedIsRefusedOnceTheMapIsDistrusted: statements of a transaction
// begun on a shard while the map was trusted, sent after its trust ended.
func TestAShardTransactionBegunWhileTrustedIsRefusedOnceTheMapIsDistrusted(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(tx *gorm.DB, id int64) error
	}{
		{"exec", func(tx *gorm.DB, id int64) error {
			return tx.Exec("UPDATE trust_users SET name = 'late' WHERE id = ?", id).Error
		}},
		{"create", func(tx *gorm.DB, id int64) error { return tx.Create(&trustUser{Name: "late"}).Error }},
		{"update", func(tx *gorm.DB, id int64) error { return tx.Model(&trustUser{ID: id}).Update("name", "late").Error }},
		{"raw scan", func(tx *gorm.DB, id int64) error {
			var u []trustUser
			return tx.Raw("SELECT * FROM trust_users").Scan(&u).Error
		}},
		{"find", func(tx *gorm.DB, id int64) error {
			var u []trustUser
			return tx.Find(&u).Error
		}},
		{"delete", func(tx *gorm.DB, id int64) error { return tx.Delete(&trustUser{ID: id}).Error }},
		{"savepoint", func(tx *gorm.DB, id int64) error {
			return tx.Transaction(func(tx2 *gorm.DB) error { return tx2.Exec("UPDATE trust_users SET name = 'sp' WHERE id = ?", id).Error })
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, e, id := trustSetup(t)
			tx := db.Clauses(hinted{ByID(id)}).Begin()
			must(t, tx.Error)
			defer tx.Rollback()
			var seed trustUser
			must(t, tx.First(&seed, id).Error)
			distrustMap(t, e)
			if err := c.run(tx, id); !errors.Is(err, ErrShardUnavailable) {
				t.Errorf("%s in a shard's transaction after the map's trust ended: %v; want ErrShardUnavailable", c.name, err)
			}
		})
	}
}
