// Package twophase commits one write over several databases atomically with
// the servers' own two-phase commit: XA on MySQL and MariaDB, PREPARE
// TRANSACTION on PostgreSQL. It works on database/sql and knows nothing of
// GORM.
//
// A coordinator opens a [Branch] on each database, runs the write's
// statements on them, prepares every branch, then records its decision in
// the [Decisions] table of one database (the plugin's own) before it commits
// any branch: that row is the truth. [Recover] later finishes what a
// coordinator that died left prepared: decided branches are committed, and
// undecided ones whose coordinator is gone are rolled back, after an abort
// is recorded in their stead (a coordinator that comes back then finds the
// abort, never a half of its transaction).
//
//	b, err := twophase.Begin(ctx, db, "mysql", gid)  // XA START / BEGIN
//	_, err = b.ExecContext(ctx, "UPDATE …")
//	err = b.Prepare(ctx)                                // XA PREPARE / PREPARE TRANSACTION
//	committed, err := decisions.Decide(ctx, gid)        // the commit point
//	err = b.Commit(ctx)                                 // XA COMMIT / COMMIT PREPARED
package twophase
