package web

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/jobd/jobd/clock"
)

// Failed logins are slowed per client: each client may fail
// loginFreeFailures times in a row at once, then waits before each next
// try, 1s after the next failure, doubling with each one up to
// loginMaxDelay. A login while the client must wait is refused 429 with
// Retry-After, without its key being checked. A successful login (or a
// valid key that lacks the read scope) forgets the client's failures, and
// so do loginForgetAfter without one.
//
// Each attempt is charged as a failure when it begins and refunded when
// it succeeds, so that a client cannot send many guesses at once before
// the first one is counted. The client is the connection's address
// (r.RemoteAddr), an IPv6 one by its /64: no proxy header is believed,
// since a caller writes them (jobd trusts no proxy). Behind a reverse
// proxy every client is then the proxy: their failures add up. The
// counts are each node's own, in memory, for at most loginMaxClients
// clients: a client sending to several nodes gets each node's allowance.
const (
	loginFreeFailures = 5
	loginFirstDelay   = time.Second
	loginMaxDelay     = 5 * time.Minute
	loginForgetAfter  = time.Hour
	loginMaxClients   = 10_000
)

// loginThrottle counts the failed logins of each client.
type loginThrottle struct {
	clock   clock.Clock
	mu      sync.Mutex
	clients map[string]*loginFailures
}

// loginFailures is one client's run of failed logins.
type loginFailures struct {
	count int
	last  time.Time // the last attempt charged
	until time.Time // no attempt before
}

func newLoginThrottle(c clock.Clock) *loginThrottle {
	return &loginThrottle{clock: c, clients: make(map[string]*loginFailures)}
}

// loginDelay is the wait after the n-th failure in a row.
func loginDelay(n int) time.Duration {
	if n <= loginFreeFailures {
		return 0
	}
	d := loginFirstDelay
	for i := loginFreeFailures + 1; i < n && d < loginMaxDelay; i++ {
		d *= 2
	}
	return min(d, loginMaxDelay)
}

// begin charges a login attempt of client as a failure, unless the client
// must wait: then it returns how long, and charges nothing.
func (l *loginThrottle) begin(client string) time.Duration {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.clients[client]
	if f != nil && now.Before(f.until) {
		return f.until.Sub(now)
	}
	if f == nil || now.Sub(f.last) >= loginForgetAfter {
		l.makeRoom(now)
		f = &loginFailures{}
		l.clients[client] = f
	}
	f.count++
	f.last = now
	f.until = now.Add(loginDelay(f.count))
	return 0
}

// succeeded refunds client's attempt: its failures are forgotten.
func (l *loginThrottle) succeeded(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.clients, client)
}

// makeRoom keeps the table under loginMaxClients: it forgets the
// clients whose failures are forgotten anyway, then, if it is still
// full, the one whose last attempt is the oldest.
func (l *loginThrottle) makeRoom(now time.Time) {
	if len(l.clients) < loginMaxClients {
		return
	}
	for c, f := range l.clients {
		if now.Sub(f.last) >= loginForgetAfter && !now.Before(f.until) {
			delete(l.clients, c)
		}
	}
	for len(l.clients) >= loginMaxClients {
		var oldest string
		var at time.Time
		for c, f := range l.clients {
			if oldest == "" || f.last.Before(at) {
				oldest, at = c, f.last
			}
		}
		delete(l.clients, oldest)
	}
}

// clientOf is the client a login counts against: the connection's
// address (an IPv6 one by its /64, which one host usually holds whole).
func clientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap()
	if a.Is6() {
		if p, err := a.Prefix(64); err == nil {
			return p.String()
		}
	}
	return a.String()
}
