package integration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// tcpProxy forwards connections to a server until it is cut: then it drops
// the connections it carries and every new one, as a network partition would.
type tcpProxy struct {
	listener net.Listener
	upstream string
	mu       sync.Mutex
	cut      bool
	conns    []net.Conn
}

func newTCPProxy(t *testing.T, upstream string) *tcpProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	p := &tcpProxy{listener: l, upstream: upstream}
	t.Cleanup(func() { _ = l.Close(); p.setCut(true) })
	go p.serve()
	return p
}

func (p *tcpProxy) addr() string { return p.listener.Addr().String() }

func (p *tcpProxy) serve() {
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			_ = client.Close()
			continue
		}
		server, err := net.Dial("tcp", p.upstream)
		if err != nil {
			p.mu.Unlock()
			_ = client.Close()
			continue
		}
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(server, client); _ = server.Close() }()
		go func() { _, _ = io.Copy(client, server); _ = client.Close() }()
	}
}

// setCut cuts the proxy, or mends it.
func (p *tcpProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.conns = nil
	}
}

// viaProxy opens b's main database through a proxy.
func viaProxy(t *testing.T, b backend) (gorm.Dialector, *tcpProxy) {
	t.Helper()
	return physicalViaProxy(t, b, -1)
}

// physicalViaProxy opens b's i-th physical database (-1: its main one)
// through a proxy.
func physicalViaProxy(t *testing.T, b backend, i int) (gorm.Dialector, *tcpProxy) {
	t.Helper()
	switch b.name {
	case "mariadb":
		cfg, err := mysqldriver.ParseDSN(requireDSN(t, mysqlDSNVar))
		must(t, err)
		proxy := newTCPProxy(t, cfg.Addr)
		cfg.Addr, cfg.Timeout = proxy.addr(), time.Second
		if i >= 0 {
			cfg.DBName = fmt.Sprintf("%s_%d", cfg.DBName, i)
		}
		return mysql.Open(cfg.FormatDSN()), proxy
	default:
		u, err := url.Parse(requireDSN(t, postgresDSNVar))
		must(t, err)
		proxy := newTCPProxy(t, u.Host)
		u.Host = proxy.addr()
		if i >= 0 {
			u.Path = fmt.Sprintf("%s_%d", u.Path, i)
		}
		q := u.Query()
		q.Set("connect_timeout", "1")
		u.RawQuery = q.Encode()
		return postgres.Open(u.String()), proxy
	}
}

