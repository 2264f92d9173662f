package shardid

import "testing"

type revTag struct { // unsharded, with the back-reference of a sharded owner's many2many
	ID     int64
	Name   string
	Owners []revOwner `gorm:"many2many:rev_owner_tags"`
}

type revOwner struct {
	ID   int64 `shardid:""`
	Name string
	Tags []revTag `gorm:"many2many:rev_owner_tags"`
}

// ids.AutoMigrate of a sharded owner and its unsharded many2many target that
// names the relation back succeeds: GORM's migrator of the unsharded model
// would make the join table on the plugin's database (its SQL references
// rev_owners), which the raw SQL check refuses as "raw SQL on a sharded table".
func TestAutoMigrateOfAManyToManyBackReference(t *testing.T) {
	db, p := openIn(t, t.TempDir())
	if err := p.AutoMigrate(db, &revOwner{}, &revTag{}); err != nil {
		t.Errorf("ids.AutoMigrate(owner, tag): %v", err)
	}
}
