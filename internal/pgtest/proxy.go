package pgtest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy is a TCP proxy in front of the test PostgreSQL server that a test
// cuts (Down: every connection closed, new ones refused) and restores
// (Up), as a database restart or a network blip does.
type Proxy struct {
	target string
	ln     net.Listener
	mu     sync.Mutex
	conns  []net.Conn
	off    bool
}

// NewProxy listens on a loopback port and forwards each connection to
// target (host:port); it is closed when t ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{target: target, ln: ln}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.Down() })
	return p
}

// Proxied returns the URL of a fresh schema on the test server (see
// SchemaURL) reached through a new Proxy, and the proxy.
func Proxied(t testing.TB) (string, *Proxy) {
	t.Helper()
	u, err := url.Parse(SchemaURL(t))
	if err != nil {
		t.Fatal(err)
	}
	p := NewProxy(t, u.Host)
	u.Host = p.Addr()
	return u.String(), p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.off {
			p.mu.Unlock()
			c.Close()
			continue
		}
		d, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, c, d)
		p.mu.Unlock()
		go func() { io.Copy(d, c); d.Close() }()
		go func() { io.Copy(c, d); c.Close() }()
	}
}

// Down closes every connection and refuses new ones until Up.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.off = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Up lets connections through again.
func (p *Proxy) Up() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.off = false
}