// processViaProxy opens another process of the rig's databases, with cfg,
// whose plugin's database is reached through a proxy.
func (r *moveRig) processViaProxy(t *testing.T, cfg shardid.Config) (*gorm.DB, *shardid.Plugin, *tcpProxy) {
	t.Helper()
	r.noteProcess(cfg)
	dialector, proxy := viaProxy(t, r.b)
	db, err := gorm.Open(dialector, &gorm.Config{Logger: logger.Discard})
	must(t, err)
	cfg.Shards = moveShards(t, r.b, r.dir)
	p := shardid.New(cfg)
	must(t, db.Use(p))
	t.Cleanup(func() {
		_ = p.Close()
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return db, p, proxy
}

// TestProcessThatCannotReadTheMapWritesNowhereAndStopsReading: a process
// that cannot read the shared map goes on writing and reading the moved
// range after the cutover. None of its writes lands on the source: the
// source's fence refuses them (ErrShardMoved, after MoveWait) until the
// process has gone three MapRefresh periods and a second without reading the
// map, and from then it refuses every statement on a sharded model, reads of
// the source's frozen copy among them, with ErrShardUnavailable. Once it reads
// the map again its statements run on the target.
func TestProcessThatCannotReadTheMapWritesNowhereAndStopsReading(t *testing.T) {
	for _, b := range backends {
		if b.name == "sqlite" {
			continue // the map is read over a network
		}
		t.Run(b.name, func(t *testing.T) {
			r := newMoveRig(t, b, t.TempDir())
			users := r.seedUsers(t, 500)
			// Refreshes with the time a busy machine needs for each; trust
			// lapses 2.5 s after the last.
			staleDB, stale, proxy := r.processViaProxy(t, shardid.Config{MapRefresh: 500 * time.Millisecond, MoveWait: 500 * time.Millisecond})
			must(t, staleDB.Model(&MvUser{ID: users[0]}).Update("name", "before").Error)

			proxy.setCut(true)
			report := r.move(t, shardid.Move{})
			must(t, r.db.Model(&MvUser{ID: users[2]}).Update("name", "on the target").Error)
			if stale.MapVersion() >= report.MapVersion {
				t.Fatalf("the stale process has map version %d, the move wrote %d: it is not stale", stale.MapVersion(), report.MapVersion)
			}
			for i, id := range users[:5] {
				err := staleDB.Model(&MvUser{ID: id}).Update("name", "stale").Error
				if !errors.Is(err, shardid.ErrShardMoved) && !errors.Is(err, shardid.ErrShardUnavailable) {
					t.Fatalf("write %d of the stale process after the cutover: %v, want ErrShardMoved or ErrShardUnavailable", i, err)
				}
			}
			var onSource []MvUser
			must(t, r.source.Where("name = ?", "stale").Find(&onSource).Error)
			if len(onSource) != 0 {
				t.Errorf("%d writes of the stale process landed on the source", len(onSource))
			}
			// Past three MapRefresh periods and a second without the map, a
			// read of the moved range is refused.
			var got MvUser
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				err := staleDB.First(&got, users[2]).Error
				if errors.Is(err, shardid.ErrShardUnavailable) && strings.Contains(err.Error(), "has not read the shared map") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the stale process's read of the moved range: %q, %v; want ErrShardUnavailable saying it has not read the map", got.Name, err)
				}
			}
			if err := staleDB.Clauses(shardid.AllShards()).Model(&MvUser{}).Count(new(int64)).Error; !errors.Is(err, shardid.ErrShardUnavailable) {
				t.Errorf("the stale process's count over all shards: %v; want ErrShardUnavailable", err)
			}

			proxy.setCut(false)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if v, err := stale.RefreshMap(ctx); err != nil || v != report.MapVersion {
				t.Errorf("the process follows version %d (%v), want %d", v, err, report.MapVersion)
			}
			var readable error
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if readable = staleDB.Model(&MvUser{ID: users[1]}).Update("name", "after").Error; readable == nil {
					break
				}
			}
			must(t, readable)
			must(t, r.target.First(&got, users[1]).Error)
			if got.Name != "after" {
				t.Errorf("the write after the map came back is %q on the target", got.Name)
			}
			must(t, r.source.First(&got, users[1]).Error)
			if got.Name == "after" {
				t.Error("the write after the map came back landed on the source too")
			}
			got = MvUser{}
			must(t, staleDB.First(&got, users[2]).Error)
			if got.Name != "on the target" {
				t.Errorf("the process reads %q once it follows the map again, want the target's row", got.Name)
			}
		})
	}
}

// slowCreated is a sharded model whose BeforeCreate waits for its test, as
// a hook calling another service would.
type slowCreated struct {
	ID   int64 `shardid:""`
	Text string
}

var slowCreateEntered, slowCreateReleased chan struct{}

func (*slowCreated) BeforeCreate(*gorm.DB) error {
	if slowCreateEntered != nil {
		close(slowCreateEntered)
		<-slowCreateReleased
	}
	return nil
}

