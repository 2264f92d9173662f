package strategies_test

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// tcpProxy forwards 127.0.0.1:<port> to a database so that a test can cut
// the database off: Cut closes the listener (new connections are refused)
// and every live connection; Stall makes it a black hole (connections are
// accepted, nothing is forwarded, nothing is closed), as a dead peer
// behind a lost network is; Restore serves again on the same port.
type tcpProxy struct {
	t      testing.TB
	target string
	addr   string

	mu      sync.Mutex
	ln      net.Listener
	conns   map[net.Conn]bool
	stalled bool
	wg      sync.WaitGroup
}

func newTCPProxy(t testing.TB, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{t: t, target: target, addr: ln.Addr().String(), conns: map[net.Conn]bool{}}
	p.serve(ln)
	t.Cleanup(func() {
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// Addr is the proxy's host:port.
func (p *tcpProxy) Addr() string { return p.addr }

func (p *tcpProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return // closed by Cut
			}
			p.forward(client)
		}
	}()
}

func (p *tcpProxy) forward(client net.Conn) {
	p.mu.Lock()
	stalled := p.stalled
	if stalled {
		p.conns[client] = true
	}
	p.mu.Unlock()
	if stalled {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(io.Discard, client) // until Restore or Cut closes it
		}()
		return
	}
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil { // cut meanwhile
		p.mu.Unlock()
		_ = client.Close()
		_ = server.Close()
		return
	}
	p.conns[client], p.conns[server] = true, true
	p.mu.Unlock()
	pipe := func(dst, src net.Conn) {
		defer p.wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 && !p.isStalled() {
				if _, err := dst.Write(buf[:n]); err != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		// Either side closing ends both: the other side sees the cut at once.
		_ = dst.Close()
		_ = src.Close()
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		p.mu.Unlock()
	}
	p.wg.Add(2)
	go pipe(server, client)
	go pipe(client, server)
}

func (p *tcpProxy) isStalled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stalled
}

// Stall stops forwarding without closing anything.
func (p *tcpProxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = true
}

// Cut refuses new connections and closes the live ones.
func (p *tcpProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
}

// Restore serves again on the same port; connections that were stalled
// are closed.
func (p *tcpProxy) Restore() {
	p.t.Helper()
	p.mu.Lock()
	if p.stalled {
		p.stalled = false
		for c := range p.conns {
			_ = c.Close()
		}
	}
	listening := p.ln != nil
	p.mu.Unlock()
	if listening {
		return
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("proxy %s: listening again: %v", p.addr, err)
	}
	p.serve(ln)
}

func TestTCPProxyCutAndRestore(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
		}
	}()
	p := newTCPProxy(t, echo.Addr().String())
	roundTrip := func(c net.Conn) error {
		if _, err := c.Write([]byte("x")); err != nil {
			return err
		}
		buf := make([]byte, 1)
		_, err := io.ReadFull(c, buf)
		return err
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := roundTrip(c); err != nil {
		t.Fatalf("before the cut: %v", err)
	}
	p.Cut()
	if err := roundTrip(c); err == nil {
		t.Fatal("a live connection still works after the cut")
	}
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		_ = c2.Close()
		t.Fatal("a new connection was accepted after the cut")
	}
	p.Restore()
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("after restore: %v", err)
	}
	defer c3.Close()
	if err := roundTrip(c3); err != nil {
		t.Fatalf("after restore: %v", err)
	}

	p.Stall()
	_ = c3.SetDeadline(time.Now().Add(50 * time.Millisecond))
	if err := roundTrip(c3); err == nil {
		t.Fatal("a stalled proxy answered")
	}
	p.Restore()
	c4, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("after the stall: %v", err)
	}
	defer c4.Close()
	if err := roundTrip(c4); err != nil {
		t.Fatalf("after the stall: %v", err)
	}
}
