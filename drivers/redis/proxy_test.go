package redis

import (
	"bytes"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// proxyMode says what cutProxy does to a connection that sends a script.
type proxyMode int32

const (
	// passScripts forwards everything.
	passScripts proxyMode = iota
	// cutBeforeScript closes the connection instead of forwarding a script:
	// the server never runs it.
	cutBeforeScript
	// cutAfterReply forwards a script, waits for the server's reply and
	// closes the connection instead of forwarding it: the script ran but
	// the client never hears so.
	cutAfterReply
	// stallScripts holds a script and its connection until the proxy
	// closes, like a network that stopped delivering.
	stallScripts
)

// cutProxy is a TCP proxy on loopback in front of a server that cuts or
// stalls connections when they send EVAL or EVALSHA, so that tests can fail
// the network exactly in the middle of an acquire.
type cutProxy struct {
	ln     net.Listener
	target string
	mode   atomic.Int32
	cuts   atomic.Int32 // scripts cut or stalled so far

	mu     sync.Mutex
	conns  []net.Conn
	closed bool
	wg     sync.WaitGroup
}

// startProxy starts a cutProxy in front of target, closed at cleanup.
func startProxy(t testing.TB, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) setMode(m proxyMode) { p.mode.Store(int32(m)) }

// track registers c to be closed with the proxy; it reports false (and
// closes c) when the proxy is already closed.
func (p *cutProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns = append(p.conns, c)
	return true
}

func (p *cutProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !p.track(client) || !p.track(server) {
			_ = client.Close()
			_ = server.Close()
			return
		}
		p.wg.Add(1)
		go p.pipe(client, server)
	}
}

// pipe forwards one connection in both directions and applies the mode to
// what the client sends.
func (p *cutProxy) pipe(client, server net.Conn) {
	defer p.wg.Done()
	cut := func() {
		_ = client.Close()
		_ = server.Close()
	}
	defer cut()

	replies := make(chan struct{}) // closed when server-to-client stops
	p.wg.Add(1)
	swallow := atomic.Bool{}
	go func() {
		defer p.wg.Done()
		defer close(replies)
		buf := make([]byte, 32<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 {
				if swallow.Load() {
					cut() // the script's reply arrived: drop it and the connection
					return
				}
				if _, werr := client.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()

	buf := make([]byte, 32<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			lower := bytes.ToLower(chunk)
			isScript := bytes.Contains(lower, []byte("eval")) || bytes.Contains(lower, []byte("fcall"))
			switch mode := proxyMode(p.mode.Load()); {
			case !isScript || mode == passScripts:
				if _, werr := server.Write(chunk); werr != nil {
					return
				}
			case mode == cutBeforeScript:
				p.cuts.Add(1)
				return
			case mode == cutAfterReply:
				p.cuts.Add(1)
				swallow.Store(true)
				if _, werr := server.Write(chunk); werr != nil {
					return
				}
				<-replies
				return
			case mode == stallScripts:
				p.cuts.Add(1)
				_, _ = io.Copy(io.Discard, client) // until the proxy closes
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// close stops the proxy and every connection through it.
func (p *cutProxy) close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	_ = p.ln.Close()
	for _, c := range conns {
		_ = c.Close()
	}
	p.wg.Wait()
}
