package integration

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
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
		Tags      []dtTag        `gorm:"many2many:dt_user_tags"`   // both sharded: join rows beside the user
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
	// dtTag is a user's own tag, beside its owner; users link to tags
	// many-to-many, which can only hold on one shard.
	dtTag struct {
		ID      int64  `shardid:"colocate:OwnerID"`
		OwnerID int64  `gorm:"index"`
		Name    string `gorm:"size:40"`
	}
	// dtLabel is unsharded: plain GORM auto-increment on the plugin's database.
	dtLabel struct {
		ID   int64
		Name string `gorm:"size:40"`
	}
	// dtNote lives beside its user (no relation from dtUser), unique per user
	// and slug (a unique key holding the colocate column: equal keys share a
	// database). Its hooks narrow its updates and deletes (see below).
	dtNote struct {
		ID     int64  `shardid:"colocate:UserID"`
		UserID int64  `gorm:"uniqueIndex:idx_dt_notes_user_slug"`
		Slug   string `gorm:"size:20;uniqueIndex:idx_dt_notes_user_slug"`
		Likes  int
		Locked bool
		Edits  int
	}
	// dtUserName is a projection of dt_users: no shardid tag, not among the
	// models the plugin migrates, its TableName a sharded table.
	dtUserName struct {
		ID   int64
		Name string
	}
)

func (dtUserName) TableName() string { return "dt_users" }

// BeforeUpdate leaves locked notes alone, by a condition added to the
// statement, and counts the edit in a column it sets: both must reach every
// part of an update over several databases. A note given with its likes
// (as read) is updated only if they did not change since, as an optimistic
// lock checks a version: GORM calls the hook of each row of a slice on the
// one statement, so every row's condition holds for every row.
func (n *dtNote) BeforeUpdate(tx *gorm.DB) error {
	dtHooks.count("dtNote.BeforeUpdate")
	tx.Statement.AddClause(clause.Where{Exprs: []clause.Expression{clause.Eq{Column: "locked", Value: false}}})
	if n.Likes > 0 {
		tx.Statement.AddClause(clause.Where{Exprs: []clause.Expression{clause.Eq{Column: "likes", Value: n.Likes}}})
	}
	tx.Statement.SetColumn("Edits", 1)
	return nil
}

// BeforeDelete keeps the notes with 99 likes, by a condition added to the
// statement, and checks the likes of a note given with them, as BeforeUpdate.
func (n *dtNote) BeforeDelete(tx *gorm.DB) error {
	dtHooks.count("dtNote.BeforeDelete")
	tx.Statement.AddClause(clause.Where{Exprs: []clause.Expression{clause.Neq{Column: "likes", Value: 99}}})
	if n.Likes > 0 {
		tx.Statement.AddClause(clause.Where{Exprs: []clause.Expression{clause.Eq{Column: "likes", Value: n.Likes}}})
	}
	return nil
}

func (*dtNote) AfterUpdate(*gorm.DB) error  { dtHooks.count("dtNote.AfterUpdate"); return nil }
func (*dtNote) AfterDelete(*gorm.DB) error  { dtHooks.count("dtNote.AfterDelete"); return nil }
func (*dtNote) BeforeCreate(*gorm.DB) error { dtHooks.count("dtNote.BeforeCreate"); return nil }

// BeforeCreate folds the email, as applications normalise a hash key.
func (a *dtAccount) BeforeCreate(*gorm.DB) error {
	dtHooks.count("dtAccount.BeforeCreate")
	a.Email = strings.ToLower(a.Email)
	return nil
}

// dtHooks counts the model hooks a statement ran: each must run once per row,
// as without the plugin, however many databases the statement spans.
var dtHooks = &hookCounter{n: map[string]int{}}

type hookCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *hookCounter) count(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n[name]++
}

// take returns the counts since the last take, as text, and resets them.
func (h *hookCounter) take() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	names := make([]string, 0, len(h.n))
	for name, n := range h.n {
		names = append(names, fmt.Sprintf("%s=%d", name, n))
	}
	slices.Sort(names)
	clear(h.n)
	return strings.Join(names, " ")
}

func (*dtUser) BeforeCreate(*gorm.DB) error { dtHooks.count("dtUser.BeforeCreate"); return nil }
func (*dtUser) AfterCreate(*gorm.DB) error  { dtHooks.count("dtUser.AfterCreate"); return nil }
func (*dtUser) BeforeUpdate(*gorm.DB) error { dtHooks.count("dtUser.BeforeUpdate"); return nil }
func (*dtUser) AfterUpdate(*gorm.DB) error  { dtHooks.count("dtUser.AfterUpdate"); return nil }
func (*dtUser) BeforeDelete(*gorm.DB) error { dtHooks.count("dtUser.BeforeDelete"); return nil }
func (*dtUser) AfterDelete(*gorm.DB) error  { dtHooks.count("dtUser.AfterDelete"); return nil }
func (*dtUser) AfterFind(*gorm.DB) error    { dtHooks.count("dtUser.AfterFind"); return nil }
func (*dtPhoto) AfterFind(*gorm.DB) error   { dtHooks.count("dtPhoto.AfterFind"); return nil }
func (*dtPhoto) AfterCreate(*gorm.DB) error { dtHooks.count("dtPhoto.AfterCreate"); return nil }

// BeforeDelete keeps pinned photos (99 likes), by a condition added to the
// statement: the soft delete's UPDATE must carry it to every part of a
// delete over several databases.
func (*dtPhoto) BeforeDelete(tx *gorm.DB) error {
	dtHooks.count("dtPhoto.BeforeDelete")
	tx.Statement.AddClause(clause.Where{Exprs: []clause.Expression{clause.Neq{Column: "likes", Value: 99}}})
	return nil
}

// AfterCreate of a profile whose Bio is "audit" writes an unsharded row from
// inside the shard's statement, as audit hooks do: that statement must go to
// the plugin's database (or be refused), never to the shard.
func (p *dtProfile) AfterCreate(tx *gorm.DB) error {
	if p.Bio != "audit" {
		return nil
	}
	return tx.Create(&dtLabel{ID: p.ID % 1000000, Name: "audit"}).Error
}

// dtModels are the models in migration order.
var dtModels = []any{&dtUser{}, &dtPhoto{}, &dtProfile{}, &dtAccount{}, &dtDoc{}, &dtLabel{}, &dtTag{}, &dtNote{}}

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
	{name: "dt_tags", shardColumn: "id", colocate: "owner_id"},

	{name: "dt_user_tags", shardColumn: "dt_user_id"}, // beside the owner; the tag lives on its own shard
	{name: "dt_notes", shardColumn: "id", colocate: "user_id"},
}

// dtModelTypes are the struct types whose ID fields the test carries from the
// plugin's run to the reference run.
var dtModelTypes = map[reflect.Type]bool{
	reflect.TypeFor[dtUser](): true, reflect.TypeFor[dtPhoto](): true, reflect.TypeFor[dtProfile](): true,
	reflect.TypeFor[dtAccount](): true, reflect.TypeFor[dtDoc](): true, reflect.TypeFor[dtLabel](): true,
	reflect.TypeFor[dtTag](): true, reflect.TypeFor[dtNote](): true,
}
