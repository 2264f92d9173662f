package integration

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"
)

// chaosProxy forwards to a database server and injects faults: cuts (both
// sides), half-open cuts (client side now, server side later), stalls of the
// answers, and cuts triggered by a statement's text (before or after it is
// forwarded).
type chaosProxy struct {
	listener net.Listener
	upstream string
	mu       sync.Mutex
	pairs    map[*chaosPair]bool
	gate     chan struct{} // answers wait for it
	requests chan struct{} // statements wait for it
	refuse   bool
	closed   bool
	// trigger: the next statement containing text cuts its connection,
	// after forwarding it when after, keeping the server side open for
	// serverLinger.
	trigText   string
	trigAfter  bool
	trigLinger time.Duration
	trigFired  int
	// delay: a statement containing delayText, sent before delayUntil, is
	// held (its connection alone) until then, and forwarded after.
	delayText  string
	delayUntil time.Time
	delayed    int
}

type chaosPair struct {
	client, server net.Conn
	muted          atomic.Bool
	answered       chan struct{} // closed once the server answers while muted
	answeredOnce   sync.Once
}

// heard notes that the server answered the statement whose answer is lost.
func (pair *chaosPair) heard() { pair.answeredOnce.Do(func() { close(pair.answered) }) }

func newChaosProxy(t testing.TB, upstream string) *chaosProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	open := make(chan struct{})
	close(open)
	p := &chaosProxy{listener: l, upstream: upstream, pairs: map[*chaosPair]bool{}, gate: open, requests: open}
	t.Cleanup(p.shutdown)
	go p.serve()
	return p
}

func (p *chaosProxy) serve() {
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.refuse || p.closed
		p.mu.Unlock()
		if refuse {
			_ = client.Close()
			continue
		}
		server, err := net.Dial("tcp", p.upstream)
		if err != nil {
			_ = client.Close()
			continue
		}
		pair := &chaosPair{client: client, server: server, answered: make(chan struct{})}
		p.mu.Lock()
		p.pairs[pair] = true
		p.mu.Unlock()
		go p.forward(pair)
		go p.answer(pair)
	}
}

func (p *chaosProxy) drop(pair *chaosPair, linger time.Duration) {
	p.mu.Lock()
	delete(p.pairs, pair)
	p.mu.Unlock()
	_ = pair.client.Close()
	if linger <= 0 {
		_ = pair.server.Close()
	} else {
		time.AfterFunc(linger, func() { _ = pair.server.Close() })
	}
}

func (p *chaosProxy) forward(pair *chaosPair) {
	buf := make([]byte, 64<<10)
	for {
		p.mu.Lock()
		requests := p.requests
		p.mu.Unlock()
		<-requests
		n, err := pair.client.Read(buf)
		if n > 0 {
			p.mu.Lock()
			fire := p.trigText != "" && bytes.Contains(buf[:n], []byte(p.trigText))
			after, linger := p.trigAfter, p.trigLinger
			var holdUntil time.Time
			if p.delayText != "" && time.Now().Before(p.delayUntil) && bytes.Contains(buf[:n], []byte(p.delayText)) {
				holdUntil = p.delayUntil
				p.delayed++
			}
			if fire {
				p.trigText = ""
				p.trigFired++
			}
			p.mu.Unlock()
			if fire {
				pair.muted.Store(true) // no answer reaches the client any more
			}
			if fire && !after {
				p.drop(pair, linger)
				return
			}
			time.Sleep(time.Until(holdUntil)) // the client may give up meanwhile: the server still gets it

			if _, werr := pair.server.Write(buf[:n]); werr != nil {
				p.drop(pair, 0)
				return
			}
			if fire {
				select { // the server has run it; its answer is lost
				case <-pair.answered:
				case <-time.After(30 * time.Second):
				}
				p.drop(pair, linger)
				return
			}
		}
		if err != nil {
			p.drop(pair, 0)
			return
		}
	}
}

func (p *chaosProxy) answer(pair *chaosPair) {
	buf := make([]byte, 64<<10)
	for {
		n, err := pair.server.Read(buf)
		if n > 0 {
			if pair.muted.Load() {
				pair.heard()
				continue
			}
			p.mu.Lock()
			gate := p.gate
			p.mu.Unlock()
			<-gate
			if _, werr := pair.client.Write(buf[:n]); werr != nil {
				p.drop(pair, 0)
				return
			}
		}
		if err != nil {
			p.drop(pair, 0)
			return
		}
	}
}

