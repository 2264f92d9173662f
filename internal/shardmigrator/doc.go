// Package shardmigrator is the shard-aware migrator: every method of
// gorm.Migrator, run on every physical database for the table of a sharded
// model and on the plugin's own database for any other, as the shardid
// plugin says through the narrow [Plugin] interface.
//
// The plugin hands it out; it never becomes db.Migrator(), which stays
// GORM's own (GORM type-asserts that one, for BuildIndexOptions), and every
// step runs through GORM's own migrator of each database:
//
//	m := shardmigrator.New(plugin, db) // plugin: the shardid plugin as a [Plugin]
//	err := m.AutoMigrate(&User{}, &Country{})
//	// users on every physical database, with an index on its colocate or
//	// hash column; countries on db only.
//	m.HasTable(&User{}) // true only if every physical database has it
//
// A question the databases answer differently fails with
// [ErrShardsDisagree], or, for a yes/no one, answers false and logs it.
package shardmigrator
