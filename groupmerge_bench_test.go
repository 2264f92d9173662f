package shardid

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// benchLedger is grouped by user: Group("user_id") with a count and a sum.
type benchLedger struct {
	ID     int64 `shardid:"strategy:snowflake"`
	UserID int64
	Amount int64
}

// groupsConnector is a fake database whose connections answer any query
// with one row per group (user_id, n, total), every database holding every
// group: the merge reads 4 × groups rows and keeps groups of them.
type groupsConnector struct{ groups, part int }

func (c groupsConnector) Connect(context.Context) (driver.Conn, error) { return groupsConn(c), nil }
func (c groupsConnector) Driver() driver.Driver                        { return groupsDriver(c) }

type groupsDriver groupsConnector

func (d groupsDriver) Open(string) (driver.Conn, error) { return groupsConn(d), nil }

type groupsConn groupsConnector

func (groupsConn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (groupsConn) Close() error                        { return nil }
func (groupsConn) Begin() (driver.Tx, error)           { return fakeTx{}, nil }
func (groupsConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	return driver.RowsAffected(0), nil // the plugin's token table, made when the database opens
}
func (c groupsConn) QueryContext(_ context.Context, query string, _ []driver.NamedValue) (driver.Rows, error) {
	if rows, ok := setupAnswer(query, func() string { return fmt.Sprintf("groups-%d", c.part) }); ok {
		return rows, nil
	}
	return &groupRows{left: c.groups}, nil
}

type groupRows struct{ next, left int }

func (*groupRows) Columns() []string { return []string{"user_id", "n", "total"} }
func (*groupRows) Close() error      { return nil }
func (r *groupRows) Next(dest []driver.Value) error {
	if r.left == 0 {
		return io.EOF
	}
	dest[0], dest[1], dest[2] = int64(r.next), int64(25), int64(r.next*3)
	r.next++
	r.left--
	return nil
}

// BenchmarkGroupMerge: Group("user_id") with a count and a sum over four
// databases that each return every group. The client's work per fetched
// group stays the same when the groups quadruple: linear in the groups
// fetched.
func BenchmarkGroupMerge(b *testing.B) {
	for _, groups := range []int{1000, 4000} {
		b.Run(fmt.Sprintf("groups-%d", groups), func(b *testing.B) {
			db := openMain(b)
			var shards []Shard
			for i := range 4 {
				part, err := gorm.Open(sqlite.Dialector{Conn: sql.OpenDB(groupsConnector{groups: groups, part: i})}, &gorm.Config{Logger: logger.Discard, DisableAutomaticPing: true})
				if err != nil {
					b.Fatal(err)
				}
				shards = append(shards, Shard{Name: fmt.Sprintf("groups-%d", i), DB: part, Logical: []Range{{From: i * 2048, To: i*2048 + 2047}}})
			}
			if err := db.Use(New(Config{Shards: shards, Snowflake: SnowflakeConfig{FixedWorker: true}, MapRefresh: -1, Log: quiet})); err != nil {
				b.Fatal(err)
			}
			all := db.Clauses(AllShards()).Session(&gorm.Session{})
			type group struct{ UserID, N, Total int64 }
			b.ReportAllocs()
			for b.Loop() {
				var rows []group
				err := all.Model(&benchLedger{}).Select("user_id, count(*) AS n, sum(amount) AS total").Group("user_id").Find(&rows).Error
				if err != nil {
					b.Fatal(err)
				}
				if len(rows) != groups || rows[1].N != 100 || rows[1].Total != 12 {
					b.Fatalf("%d groups, the second %+v", len(rows), rows[1])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(4*groups), "ns/fetched-group")
		})
	}
}
