// Package integration runs shardid against real databases: SQLite
// always, MariaDB/MySQL when SHARDID_TEST_MYSQL_DSN is set and PostgreSQL when
// SHARDID_TEST_POSTGRES_DSN is set. Without a variable those tests skip with a
// message naming it; under CI (CI set) a missing variable fails them.
package integration
