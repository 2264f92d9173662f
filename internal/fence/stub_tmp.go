package fence

import (
	"context"
	"database/sql"
)

type KeyKind int

const (
	KeyInt64 KeyKind = iota
	KeyUUIDText
)

type Table struct {
	Name, Key string
	Kind      KeyKind
}
type Fence struct {
	Dialect                 string
	ShardBits, SequenceBits int
}
type Range struct{ From, To int }
type Change struct {
	Seq   int64
	Table string
	Key   any
}

func (f Fence) ShardSQL(t Table, qualifier string) (string, error)                { return "", nil }
func (f Fence) Prepare(ctx context.Context, db *sql.DB) error                      { return nil }
func (f Fence) Install(ctx context.Context, db *sql.DB, t Table) error             { return nil }
func (f Fence) Open(ctx context.Context, db *sql.DB, r Range, target string) error { return nil }
func (f Fence) Freeze(ctx context.Context, db *sql.DB, r Range) error              { return nil }
func (f Fence) Thaw(ctx context.Context, db *sql.DB, r Range) error                { return nil }
func (f Fence) Close(ctx context.Context, db *sql.DB, r Range) error               { return nil }
func (f Fence) Uninstall(ctx context.Context, db *sql.DB, t Table) error           { return nil }
func (f Fence) Changes(ctx context.Context, db *sql.DB, limit int) ([]Change, error) {
	return nil, nil
}
func (f Fence) Forget(ctx context.Context, db *sql.DB, seqs []int64) error { return nil }
func (f Fence) Backlog(ctx context.Context, db *sql.DB) (int64, error)    { return 0, nil }
func (f Fence) Bypass(ctx context.Context, conn *sql.Conn) error           { return nil }
func MovedShard(err error) (int, string, bool)                             { return 0, "", false }
