package integration

import (
	"bytes"
	"fmt"
	"net"
	"net/url"
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

// holdProxy forwards connections to a database server and can hold the
// server's answers for a while, as a slow network or a stalled server would:
// the statements arrive, run and commit, and their clients hear nothing
// until the hold ends.
type holdProxy struct {
	listener net.Listener
	upstream string
	mu       sync.Mutex
	gate     chan struct{} // closed while answers flow
	holds    int
	closed   bool
	conns    []net.Conn
	// delayText, in a statement, holds it for delay before it is sent on.
	delayText string
	delay     time.Duration
	onDelay   func() // called as each delayed statement reaches the proxy
	// holdText, in a statement, holds every later answer on its
	// connection, the statement's own among them, until held is closed.
	holdText string
	held     chan struct{}
}

func newHoldProxy(t testing.TB, upstream string) *holdProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	open := make(chan struct{})
	close(open)
	p := &holdProxy{listener: l, upstream: upstream, gate: open}
	t.Cleanup(p.close)
	go p.serve()
	return p
}

func (p *holdProxy) addr() string { return p.listener.Addr().String() }

func (p *holdProxy) serve() {
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.upstream)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = client.Close()
			_ = server.Close()
			return
		}
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		own := make(chan (<-chan struct{}), 1) // this connection's hold, once its statement holds it
		go func() { p.forward(server, client, own); _ = server.Close() }()
		go func() { p.answer(client, server, own); _ = client.Close() }()
	}
}

// answer copies the server's answers to the client, waiting at the gate
// before each.
func (p *holdProxy) answer(client, server net.Conn, own <-chan (<-chan struct{})) {
	buf := make([]byte, 32<<10)
	var held <-chan struct{}
	for {
		n, err := server.Read(buf)
		if n > 0 {
			p.mu.Lock()
			gate := p.gate
			p.mu.Unlock()
			<-gate
			select {
			case held = <-own:
			default:
			}
			if held != nil {
				<-held
			}
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// forward copies the client's statements to the server, holding one that
// contains the delayed text for its delay.
func (p *holdProxy) forward(server, client net.Conn, own chan<- (<-chan struct{})) {
	buf := make([]byte, 32<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			p.mu.Lock()
			text, delay, onDelay := p.delayText, p.delay, p.onDelay
			if p.holdText != "" && bytes.Contains(buf[:n], []byte(p.holdText)) {
				p.holdText = ""
				own <- p.held // before the statement goes on: its answer is held
			}
			p.mu.Unlock()
			if text != "" && bytes.Contains(buf[:n], []byte(text)) {
				if onDelay != nil {
					onDelay()
				}
				time.Sleep(delay)
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// delayStatements holds each statement containing text for d before the
// server sees it, as a slow network would.
func (p *holdProxy) delayStatements(text string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delayText, p.delay = text, d
}

// whenDelayed calls f as each statement delayStatements delays reaches the
// proxy, before it is held: a fence at that point of the client's work.
func (p *holdProxy) whenDelayed(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.onDelay = f
}

// holdAnswersFrom holds the answers on the connection of the first
// statement containing text, its own among them, until releaseHeld: the
// statement runs on the server, and its client hears nothing; other
// connections go on.
func (p *holdProxy) holdAnswersFrom(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holdText, p.held = text, make(chan struct{})
}

// releaseHeld lets the answers holdAnswersFrom held through.
func (p *holdProxy) releaseHeld() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held != nil {
		close(p.held)
		p.held = nil
	}
}

// hold holds every answer for d, then lets them through.
func (p *holdProxy) hold(d time.Duration) { time.AfterFunc(d, p.holdOn()) }

// holdOn holds every answer until the function it returns is called.
func (p *holdProxy) holdOn() (release func()) {
	p.mu.Lock()
	gate := make(chan struct{})
	p.gate = gate
	p.holds++
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			close(gate)
			if p.gate == gate {
				open := make(chan struct{})
				close(open)
				p.gate = open
			}
		})
	}
}

func (p *holdProxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	_ = p.listener.Close()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

// physicalViaHold opens b's i-th physical database (-1: its main one)
// through a holdProxy.
func physicalViaHold(t testing.TB, b backend, i int) (gorm.Dialector, *holdProxy) {
	t.Helper()
	var proxy *holdProxy
	return physicalVia(t, b, i, false, func(upstream string) string {
		proxy = newHoldProxy(t, upstream)
		return proxy.addr()
	}), proxy
}

// physicalVia opens b's i-th physical database (-1: its main one) through a
// proxy that listen starts, given the server's address, and whose address it
// returns; quick bounds a connection's dial to a second.
func physicalVia(t testing.TB, b backend, i int, quick bool, listen func(upstream string) string) gorm.Dialector {
	t.Helper()
	switch b.name {
	case "mariadb":
		cfg, err := mysqldriver.ParseDSN(requireDSN(t, mysqlDSNVar))
		must(t, err)
		cfg.Addr = listen(cfg.Addr)
		if quick {
			cfg.Timeout = time.Second
		}
		if i >= 0 {
			cfg.DBName = fmt.Sprintf("%s_%d", cfg.DBName, i)
		}
		return mysql.Open(cfg.FormatDSN())
	default:
		u, err := url.Parse(requireDSN(t, postgresDSNVar))
		must(t, err)
		u.Host = listen(u.Host)
		if quick {
			q := u.Query()
			q.Set("connect_timeout", "1")
			u.RawQuery = q.Encode()
		}
		if i >= 0 {
			u.Path = fmt.Sprintf("%s_%d", u.Path, i)
		}
		return postgres.Open(u.String())
	}
}

// histProcess is one process of the history tests: a plugin on the move
// tests' databases, the physical ones reached directly or through proxies
// that hold their answers.
type histProcess struct {
	id      int
	name    string
	db      *gorm.DB
	p       *shardid.Plugin
	proxies []*holdProxy
}

// openHistProcess registers a plugin with the move tests' shards, through
// hold proxies if proxied.
func openHistProcess(t testing.TB, r *moveRig, id int, name string, cfg shardid.Config, proxied bool) *histProcess {
	t.Helper()
	r.noteProcess(cfg)
	hp := &histProcess{id: id, name: name}
	cfg.Shards = moveShards(t, r.b, r.dir)
	if proxied {
		for k, i := range []int{moveSource, moveTarget} {
			d, proxy := physicalViaHold(t, r.b, i)
			cfg.Shards[k].Dialector = d
			hp.proxies = append(hp.proxies, proxy)
		}
	}
	db, err := gorm.Open(r.b.dialector(t, r.dir), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	hp.p = shardid.New(cfg)
	if err := db.Use(hp.p); err != nil {
		t.Fatalf("db.Use: %v", err)
	}
	hp.db = db
	t.Cleanup(func() {
		_ = hp.p.Close()
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return hp
}
