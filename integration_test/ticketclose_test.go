package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// TestTicketServerAddedAfterCloseIsRefusedAndLeftClosed: AddTicketServer on
// a plugin already closed fails with ErrPluginNotOpen saying so, and leaves
// no connection pool open to the server it was given (Close, having run,
// would never close it).
func TestTicketServerAddedAfterCloseIsRefusedAndLeftClosed(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		main, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		t.Cleanup(func() {
			if s, err := main.DB(); err == nil {
				_ = s.Close()
			}
		})
		var servers []shardid.TicketServer
		for k := range 2 {
			servers = append(servers, shardid.TicketServer{Name: fmt.Sprintf("tickets-%d", k), Dialector: b.physical(t, dir, k), Offset: k + 1})
		}
		p := shardid.New(shardid.Config{Shards: shards(t, b, dir), Atomic: b.atomicity(), Ticket: shardid.TicketConfig{Servers: servers}})
		firstStart(t, main)
		must(t, main.Use(p))
		must(t, p.PrepareTicketServers(context.Background()))
		must(t, p.Close())
		before := settledConnections(t, b, main)
		err = p.AddTicketServer(context.Background(), shardid.TicketServer{Name: "tickets-3", Dialector: b.physical(t, dir, 3), Offset: 4})
		if !errors.Is(err, shardid.ErrPluginNotOpen) || !strings.Contains(err.Error(), "closed") {
			t.Errorf("AddTicketServer after Close: %v; want ErrPluginNotOpen saying the plugin is closed", err)
		}
		if after := settledConnections(t, b, main); after > before {
			t.Errorf("AddTicketServer after Close left %d connections open on the server (%d before)", after, before)
		}
	})
}

// settledConnections counts the server's connections to the test's
// databases once the count holds still.
func settledConnections(t *testing.T, b backend, db *gorm.DB) int64 {
	t.Helper()
	n := serverConnections(t, b, db)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		m := serverConnections(t, b, db)
		if m == n {
			return n
		}
		n = m
	}
	return n
}
