// Package retry is the one rule for waiting between tries, used by every
// loop that retries (the stream's creation, PULL reads, catalogue calls):
// an exponential backoff with jitter, capped, that a server's Retry-After
// overrides, and a wait that ends with its context. One place, so that no
// two loops disagree on jitter or caps, as thanos' runutil does for its
// components.
package retry

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Backoff yields the waits between tries: First, then doubling up to Max,
// each with "equal jitter" (half fixed, half random), so that replicas that
// failed together do not retry together, yet no wait falls below half its
// step. The zero value waits 1 s doubling to 1 min.
type Backoff struct {
	First, Max time.Duration
	step       time.Duration
}

// Next is the wait before the next try.
func (b *Backoff) Next() time.Duration {
	first, most := b.First, b.Max
	if first <= 0 {
		first = time.Second
	}
	if most <= 0 {
		most = time.Minute
	}
	if b.step <= 0 {
		b.step = first
	}
	d := min(b.step, most)
	b.step = min(b.step*2, most)
	return Jitter(d)
}

// Reset starts again from First (after a success).
func (b *Backoff) Reset() { b.step = 0 }

// Jitter is d/2 plus a random part of up to d/2.
func Jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// Sleep waits d, or until ctx ends (then it returns ctx's error).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Every calls fn until ctx ends: at once when now is true, and every
// interval after each call ends (a slow call delays the next rather than
// piling calls up). It is the one shape of the periodic background work
// (checks, sweeps, watches), so that each says what it does, not how it
// waits.
func Every(ctx context.Context, every time.Duration, now bool, fn func()) {
	first := every
	if now {
		first = 0
	}
	t := time.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fn()
		t.Reset(every)
	}
}

// RetryAfter reads a Retry-After header (RFC 9110 10.2.3: delay-seconds or
// an HTTP-date) as a wait from now, capped at most; ok is false when the
// header is absent or unreadable (the caller's backoff applies then). A
// date in the past is no wait.
func RetryAfter(h string, now time.Time, most time.Duration) (d time.Duration, ok bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(h, 10, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		if s > int64(most/time.Second) {
			return most, true
		}
		return time.Duration(s) * time.Second, true
	}
	t, err := http.ParseTime(h)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), most), true
}
