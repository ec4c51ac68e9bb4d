package auth

import (
	"sync"
	"time"
)

// FailureLimiter counts failed logins per client address in fixed windows.
// Only failures count, and a client that presents correct credentials is
// never refused by it: the catalogue may share an address (a NAT, a proxy
// whose address is not trusted) with whoever is guessing, and a refused
// catalogue loses notifications after three retries. What it changes is the
// answer to wrong credentials from a noisy address: 429 with Retry-After
// instead of 401, and a metric and log line an operator can alert on.
type FailureLimiter struct {
	mu      sync.Mutex
	limit   int
	window  time.Duration
	max     int
	now     func() time.Time
	clients map[string]*failures
}

type failures struct {
	n     int
	reset time.Time
}

// NewFailureLimiter allows limit failures per window per address; it tracks
// at most maxClients addresses (the oldest windows are dropped first when
// full), so a flood from many addresses cannot grow it without bound.
func NewFailureLimiter(limit int, window time.Duration, maxClients int) *FailureLimiter {
	return &FailureLimiter{limit: limit, window: window, max: maxClients, now: time.Now, clients: map[string]*failures{}}
}

// Fail records a failure of addr and reports whether addr is now over the
// limit, and when its window ends.
func (l *FailureLimiter) Fail(addr string) (limited bool, retryAfter time.Duration) {
	if l == nil || l.limit <= 0 {
		return false, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	f := l.clients[addr]
	if f == nil || now.After(f.reset) {
		if f == nil && len(l.clients) >= l.max {
			l.sweep(now)
		}
		f = &failures{reset: now.Add(l.window)}
		l.clients[addr] = f
	}
	f.n++
	return f.n > l.limit, f.reset.Sub(now)
}

// Limited reports, without counting anything, whether addr is over the
// limit now, and when its window ends. It is asked before a costly check
// (bcrypt) is run for wrong-looking credentials.
func (l *FailureLimiter) Limited(addr string) (limited bool, retryAfter time.Duration) {
	if l == nil || l.limit <= 0 {
		return false, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	f := l.clients[addr]
	if f == nil || now.After(f.reset) || f.n < l.limit {
		return false, 0
	}
	return true, f.reset.Sub(now)
}

// sweep drops expired windows, and if that frees nothing, the entry closest
// to expiry.
func (l *FailureLimiter) sweep(now time.Time) {
	var oldest string
	var oldestReset time.Time
	for k, f := range l.clients {
		if now.After(f.reset) {
			delete(l.clients, k)
			continue
		}
		if oldest == "" || f.reset.Before(oldestReset) {
			oldest, oldestReset = k, f.reset
		}
	}
	if len(l.clients) >= l.max && oldest != "" {
		delete(l.clients, oldest)
	}
}