// TestWriteDelayedPastTheMapsTrustIsRefused: a process cut off from the
// shared map routes a Create while it still trusts its map; the model's
// BeforeCreate takes longer than that trust, while another process moves the
// range and cleans the move up. The Create is refused right before it is
// sent: nothing lands on the source, whose fence the cleanup dropped.
func TestWriteDelayedPastTheMapsTrustIsRefused(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		for _, db := range []*gorm.DB{r.source, r.target} {
			must(t, db.Migrator().DropTable(&slowCreated{}))
		}
		must(t, r.p.AutoMigrate(r.db, &slowCreated{}))
		r.seedUsers(t, 50)
		models := append(append([]any{}, moveModels...), &slowCreated{})
		staleDB, _, proxy := r.processViaProxy(t, shardid.Config{MapRefresh: 100 * time.Millisecond, MoveWait: 300 * time.Millisecond})
		id := r.p.Layout().Compose(time.Now(), movingRange.From+7, 1)
		slowCreateEntered, slowCreateReleased = make(chan struct{}), make(chan struct{})
		defer func() { slowCreateEntered = nil }()
		created := make(chan error, 1)
		go func() { created <- staleDB.Create(&slowCreated{ID: id, Text: "late"}).Error }()
		<-slowCreateEntered // routed, by a map still trusted
		proxy.setCut(true)
		r.move(t, shardid.Move{Models: models})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		must(t, r.p.CleanupMove(ctx, movingRange, models...))
		close(slowCreateReleased)
		if err := <-created; !errors.Is(err, shardid.ErrShardUnavailable) {
			t.Errorf("the Create whose hook outlasted the map's trust: %v; want ErrShardUnavailable", err)
		}
		var onSource int64
		must(t, r.source.Model(&slowCreated{}).Where("id = ?", id).Count(&onSource).Error)
		if onSource != 0 {
			t.Errorf("the Create landed on the source after the cleanup dropped its fence")
		}
	})
}

// TestRefusedWriteInATransactionDoesNotWaitForAHeldMap: a process whose
// plugin database holds its answers writes, in a transaction, a row of a
// range moved meanwhile; the source's fence refuses it, and the refusal
// returns within MoveWait and the map's trust, not when the map answers.
func TestRefusedWriteInATransactionDoesNotWaitForAHeldMap(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		users := r.seedUsers(t, 50)
		dialector, proxy := physicalViaHold(t, b, -1)
		heldDB, err := gorm.Open(dialector, &gorm.Config{Logger: logger.Discard})
		must(t, err)
		held := shardid.New(shardid.Config{Shards: moveShards(t, b, r.dir), MapRefresh: 5 * time.Second, MoveWait: 300 * time.Millisecond})
		must(t, heldDB.Use(held))
		t.Cleanup(func() { proxy.close(); _ = held.Close() })
		must(t, heldDB.Model(&MvUser{ID: users[0]}).Update("name", "before").Error)
		release := proxy.holdOn()
		defer release()
		r.move(t, shardid.Move{})
		refused := make(chan error, 1)
		go func() {
			refused <- heldDB.Clauses(shardid.ByID(users[1])).Transaction(func(tx *gorm.DB) error {
				return tx.Model(&MvUser{ID: users[1]}).Update("name", "in a transaction").Error
			})
		}()
		select {
		case err := <-refused:
			if !errors.Is(err, shardid.ErrShardMoved) && !errors.Is(err, shardid.ErrShardUnavailable) {
				t.Errorf("the write in a transaction: %v; want ErrShardMoved or ErrShardUnavailable", err)
			}
		case <-time.After(25 * time.Second): // past the trust (16 s) and MoveWait, with room for a loaded machine
			t.Errorf("the write refused in a transaction waits for the held map")
			release()
			<-refused
		}
	})
}

// TestMoveStaleUpdateOfNewRow: a process that has not read the new map yet
// updates and deletes rows created on the target after the cutover, at once.
// On the source nothing matches, so no trigger refuses them; the source's
// fence, read after the write, says the range's cutover committed, so the
// plugin reads the map again and runs them on the target.
func TestMoveStaleUpdateOfNewRow(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		r.seedUsers(t, 100)
		staleDB, stale := r.open(t, shardid.Config{MapRefresh: time.Hour})
		report := r.move(t, shardid.Move{})
		fresh := []MvUser{{Name: "new"}, {Name: "new"}}
		must(t, r.db.Clauses(shardid.OnShard(movingRange.From)).Create(&fresh).Error)
		if stale.MapVersion() >= report.MapVersion {
			t.Fatalf("the stale process follows version %d already", stale.MapVersion())
		}
		res := staleDB.Model(&MvUser{ID: fresh[0].ID}).Update("name", "by the stale process")
		if res.Error != nil || res.RowsAffected != 1 {
			t.Fatalf("the stale process's update: %v, %d rows", res.Error, res.RowsAffected)
		}
		var got MvUser
		must(t, r.target.First(&got, fresh[0].ID).Error)
		if got.Name != "by the stale process" {
			t.Errorf("the update is %q on the target", got.Name)
		}
		if res := staleDB.Delete(&MvUser{}, fresh[1].ID); res.Error != nil || res.RowsAffected != 1 {
			t.Fatalf("the stale process's delete: %v, %d rows", res.Error, res.RowsAffected)
		}
		if n := r.target.Find(&[]MvUser{}, fresh[1].ID).RowsAffected; n != 0 {
			t.Errorf("the deleted row is still on the target")
		}
	})
}