// cutAll cuts every connection; linger keeps the server sides open for it.
func (p *chaosProxy) cutAll(linger time.Duration) {
	p.mu.Lock()
	var all []*chaosPair
	for pair := range p.pairs {
		all = append(all, pair)
	}
	p.mu.Unlock()
	for _, pair := range all {
		p.drop(pair, linger)
	}
}

// stall holds every answer for d.
func (p *chaosProxy) stall(d time.Duration) { p.hold(&p.gate, d) }

// holdRequests stops reading what clients send for d, so that a client
// writing more than the sockets buffer blocks in its write.
func (p *chaosProxy) holdRequests(d time.Duration) { p.hold(&p.requests, d) }

func (p *chaosProxy) hold(gateOf *chan struct{}, d time.Duration) {
	p.mu.Lock()
	gate := make(chan struct{})
	*gateOf = gate
	p.mu.Unlock()
	time.AfterFunc(d, func() {
		p.mu.Lock()
		close(gate)
		if *gateOf == gate {
			open := make(chan struct{})
			close(open)
			*gateOf = open
		}
		p.mu.Unlock()
	})
}

func (p *chaosProxy) arm(text string, after bool, linger time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trigText, p.trigAfter, p.trigLinger = text, after, linger
}

// delayStatements holds each statement containing text, sent within d
// from now, until d has passed; the connection's later statements wait
// behind it, the other connections do not.
func (p *chaosProxy) delayStatements(text string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delayText, p.delayUntil = text, time.Now().Add(d)
}

// delayedCount is how many statements delayStatements held.
func (p *chaosProxy) delayedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.delayed
}

func (p *chaosProxy) setRefuse(v bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = v
}

// fired is how many statements' text cut their connection.
func (p *chaosProxy) fired() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.trigFired
}

func (p *chaosProxy) calm() {
	p.mu.Lock()
	p.trigText, p.refuse = "", false
	p.mu.Unlock()
}

func (p *chaosProxy) shutdown() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	_ = p.listener.Close()
	p.cutAll(0)
}

// chaos runs random faults until stop is closed.
func (p *chaosProxy) chaos(stop <-chan struct{}, dialect string, seed uint64, log func(string)) {
	rng := rand.New(rand.NewPCG(seed, 7))
	prepare, commit, end := "PREPARE TRANSACTION", "COMMIT PREPARED", "ROLLBACK PREPARED"
	if dialect == "mariadb" {
		prepare, commit, end = "XA PREPARE", "XA COMMIT", "XA END"
	}
	if dialect == "main" {
		prepare, commit, end = "INSERT INTO shardid_transactions", "SELECT outcome", "DELETE FROM shardid_transactions"
	}
	for {
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(100+rng.IntN(300)) * time.Millisecond):
		}
		linger := time.Duration(0)
		if rng.IntN(2) == 0 {
			linger = time.Duration(rng.IntN(4000)) * time.Millisecond
		}
		switch rng.IntN(8) {
		case 0:
			p.cutAll(linger)
			log(fmt.Sprintf("cutAll linger=%v", linger))
		case 1:
			d := time.Duration(200+rng.IntN(1500)) * time.Millisecond
			p.stall(d)
			log(fmt.Sprintf("stall %v", d))
		case 2, 3:
			p.arm(prepare, rng.IntN(2) == 0, linger)
		case 4, 5:
			p.arm(commit, rng.IntN(2) == 0, linger)
		case 6:
			p.arm(end, rng.IntN(2) == 0, linger)
		case 7:
			p.setRefuse(true)
			time.Sleep(time.Duration(100+rng.IntN(500)) * time.Millisecond)
			p.setRefuse(false)
		}
	}
}

// physicalViaChaos opens b's i-th physical database (-1: its main one)
// through a chaosProxy.
func physicalViaChaos(t testing.TB, b backend, i int) (gorm.Dialector, *chaosProxy) {
	t.Helper()
	var proxy *chaosProxy
	return physicalVia(t, b, i, true, func(upstream string) string {
		proxy = newChaosProxy(t, upstream)
		return proxy.listener.Addr().String()
	}), proxy
}
