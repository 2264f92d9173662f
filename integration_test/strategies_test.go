package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/strategies"
)

// Models of the other int64 strategies.
type (
	invoice struct {
		ID     int64 `shardid:"strategy:segment"`
		Amount int
	}
	reading struct {
		ID    int64 `shardid:"strategy:snowflake"`
		Value int
	}
	order struct {
		ID    int64 `shardid:"strategy:ticket"`
		Total int
	}
)

// Each strategy's rows land on their shard's database, read back by ID, and
// are counted in the plugin's Stats; snowflake holds a lease in every
// physical database it made IDs for.
func TestStrategiesThroughThePlugin(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &invoice{}, &reading{})
		invoices := make([]invoice, 60)
		readings := make([]reading, 60)
		must(t, r.db.Create(&invoices).Error)
		must(t, r.db.Create(&readings).Error)
		for range 3 {
			must(t, r.db.Create(&invoice{Amount: 1}).Error)
		}
		must(t, r.db.Create(&[]author{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}, {Name: "e"}}).Error)
		for i := range invoices {
			r.mustBeOnItsShard(t, &invoice{}, invoices[i].ID)
			r.mustBeOnItsShard(t, &reading{}, readings[i].ID)
		}
		var got invoice
		must(t, r.db.First(&got, invoices[17].ID).Error)
		stats := r.plugin.Stats()
		if n := stats[strategies.NameSegment].Issued; n != 63 {
			t.Fatalf("segment issued %d IDs, want 63", n)
		}
		if n := stats[strategies.NameSnowflake].Issued; n != 60 {
			t.Fatalf("snowflake issued %d IDs, want 60", n)
		}
		if n := stats[strategies.NameInstagram].Issued; n != 5 {
			t.Fatalf("instagram issued %d IDs, want 5", n)
		}
		leases := stats[strategies.NameSnowflake].Leases
		if len(leases) != physicalShards {
			t.Fatalf("snowflake holds leases %+v, want one on each of the %d physical databases", leases, physicalShards)
		}
		for _, l := range leases {
			if !l.Held || l.Worker < 0 {
				t.Fatalf("lease %+v is not held", l)
			}
		}
		if seqs := stats[strategies.NameSegment].Sequences; len(seqs) != physicalShards {
			t.Fatalf("segment sequences %+v, want one per physical database", seqs)
		}
	})
}

// The ticket strategy through the plugin: AutoMigrate prepares the ticket
// servers, rows land on their shard's database, and Stats count each server.
func TestTicketThroughThePlugin(t *testing.T) {
	for _, b := range backends {
		if b.name == "sqlite" {
			continue // ticket servers are MySQL/MariaDB or PostgreSQL
		}
		t.Run(b.name, func(t *testing.T) {
			dir := t.TempDir()
			main, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
			must(t, err)
			var servers []shardid.TicketServer
			for k := range 3 { // physical database k is ticket server k+1, as in the uniqueness test
				servers = append(servers, shardid.TicketServer{Name: fmt.Sprintf("tickets-%d", k), Dialector: b.physical(t, dir, k), Offset: k + 1})
			}
			p := shardid.New(shardid.Config{Shards: shards(t, b, dir), Ticket: shardid.TicketConfig{Servers: servers}})
			firstStart(t, main)
			must(t, main.Use(p))
			t.Cleanup(func() { _ = p.Close() })
			r := &routing{b: b, db: main, direct: direct(t, b, dir), plugin: p}
			fresh(t, main, &order{})
			orders := make([]order, 90)
			must(t, main.Create(&orders).Error)
			seen := map[int64]bool{}
			for _, o := range orders {
				if seen[o.ID] {
					t.Fatalf("ticket ID %d twice", o.ID)
				}
				seen[o.ID] = true
				r.mustBeOnItsShard(t, &order{}, o.ID)
			}
			var got order
			must(t, main.First(&got, orders[40].ID).Error)
			stats := p.Stats()[strategies.NameTicket]
			served := 0
			for _, s := range stats.Servers {
				if s.Issued > 0 {
					served++
				}
			}
			if stats.Issued != 90 || served < 2 {
				t.Fatalf("ticket stats %+v: want 90 issued, spread over the servers", stats)
			}

			// A fourth server joins the ring and takes its share of new rows.
			must(t, p.AddTicketServer(context.Background(), shardid.TicketServer{Name: "tickets-3", Dialector: b.physical(t, dir, 3), Offset: 4}))
			more := make([]order, 90)
			must(t, main.Create(&more).Error)
			for _, o := range more {
				if seen[o.ID] {
					t.Fatalf("ticket ID %d twice after a server was added", o.ID)
				}
				seen[o.ID] = true
			}
			if s := p.Stats()[strategies.NameTicket].Servers; len(s) != 4 || s[3].Issued == 0 {
				t.Fatalf("after AddTicketServer: %+v, want the fourth server serving", s)
			}
		})
	}
}

// A ticket Create in a transaction on a shard whose pool is capped
// (SetMaxOpenConns) waits for its ticket server, within the server's
// Timeout, not ConnectTimeout: its tickets take no connection of the
// shard's pool, which the bound for pool-bound strategies is about.
func TestTicketInATransactionOnACappedPoolWaitsForItsServer(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		physical, err := gorm.Open(b.physical(t, dir, 0), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		pool, err := physical.DB()
		must(t, err)
		pool.SetMaxOpenConns(4)
		count := shardid.Layout{}.ShardCount()
		list := []shardid.Shard{{Name: b.name + "-0", DB: physical, Logical: []shardid.Range{{From: 0, To: count - 1}}}}
		server, proxy := physicalViaChaos(t, b, 1) // ticket server 2, as in TestTicketThroughThePlugin
		db := open(t, b, dir, shardid.Config{Shards: list, ConnectTimeout: 500 * time.Millisecond, Ticket: shardid.TicketConfig{
			Servers: []shardid.TicketServer{{Name: "tickets-1", Dialector: server, Offset: 2}},
			Options: strategies.TicketOptions{Timeout: 5 * time.Second},
		}})
		fresh(t, db, &order{})
		must(t, db.Create(&order{}).Error)
		proxy.stall(1500 * time.Millisecond) // slow, within its Timeout
		var made order
		err = db.Clauses(shardid.OnShard(0)).Transaction(func(tx *gorm.DB) error {
			return tx.Create(&made).Error
		})
		if err != nil || made.ID == 0 {
			t.Fatalf("a ticket Create in a transaction while its server answered within its Timeout: %v", err)
		}
	})
}