// TestStatementsThatWriteNoRowOnAMovesSourceDoNotReadItsFence: on a
// database a move left (its fence table there), a transaction of a shard
// that did not move runs a SET, and a nested transaction's SAVEPOINT, in a
// read-only transaction (where PostgreSQL refuses a fence read's FOR
// SHARE); an UPDATE by a clause that finds nothing, of that shard, is done.
func TestStatementsThatWriteNoRowOnAMovesSourceDoNotReadItsFence(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		r.seedUsers(t, 10)
		keptRow := MvUser{Name: "kept"}
		must(t, r.db.Clauses(shardid.OnShard(100)).Create(&keptRow).Error)
		kept := keptRow.ID
		r.move(t, shardid.Move{})
		opts := &sql.TxOptions{ReadOnly: true}
		if b.name == "sqlite" {
			opts = nil
		}
		set := map[string]string{"postgres": "SET LOCAL statement_timeout = '5s'", "mariadb": "SET @kept = 1", "sqlite": "PRAGMA busy_timeout = 20000"}[b.name]
		err := r.db.Clauses(shardid.ByID(kept)).Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec(set).Error; err != nil {
				t.Errorf("Exec %q in a read-only transaction on the source: %v", set, err)
				return err
			}
			return nil
		}, opts)
		if err != nil {
			t.Errorf("read-only transaction on the source after a move: %v", err)
		}
		err = r.db.Clauses(shardid.ByID(kept)).Transaction(func(tx *gorm.DB) error {
			if err := tx.Transaction(func(tx2 *gorm.DB) error {
				var u MvUser
				return tx2.First(&u, kept).Error
			}); err != nil {
				t.Errorf("nested Transaction (SAVEPOINT) in a read-only transaction on the source: %v", err)
				return err
			}
			return nil
		}, opts)
		if err != nil {
			t.Errorf("read-only transaction on the source after a move: %v", err)
		}
		// Same without a transaction: an UPDATE by a clause that finds no row, no move of its shard.
		if res := r.db.Clauses(shardid.ByID(kept)).Exec("UPDATE mv_users SET name = ? WHERE id = ?", "x", -1); res.Error != nil || res.RowsAffected != 0 {
			t.Errorf("Exec UPDATE by a clause finding nothing: %v, %d", res.Error, res.RowsAffected)
		}
		if res := r.db.Table("mv_users").Clauses(shardid.ByID(kept)).Where("id = ?", -1).Update("name", "x"); res.Error != nil || res.RowsAffected != 0 {
			t.Errorf("Table Update by a clause finding nothing: %v, %d", res.Error, res.RowsAffected)
		}
	})
}

