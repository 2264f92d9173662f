package integration

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// TestConfigErrorsHideTheDSNsPassword: db.Use refuses two shards given one
// DSN, naming it without its password, which an application logs with its
// start-up error.
func TestConfigErrorsHideTheDSNsPassword(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dsn, open := "root:s3cret-pw@tcp(127.0.0.1:3306)/shardid_unreached", mysql.Open
		if b.name == "postgres" {
			dsn, open = "postgres://postgres:s3cret-pw@127.0.0.1:5432/shardid_unreached", postgres.Open
		}
		main, err := gorm.Open(b.dialector(t, t.TempDir()), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		half := shardid.Layout{}.ShardCount() / 2
		p := shardid.New(shardid.Config{Shards: []shardid.Shard{
			{Name: "a", Dialector: open(dsn), Logical: []shardid.Range{{From: 0, To: half - 1}}},
			{Name: "b", Dialector: open(dsn), Logical: []shardid.Range{{From: half, To: 2*half - 1}}},
		}})
		err = main.Use(p)
		if !errors.Is(err, shardid.ErrInvalidConfig) || strings.Contains(err.Error(), "s3cret-pw") || !strings.Contains(err.Error(), "xxxxx") {
			t.Errorf("two shards of one DSN: %v; want ErrInvalidConfig naming the DSN, its password hidden", err)
		}
	})
}

// TestATicketServersOpenErrorHidesItsPassword: a ticket server's Dialector
// whose DSN pgx refuses (it prints a ?password= parameter whole) fails
// db.Use without printing the password, as the same DSN given as a physical
// shard's does. Offline: pgx refuses before dialing.
func TestATicketServersOpenErrorHidesItsPassword(t *testing.T) {
	const refused = "postgres://postgres@127.0.0.1:5432/app?password=s3cretpw&sslmode=bogus"
	dir := t.TempDir()
	count := shardid.Layout{}.ShardCount()
	shards := func(last gorm.Dialector) []shardid.Shard {
		list := make([]shardid.Shard, 2)
		for i := range list {
			d := sqlite.Open(sqliteDSN(filepath.Join(dir, fmt.Sprintf("p%d.db", i))))
			if i == 1 && last != nil {
				d = last
			}
			list[i] = shardid.Shard{Name: fmt.Sprintf("p%d", i), Dialector: d,
				Logical: []shardid.Range{{From: i * count / 2, To: (i+1)*count/2 - 1}}}
		}
		return list
	}
	use := func(cfg shardid.Config) error {
		main, err := gorm.Open(sqlite.Open(sqliteDSN(filepath.Join(dir, "main.db"))), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		p := shardid.New(cfg)
		err = main.Use(p)
		_ = p.Close()
		return err
	}
	// The control: as a physical shard, the password is hidden.
	if err := use(shardid.Config{Shards: shards(postgres.Open(refused))}); err == nil || strings.Contains(err.Error(), "s3cretpw") {
		t.Fatalf("as a physical shard: %v", err)
	}
	err := use(shardid.Config{Shards: shards(nil),
		Ticket: shardid.TicketConfig{Servers: []shardid.TicketServer{{Name: "tickets", Dialector: postgres.Open(refused)}}}})
	if err == nil {
		t.Fatal("a ticket server pgx refuses: no error")
	}
	if strings.Contains(err.Error(), "s3cretpw") {
		t.Errorf("a ticket server's open error prints the password:\n%v", err)
	}
}
