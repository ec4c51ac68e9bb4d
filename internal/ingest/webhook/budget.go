package webhook

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"
)

// Defaults of the body budget.
const (
	// defaultBodyBudget bounds the bytes of request bodies held in memory
	// at once. Bodies are reserved as their bytes arrive, so it takes that
	// many bytes actually sent, not promised by Content-Length, to fill it:
	// about 4 500 of the catalogue's 7 KB notifications at once.
	defaultBodyBudget = 32 << 20
	// defaultBodyWait is the longest a body waits for room at each step.
	defaultBodyWait = 2 * time.Second
)

// bodyBudget is a weighted semaphore of bytes (what golang.org/x/sync's
// semaphore does, which the module does not require directly): the room of
// the request bodies in memory. Without it every authenticated connection
// held a buffer of its Content-Length from its first byte, and a thousand
// slow ones took half a gigabyte. Waiters are served in order, so a large
// body is not starved by small ones.
type bodyBudget struct {
	size int64

	mu      sync.Mutex
	used    int64
	waiters list.List // of *budgetWaiter
}

type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

func newBodyBudget(size int64) *bodyBudget {
	return &bodyBudget{size: size}
}

// inUse is the room reserved now (a metric).
func (b *bodyBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// acquire reserves n bytes, waiting for them at most wait and as long as
// ctx. The caller never asks for more than size (New makes the budget hold
// the largest body twice, raw and decompressed).
func (b *bodyBudget) acquire(ctx context.Context, n int64, wait time.Duration) error {
	b.mu.Lock()
	if b.used+n <= b.size && b.waiters.Len() == 0 {
		b.used += n
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	elem := b.waiters.PushBack(w)
	b.mu.Unlock()

	timer := time.NewTimer(wait)
	defer timer.Stop()
	var cause error
	select {
	case <-w.ready:
		return nil
	case <-timer.C:
		cause = fmt.Errorf("%w: no room for %d bytes within %s", errNoRoomForBody, n, wait)
	case <-ctx.Done():
		cause = fmt.Errorf("%w: %w", errNoRoomForBody, ctx.Err())
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready:
		// Served while giving up: give the room back.
		b.used -= n
		b.serve()
	default:
		front := b.waiters.Front() == elem
		b.waiters.Remove(elem)
		if front {
			b.serve() // those behind may fit now
		}
	}
	return cause
}

// release gives back n bytes.
func (b *bodyBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.serve()
	b.mu.Unlock()
}

// serve hands room to the waiters in order, as far as it goes. b.mu is held.
func (b *bodyBudget) serve() {
	for e := b.waiters.Front(); e != nil; e = b.waiters.Front() {
		w := e.Value.(*budgetWaiter)
		if b.used+w.n > b.size {
			return
		}
		b.used += w.n
		b.waiters.Remove(e)
		close(w.ready)
	}
}

// bodyLease is one request's share of the budget: the capacity of its body
// buffers, reserved before each is allocated or grown, all given back when
// the request is answered.
type bodyLease struct {
	budget *bodyBudget
	ctx    context.Context
	wait   time.Duration
	held   int64
}

// grow reserves n more bytes.
func (l *bodyLease) grow(n int64) error {
	if n <= 0 {
		return nil
	}
	if err := l.budget.acquire(l.ctx, n, l.wait); err != nil {
		return err
	}
	l.held += n
	return nil
}

// done gives everything back.
func (l *bodyLease) done() {
	l.budget.release(l.held)
	l.held = 0
}