// TestStaleWriteByAShardClauseWithoutAModelIsRefused: a process on the map
// before a move writes, with a shard clause and no model (Exec, or
// db.Table), a row created on the target after the cutover. Its map sends
// it to the source, which finds no row: the source's fence says the clause's
// shard moved, so the write is refused with ErrShardMoved, not reported as
// done; run again, by the map the refusal made it read, it writes there.
func TestStaleWriteByAShardClauseWithoutAModelIsRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		r.seedUsers(t, 20)
		writes := map[string]func(db *gorm.DB, id int64) *gorm.DB{
			"Exec UPDATE": func(db *gorm.DB, id int64) *gorm.DB {
				return db.Clauses(shardid.ByID(id)).Exec("UPDATE mv_users SET name = ? WHERE id = ?", "written", id)
			},
			"Table Update": func(db *gorm.DB, id int64) *gorm.DB {
				return db.Table("mv_users").Clauses(shardid.ByID(id)).Where("id = ?", id).Update("name", "written")
			},
		}
		stale := map[string]*gorm.DB{}
		for name := range writes {
			stale[name], _ = r.open(t, shardid.Config{MapRefresh: time.Hour})
		}
		deleter, _ := r.open(t, shardid.Config{MapRefresh: time.Hour})
		r.move(t, shardid.Move{})
		fresh := []MvUser{{Name: "new"}, {Name: "new"}, {Name: "new"}}
		must(t, r.db.Clauses(shardid.OnShard(movingRange.From+1)).Create(&fresh).Error)
		i := 0
		for name, write := range writes {
			id := fresh[i].ID
			i++
			if err := write(stale[name], id).Error; !errors.Is(err, shardid.ErrShardMoved) {
				t.Errorf("%s on the map before the move: %v, want ErrShardMoved", name, err)
			}
			var got MvUser
			must(t, r.target.First(&got, id).Error)
			if got.Name != "new" {
				t.Errorf("%s: refused, yet the target row is %q", name, got.Name)
			}
			if res := write(stale[name], id); res.Error != nil || res.RowsAffected != 1 {
				t.Errorf("%s run again: %v, %d rows", name, res.Error, res.RowsAffected)
			}
			must(t, r.target.First(&got, id).Error)
			if got.Name != "written" {
				t.Errorf("%s run again: the target row is %q", name, got.Name)
			}
		}
		id := fresh[2].ID
		if err := deleter.Clauses(shardid.ByID(id)).Exec("DELETE FROM mv_users WHERE id = ?", id).Error; !errors.Is(err, shardid.ErrShardMoved) {
			t.Errorf("Exec DELETE on the map before the move: %v, want ErrShardMoved", err)
		}
		if n := r.target.Find(&[]MvUser{}, id).RowsAffected; n != 1 {
			t.Errorf("Exec DELETE refused, yet %d rows on the target", n)
		}
	})
}

// TestStaleWriteByKeysOfAMovedAndAKeptRangeIsRefusedWhole: a process on the
// map before a move updates, or deletes, by a list of keys, a row created on
// the target after the cutover together with a row of a range the source
// still serves. Its map sends both to the source, which finds one: the
// source's fence says a named range moved, so the statement is refused with
// ErrShardMoved and writes nothing (GORM's transaction takes back the row it
// found); run again, by the map the refusal made it read, it writes both.
func TestStaleWriteByKeysOfAMovedAndAKeptRangeIsRefusedWhole(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		r.seedUsers(t, 20)
		updater, stale := r.open(t, shardid.Config{MapRefresh: time.Hour})
		deleter, _ := r.open(t, shardid.Config{MapRefresh: time.Hour})
		report := r.move(t, shardid.Move{})
		if stale.MapVersion() >= report.MapVersion {
			t.Fatalf("the stale process follows version %d already", stale.MapVersion())
		}
		pair := func(offset int) (moved, kept MvUser) {
			moved, kept = MvUser{Name: "new"}, MvUser{Name: "new"}
			must(t, r.db.Clauses(shardid.OnShard(movingRange.From+offset)).Create(&moved).Error)
			must(t, r.db.Clauses(shardid.OnShard(offset)).Create(&kept).Error)
			return moved, kept
		}
		nameOn := func(db *gorm.DB, id int64) string {
			var u MvUser
			if err := db.First(&u, id).Error; err != nil {
				return err.Error()
			}
			return u.Name
		}
		moved, kept := pair(3)
		update := func() error {
			return updater.Model(&MvUser{}).Where("id IN ?", []int64{moved.ID, kept.ID}).Update("name", "renamed").Error
		}
		if err := update(); !errors.Is(err, shardid.ErrShardMoved) {
			t.Fatalf("the stale update by a key list: %v, want ErrShardMoved", err)
		}
		if a, b := nameOn(r.target, moved.ID), nameOn(r.source, kept.ID); a != "new" || b != "new" {
			t.Fatalf("the refused update left the moved row %q and the kept one %q, want both as they were", a, b)
		}
		must(t, update())
		if a, b := nameOn(r.target, moved.ID), nameOn(r.source, kept.ID); a != "renamed" || b != "renamed" {
			t.Fatalf("the update run again left the moved row %q and the kept one %q", a, b)
		}
		moved, kept = pair(4)
		remove := func() error { return deleter.Delete(&MvUser{}, []int64{moved.ID, kept.ID}).Error }
		if err := remove(); !errors.Is(err, shardid.ErrShardMoved) {
			t.Fatalf("the stale delete by a key list: %v, want ErrShardMoved", err)
		}
		if a, b := nameOn(r.target, moved.ID), nameOn(r.source, kept.ID); a != "new" || b != "new" {
			t.Fatalf("the refused delete left the moved row %q and the kept one %q, want both there", a, b)
		}
		must(t, remove())
		if r.target.Find(&[]MvUser{}, moved.ID).RowsAffected != 0 || r.source.Find(&[]MvUser{}, kept.ID).RowsAffected != 0 {
			t.Fatalf("the delete run again left a row")
		}
	})
}

