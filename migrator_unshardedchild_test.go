package shardid

import "testing"

type childOwner struct {
	ID    int64 `shardid:""`
	Name  string
	Notes []childNote `gorm:"foreignKey:OwnerID"`
	Card  *childCard  `gorm:"foreignKey:OwnerID"`
}

type childNote struct { // unsharded, on the plugin's database
	ID      uint
	OwnerID int64
	Text    string
}

type childCard struct { // unsharded, on the plugin's database
	ID      uint
	OwnerID int64
}

// TestAShardedModelsUnshardedChildrenAreMigratedOnThePluginsDatabase: a
// sharded model with has-many and has-one relations to unsharded models,
// migrated with them in one call (in either order, its schema parsed first as
// an application's statements parse it), gets its table on every physical
// database and theirs on the plugin's, whose migration does not follow the
// relation GORM records on a child back to its sharded owner (which would
// make the sharded table there, refused). Its children are then written and
// counted as their owner's association.
func TestAShardedModelsUnshardedChildrenAreMigratedOnThePluginsDatabase(t *testing.T) {
	for _, order := range [][]any{{&childOwner{}, &childNote{}, &childCard{}}, {&childNote{}, &childCard{}, &childOwner{}}} {
		db, p, direct, _ := routedOverN(t, 2, Config{})
		must(t, db.Model(&childOwner{}).Statement.Parse(&childOwner{})) // as a statement of the application parses it
		must(t, p.AutoMigrate(db, order...))
		if db.Migrator().HasTable("child_owners") || !db.Migrator().HasTable("child_notes") || !db.Migrator().HasTable("child_cards") {
			t.Fatalf("the plugin's database: child_owners %v, child_notes %v, child_cards %v; want only the children",
				db.Migrator().HasTable("child_owners"), db.Migrator().HasTable("child_notes"), db.Migrator().HasTable("child_cards"))
		}
		for i, d := range direct {
			if !d.Migrator().HasTable("child_owners") || d.Migrator().HasTable("child_notes") {
				t.Errorf("s%d: child_owners %v, child_notes %v; want only the owners", i, d.Migrator().HasTable("child_owners"), d.Migrator().HasTable("child_notes"))
			}
		}
		owner := childOwner{Name: "ann"}
		must(t, db.Create(&owner).Error)
		must(t, db.Create(&[]childNote{{OwnerID: owner.ID, Text: "a"}, {OwnerID: owner.ID, Text: "b"}}).Error)
		if n := db.Model(&owner).Association("Notes").Count(); n != 2 {
			t.Errorf("the owner's notes: %d, want 2", n)
		}
	}
}

type childFolder struct { // unsharded, on the plugin's database
	ID    uint
	Files []childFile `gorm:"foreignKey:FolderID"`
}

type childFile struct { // unsharded: a child of an unsharded folder and of a sharded owner
	ID       uint
	FolderID uint
	OwnerID  int64
}

type childFileOwner struct {
	ID    int64       `shardid:""`
	Files []childFile `gorm:"foreignKey:OwnerID"`
}

// TestAnUnshardedChildOfAShardedAndAnUnshardedOwnerGetsItsUnshardedOwnersTable:
// migrated beside its sharded owner, a child that an unsharded model has
// too gets that owner's table on the plugin's database, as GORM's migrator
// makes it for the child (the owner's schema parsed before), and not its
// sharded owner's.
func TestAnUnshardedChildOfAShardedAndAnUnshardedOwnerGetsItsUnshardedOwnersTable(t *testing.T) {
	db, p, direct, _ := routedOverN(t, 2, Config{})
	for _, m := range []any{&childFolder{}, &childFileOwner{}} {
		must(t, db.Model(m).Statement.Parse(m))
	}
	must(t, p.AutoMigrate(db, &childFileOwner{}, &childFile{}))
	for table, want := range map[string]bool{"child_files": true, "child_folders": true, "child_file_owners": false} {
		if got := db.Migrator().HasTable(table); got != want {
			t.Errorf("%s on the plugin's database: %v, want %v", table, got, want)
		}
	}
	for i, d := range direct {
		if !d.Migrator().HasTable("child_file_owners") || d.Migrator().HasTable("child_folders") {
			t.Errorf("s%d: child_file_owners %v, child_folders %v; want only the sharded owners", i, d.Migrator().HasTable("child_file_owners"), d.Migrator().HasTable("child_folders"))
		}
	}
}
