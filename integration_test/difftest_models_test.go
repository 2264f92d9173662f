package integration

import (
	"reflect"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Models of the differential test (difftest_run_test.go): every kind of
// model the plugin knows, with every kind of relation GORM has.
type (
	// dtUser is sharded by its own ID, soft-deleted like gorm.Model.
	dtUser struct {
		ID        int64  `shardid:""`
		Name      string `gorm:"size:40"`
		Age       int
		CreatedAt time.Time
		UpdatedAt time.Time
		DeletedAt gorm.DeletedAt `gorm:"index"`
		Photos    []dtPhoto      `gorm:"foreignKey:UserID"`        // has-many, colocated
		Profile   *dtProfile     `gorm:"foreignKey:UserID"`        // has-one, colocated
		Labels    []dtLabel      `gorm:"many2many:dt_user_labels"` // sharded owner, unsharded target
	}
	// dtPhoto lives beside its user.
	dtPhoto struct {
		ID        int64  `shardid:"colocate:UserID"`
		UserID    int64  `gorm:"index"`
		URL       string `gorm:"size:60"`
		Likes     int
		DeletedAt gorm.DeletedAt `gorm:"index"`
	}
	// dtProfile is the has-one of a user, beside it.
	dtProfile struct {
		ID     int64  `shardid:"colocate:UserID"`
		UserID int64  `gorm:"index"`
		Bio    string `gorm:"size:60"`
	}
	// dtAccount is placed by the hash of its email.
	dtAccount struct {
		ID      int64  `shardid:"hash:Email"`
		Email   string `gorm:"size:60;uniqueIndex"`
		Balance int
	}
	// dtDoc has a UUID key.
	dtDoc struct {
		ID    string `gorm:"primaryKey;size:36" shardid:"strategy:uuidv7"`
		Title string `gorm:"size:40"`
		Pages int
	}
	// dtLabel is unsharded: plain GORM auto-increment on the plugin's database.
	dtLabel struct {
		ID   int64
		Name string `gorm:"size:40"`
	}
)

// BeforeCreate folds the email, as applications normalise a hash key.
func (a *dtAccount) BeforeCreate(*gorm.DB) error {
	a.Email = strings.ToLower(a.Email)
	return nil
}

// dtModels are the models in migration order.
var dtModels = []any{&dtUser{}, &dtPhoto{}, &dtProfile{}, &dtAccount{}, &dtDoc{}, &dtLabel{}}

// dtTable is one table the test compares, and where its rows belong.
type dtTable struct {
	name string
	// shardColumn names the column whose int64 ID decides the row's physical
	// database; empty for a table on the plugin's database.
	shardColumn string
	// keyed by a UUID: placement is not checked, only that no row is twice.
	uuid bool
	// colocate names the column whose ID's shard the row's ID must carry;
	// hash the column whose HashKey must give it.
	colocate, hash string
}

var dtTables = []dtTable{
	{name: "dt_users", shardColumn: "id"},
	{name: "dt_photos", shardColumn: "id", colocate: "user_id"},
	{name: "dt_profiles", shardColumn: "id", colocate: "user_id"},
	{name: "dt_accounts", shardColumn: "id", hash: "email"},
	{name: "dt_docs", shardColumn: "id", uuid: true},
	{name: "dt_labels"},
	// Join rows of a sharded owner belong on the owner's shard (issue 8).
	{name: "dt_user_labels", shardColumn: "dt_user_id"},
}

// dtModelTypes are the struct types whose ID fields the test carries from the
// plugin's run to the reference run.
var dtModelTypes = map[reflect.Type]bool{
	reflect.TypeFor[dtUser](): true, reflect.TypeFor[dtPhoto](): true, reflect.TypeFor[dtProfile](): true,
	reflect.TypeFor[dtAccount](): true, reflect.TypeFor[dtDoc](): true, reflect.TypeFor[dtLabel](): true,
}