// TestStaleSplitWriteByKeysOfAMovedRangeIsRefusedWhole: a process on the map
// before a move updates, by a list of keys, a row created on the target after
// the cutover and a row of the target's own range. Its map splits the
// statement: the part on the source, pinned by the moved row's key, finds
// nothing there, and the source's fence says the range moved: the statement
// fails whole with ErrShardMoved, the target's part rolled back; run again,
// it updates both rows on the target.
func TestStaleSplitWriteByKeysOfAMovedRangeIsRefusedWhole(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newMoveRigServing(t, b, t.TempDir(), []shardid.Range{{From: 0, To: 99}})
		r.seedUsers(t, 20)
		staleDB, _ := r.open(t, shardid.Config{MapRefresh: time.Hour})
		r.move(t, shardid.Move{})
		moved, own := MvUser{Name: "new"}, MvUser{Name: "new"}
		must(t, r.db.Clauses(shardid.OnShard(movingRange.From+2)).Create(&moved).Error)
		must(t, r.db.Clauses(shardid.OnShard(7)).Create(&own).Error)
		rename := func() error {
			return staleDB.Model(&MvUser{}).Where("id IN ?", []int64{moved.ID, own.ID}).Update("name", "renamed").Error
		}
		if err := rename(); !errors.Is(err, shardid.ErrShardMoved) {
			t.Fatalf("the stale split update: %v, want ErrShardMoved", err)
		}
		var untouched int64
		must(t, r.target.Model(&MvUser{}).Where("id IN ? AND name = ?", []int64{moved.ID, own.ID}, "new").Count(&untouched).Error)
		if untouched != 2 {
			t.Fatalf("the refused update wrote %d rows on the target", 2-untouched)
		}
		must(t, rename())
		var renamed int64
		must(t, r.target.Model(&MvUser{}).Where("id IN ? AND name = ?", []int64{moved.ID, own.ID}, "renamed").Count(&renamed).Error)
		if renamed != 2 {
			t.Fatalf("the update run again renamed %d of the 2 rows", renamed)
		}
	})
}

// TestMovedRefusalReadsTheMap: a process that reads the shared map seldom
// (MapRefresh an hour) writes the moved range in a transaction after the
// cutover: refused with ErrShardMoved, which makes it read the map, so the
// transaction run again lands on the target.
func TestMovedRefusalReadsTheMap(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		users := r.seedUsers(t, 20)
		slowDB, slow := r.open(t, shardid.Config{MapRefresh: time.Hour})
		must(t, slowDB.Model(&MvUser{ID: users[0]}).Update("name", "before").Error)
		report := r.move(t, shardid.Move{})
		write := func() error {
			return slowDB.Clauses(shardid.ByID(users[0])).Transaction(func(tx *gorm.DB) error {
				return tx.Model(&MvUser{ID: users[0]}).Update("name", "in a transaction").Error
			})
		}
		if err := write(); !errors.Is(err, shardid.ErrShardMoved) {
			t.Fatalf("the transaction after the cutover: %v, want ErrShardMoved", err)
		}
		if v := slow.MapVersion(); v != report.MapVersion {
			t.Fatalf("after the refusal the process follows map version %d, want %d", v, report.MapVersion)
		}
		must(t, write())
		var got MvUser
		must(t, r.target.First(&got, users[0]).Error)
		if got.Name != "in a transaction" {
			t.Errorf("the transaction run again wrote %q on the target", got.Name)
		}
	})
}

