package retry

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestBackoffDoublesWithinJitterUpToMax(t *testing.T) {
	b := Backoff{First: 100 * time.Millisecond, Max: time.Second}
	steps := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for range 50 { // the jitter is random: every draw must hold
		b.Reset()
		for i, s := range steps {
			step := s * time.Millisecond
			if d := b.Next(); d < step/2 || d > step {
				t.Fatalf("try %d: %s, want within [%s, %s]", i, d, step/2, step)
			}
		}
	}
	var zero Backoff
	if d := zero.Next(); d < 500*time.Millisecond || d > time.Second {
		t.Errorf("zero value's first wait: %s", d)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		h    string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"7", 7 * time.Second, true},
		{" 0 ", 0, true},
		{"-1", 0, false},
		{"99999", time.Minute, true}, // capped
		{now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{now.Add(time.Hour).Format(http.TimeFormat), time.Minute, true},
		{"Tuesday", 0, false},
		{"1.5", 0, false},
	} {
		d, ok := RetryAfter(c.h, now, time.Minute)
		if d != c.want || ok != c.ok {
			t.Errorf("RetryAfter(%q) = %s, %v; want %s, %v", c.h, d, ok, c.want, c.ok)
		}
	}
}

func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep on an ended context: %v", err)
	}
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Sleep: %v", err)
	}
}

// TestEvery: at once when asked, then every interval after each call,
// until the context ends; never after.
func TestEvery(t *testing.T) {
	for _, now := range []bool{true, false} {
		ctx, cancel := context.WithCancel(context.Background())
		calls := make(chan time.Time, 10)
		start := time.Now()
		done := make(chan struct{})
		go func() {
			Every(ctx, 30*time.Millisecond, now, func() {
				calls <- time.Now()
				if len(calls) == 3 {
					cancel()
				}
			})
			close(done)
		}()
		<-done
		if len(calls) != 3 {
			t.Fatalf("now=%v: %d calls", now, len(calls))
		}
		first := (<-calls).Sub(start)
		if now && first >= 30*time.Millisecond {
			t.Errorf("now=true: first call after %v", first)
		}
		if !now && first < 30*time.Millisecond {
			t.Errorf("now=false: first call after %v, before the interval", first)
		}
		cancel()
	}
}
