package auth

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// FailureLimiter counts failed logins per client address in fixed windows.
// Only failures count, and a client that presents correct credentials is
// never refused by it: the catalogue may share an address (a NAT, a proxy
// whose address is not trusted) with whoever is guessing, and a refused
// catalogue loses notifications after three retries. What it changes for a
// noisy address is the answer to wrong credentials, 429 with Retry-After
// instead of 401 (and a metric and log line an operator can alert on), and
// what checking them costs: while the address is over its limit, a user
// not in the htpasswd file is refused without a bcrypt check, and the
// checks of the others run one at a time (Admit). They still run, because
// a password is known to be wrong only once checked: refusing every
// unremembered password of a limited address before bcrypt refused the
// catalogue's own after each reload or expiry of the memory of verified
// passwords, for as long as someone kept guessing from its address.
type FailureLimiter struct {
	mu      sync.Mutex
	limit   int
	window  time.Duration
	max     int
	now     func() time.Time
	clients map[string]*failures
	// gates hold the one check at a time of each address over its limit
	// with a check running or waiting (so never more entries than requests
	// in progress).
	gates map[string]*gate
}

// gate is the turn of one address's checks: slot holds the one running,
// users counts it and those waiting.
type gate struct {
	slot  chan struct{}
	users int
}

// An address over its limit has at most maxAddrWaiting checks waiting
// behind its running one, each for at most checkWait; beyond either a
// request gets ErrBusy (answered 503, retry later), not 429: it may carry
// the right password.
const (
	maxAddrWaiting = 4
	checkWait      = 5 * time.Second
)

type failures struct {
	n     int
	reset time.Time
}

// NewFailureLimiter allows limit failures per window per address; it tracks
// at most maxClients addresses (the oldest windows are dropped first when
// full), so a flood from many addresses cannot grow it without bound.
func NewFailureLimiter(limit int, window time.Duration, maxClients int) *FailureLimiter {
	return &FailureLimiter{limit: limit, window: window, max: maxClients, now: time.Now, clients: map[string]*failures{}, gates: map[string]*gate{}}
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
// (bcrypt) is run for credentials not known at once: an address over the
// limit gets the check only through Admit.
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

// Admit waits for addr's turn to run one costly check (bcrypt), so that a
// flood of guesses from an address over its limit costs at most one check
// at a time, whatever the number of its connections; release ends the
// turn. The wait lasts at most as long as ctx and checkWait; with
// maxAddrWaiting already waiting it fails at once with ErrBusy.
func (l *FailureLimiter) Admit(ctx context.Context, addr string) (release func(), err error) {
	if l == nil {
		return func() {}, nil
	}
	l.mu.Lock()
	g := l.gates[addr]
	if g == nil {
		g = &gate{slot: make(chan struct{}, 1)}
		l.gates[addr] = g
	}
	if g.users > maxAddrWaiting {
		l.mu.Unlock()
		return nil, ErrBusy
	}
	g.users++
	l.mu.Unlock()
	leave := func() {
		l.mu.Lock()
		if g.users--; g.users == 0 {
			delete(l.gates, addr)
		}
		l.mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(ctx, checkWait)
	defer cancel()
	select {
	case g.slot <- struct{}{}:
		return sync.OnceFunc(func() {
			<-g.slot
			leave()
		}), nil
	case <-ctx.Done():
		leave()
		return nil, fmt.Errorf("waiting for the password check of this address: %w", ctx.Err())
	}
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