// TestHeldWriteRunsWhereAFailedCutoverThawed: a write held at the freeze of
// a cutover that then fails its check runs on the source, which serves the
// range still, instead of failing as moved.
func TestHeldWriteRunsWhereAFailedCutoverThawed(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		users := r.seedUsers(t, 20)
		var written error
		var writer sync.WaitGroup
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", Progress: func(p shardid.MoveProgress) {
			if p.Step != "frozen" {
				return
			}
			writer.Go(func() { written = r.db.Model(&MvUser{ID: users[0]}).Update("name", "held").Error })
			for deadline := time.Now().Add(10 * time.Second); r.p.MovedWrites().Held == 0; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Error("the write was not held at the freeze")
					return
				}
			}
			// A stray user of the range on the target: the check fails.
			must(t, r.target.Create(&MvUser{ID: r.p.Layout().Compose(time.Now(), movingRange.From, 999), Name: "stray"}).Error)
		}})
		writer.Wait()
		if !errors.Is(err, shardid.ErrMoveVerify) {
			t.Fatalf("the move: %v, want ErrMoveVerify", err)
		}
		if written != nil {
			t.Fatalf("the write held at the failed cutover: %v", written)
		}
		var got MvUser
		must(t, r.source.First(&got, users[0]).Error)
		if got.Name != "held" {
			t.Errorf("the source has %q", got.Name)
		}
	})
}

// TestStaleFanOutWriteMissesNoRowOfAMovedRange: a process that has not read
// the new map yet updates rows over every shard, among them a row created on
// the target after the cutover and one of the target's own. Its part on the
// source keeps to the ranges
// its old map gives the source, the moved one among them, where the source's
// sealed fence says the range moved: the statement fails with
// ErrShardMoved, nothing written, and run again by the map it then reads it
// updates both rows on the target.
func TestStaleFanOutWriteMissesNoRowOfAMovedRange(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		// The target serves shards of its own, so the update has a part on each.
		r := newMoveRigServing(t, b, t.TempDir(), []shardid.Range{{From: 0, To: 99}})
		r.seedUsers(t, 20)
		staleDB, stale := r.open(t, shardid.Config{MapRefresh: time.Hour})
		report := r.move(t, shardid.Move{})
		fresh := MvUser{Name: "created after the cutover"}
		must(t, r.db.Clauses(shardid.OnShard(movingRange.From)).Create(&fresh).Error)
		must(t, r.db.Clauses(shardid.OnShard(5)).Create(&MvUser{Name: fresh.Name}).Error)
		rename := func() *gorm.DB {
			return staleDB.Model(&MvUser{}).Clauses(shardid.AllShards()).Where("name = ?", fresh.Name).Update("name", "renamed")
		}
		res := rename()
		if res.Error == nil && res.RowsAffected != 2 {
			t.Fatalf("the stale process's update over every shard updated %d of the 2 rows and said nothing (map version %d, the move's %d)", res.RowsAffected, stale.MapVersion(), report.MapVersion)
		}
		if res.Error != nil {
			if !errors.Is(res.Error, shardid.ErrShardMoved) {
				t.Fatalf("the stale update: %v, want ErrShardMoved", res.Error)
			}
			var untouched int64
			must(t, r.target.Model(&MvUser{}).Where("name = ?", fresh.Name).Count(&untouched).Error)
			if untouched != 2 {
				t.Fatalf("the refused update wrote %d rows on the target", 2-untouched)
			}
			if res = rename(); res.Error != nil || res.RowsAffected != 2 {
				t.Fatalf("the update run again: %v, %d rows", res.Error, res.RowsAffected)
			}
		}
		var got MvUser
		must(t, r.target.First(&got, fresh.ID).Error)
		if got.Name != "renamed" {
			t.Errorf("the row on the target is %q", got.Name)
		}
	})
}

