package integration

import (
	"testing"
)

type ucOwner struct {
	ID    int64    `shardid:""`
	Notes []ucNote `gorm:"foreignKey:OwnerID"`
}

type ucNote struct { // unsharded: on the plugin's database
	ID      uint
	OwnerID int64
	Text    string
}

// TestAShardedModelsUnshardedChildrenMigrateOnThePluginsDatabase: a sharded
// model's has-many of an unsharded model, migrated in one call with it
// (AutoMigrate) or made by CreateTable, its schema parsed first as an
// application's statements parse it, leaves the child's table on the
// plugin's database, with no foreign key to the sharded table, which is not
// there, and the owner's on every physical database.
func TestAShardedModelsUnshardedChildrenMigrateOnThePluginsDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		m := r.plugin.Migrator(r.db)
		must(t, m.DropTable(&ucOwner{}, &ucNote{}))
		must(t, r.db.Model(&ucOwner{}).Statement.Parse(&ucOwner{}))
		for name, migrate := range map[string]func() error{
			"AutoMigrate": func() error { return r.plugin.AutoMigrate(r.db, &ucOwner{}, &ucNote{}) },
			"CreateTable": func() error { return m.CreateTable(&ucOwner{}, &ucNote{}) },
		} {
			if err := migrate(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !r.db.Migrator().HasTable("uc_notes") || r.db.Migrator().HasTable("uc_owners") {
				t.Fatalf("%s: the plugin's database: uc_notes %v, uc_owners %v; want the notes only", name, r.db.Migrator().HasTable("uc_notes"), r.db.Migrator().HasTable("uc_owners"))
			}
			for i, d := range r.direct {
				if !d.Migrator().HasTable("uc_owners") || d.Migrator().HasTable("uc_notes") {
					t.Fatalf("%s: physical %d: uc_owners %v, uc_notes %v; want the owners only", name, i, d.Migrator().HasTable("uc_owners"), d.Migrator().HasTable("uc_notes"))
				}
			}
			owner := ucOwner{}
			must(t, r.db.Create(&owner).Error)
			must(t, r.db.Create(&ucNote{OwnerID: owner.ID, Text: "a"}).Error)
			if n := r.db.Model(&owner).Association("Notes").Count(); n != 1 {
				t.Errorf("%s: the owner's notes: %d, want 1", name, n)
			}
			must(t, m.DropTable(&ucOwner{}, &ucNote{}))
		}
	})
}
