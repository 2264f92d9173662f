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
//
// # Why most files end in .gen.go
//
// GORM's logger names the file and line of the first caller outside GORM
// and outside files named *.gen.go (gorm.io/gorm/utils.FileWithLineNum, so
// that code go-gorm/gen writes between the application and GORM is passed
// over). Every function of this package that runs while GORM logs, whether a
// statement or a warning, is in such a file, and so is the root package's
// Plugin.AutoMigrate: a migration's log lines then name the application's
// call, as those of db.AutoMigrate do, with GORM's loggers (and any that
// find the place as they do) and no wrapper. GORM looks 13 frames up: the
// few statements its migrator nests deepest (such as PostgreSQL's indexes
// inside CreateTable inside AutoMigrate) are logged with no place. The files
// are written by hand; plugin.go, errors.go and the tests hold nothing that
// runs then.
package shardmigrator