// TestUseLeavesTheApplicationsPoolOpen: a plugin database given to GORM as
// an open connection pool, unreachable while the plugin registers, keeps
// that pool open: the plugin opens no pool of its own from it.
func TestUseLeavesTheApplicationsPoolOpen(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		viaDSN, proxy := viaProxy(t, b)
		opened, err := gorm.Open(viaDSN, &gorm.Config{Logger: logger.Discard})
		must(t, err)
		pool, err := opened.DB()
		must(t, err)
		given := map[string]gorm.Dialector{"mariadb": mysql.New(mysql.Config{Conn: pool}), "postgres": postgres.New(postgres.Config{Conn: pool})}[b.name]
		db, err := gorm.Open(given, &gorm.Config{Logger: logger.Discard})
		must(t, err)
		proxy.setCut(true)
		p := shardid.New(shardid.Config{Shards: shards(t, b, t.TempDir()), ConnectTimeout: time.Second})
		_ = db.Use(p) // may fail (PostgreSQL's decisions table cannot be read): the pool is what is checked
		t.Cleanup(func() { _ = p.Close() })
		proxy.setCut(false)
		must(t, db.Exec("SELECT 1").Error)
	})
}

// TestMapWriteLostAfterTheSealKeepsTheRangeSealed: a mover that loses the
// plugin's database between sealing the source and hearing that its map
// was written cannot tell whether the map names the target: the source
// keeps refusing writes of the range, so that none lands where the map may
// no longer look, and the move run again completes with every row moved.
func TestMapWriteLostAfterTheSealKeepsTheRangeSealed(t *testing.T) {
	for _, b := range backends {
		if b.name == "sqlite" {
			continue // the map is written over a network
		}
		t.Run(b.name, func(t *testing.T) {
			r := newMoveRig(t, b, t.TempDir())
			users := r.seedUsers(t, 300)
			_, mover, proxy := r.processViaProxy(t, shardid.Config{MapRefresh: -1})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := mover.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", Models: moveModels, Progress: func(p shardid.MoveProgress) {
				if p.Phase == shardid.PhaseCutover && p.Step == "verified" {
					proxy.setCut(true) // the seal reaches the source; the map write, its answer, and a read of the map are lost
				}
			}})
			if err == nil {
				t.Fatal("the move succeeded without the plugin's database")
			}
			var frozen bool
			var until sql.NullInt64
			must(t, r.source.Raw("SELECT frozen, frozen_until FROM shardid_move_fence WHERE range_from = ? AND range_to = ?", movingRange.From, movingRange.To).Row().Scan(&frozen, &until))
			if !frozen || until.Valid {
				t.Fatalf("after the lost map write the source's fence is frozen=%v until=%v, want sealed", frozen, until)
			}
			proxy.setCut(false)
			r.move(t, shardid.Move{})
			var n int64
			must(t, r.target.Model(&MvUser{}).Where("id IN ?", users).Count(&n).Error)
			if n != int64(len(users)) { // every seeded user is in the moving range
				t.Fatalf("the target holds %d of the %d users of the range", n, len(users))
			}
		})
	}
}

// TestAStaleCreateRunAgainOnTheNewDatabaseNeedsNoSecondConnection: a
// process whose physical databases' pools hold one connection each, which
// has not read a move, creates a row of the moved range (a new ID, and a
// preset one); the source refuses it, and the plugin runs it again on the
// target, making its ID there without a second connection of that pool,
// which the transaction it runs in holds.
func TestAStaleCreateRunAgainOnTheNewDatabaseNeedsNoSecondConnection(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		staleDB, _ := r.openOnSmallPools(t, 1, shardid.Config{MapRefresh: time.Hour})
		must(t, staleDB.Clauses(shardid.OnShard(movingRange.From)).Create(&MvUser{Name: "before"}).Error)
		r.move(t, shardid.Move{})
		preset := r.p.Layout().Compose(time.Now().Add(time.Second), movingRange.From+1, 0)
		for _, row := range []*MvUser{{Name: "new"}, {ID: preset, Name: "preset"}} {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err := staleDB.WithContext(ctx).Clauses(shardid.OnShard(movingRange.From)).Create(row).Error
			cancel()
			if err != nil {
				t.Fatalf("the stale process's Create of %q: %v", row.Name, err)
			}
			var got MvUser
			must(t, r.target.First(&got, row.ID).Error)
		}
	})
}
