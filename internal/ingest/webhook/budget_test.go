package webhook

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// TestBodyBudget: room is handed out in order, up to the size; a waiter
// gives up after its wait or when its request ends, and the room it did
// not get goes to those behind it.
func TestBodyBudget(t *testing.T) {
	const wait = 5 * time.Second
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, b *bodyBudget)
	}{
		{"within the size at once", func(t *testing.T, b *bodyBudget) {
			for range 4 {
				if err := b.acquire(ctx, 25, 0); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"beyond it only after the wait", func(t *testing.T, b *bodyBudget) {
			if err := b.acquire(ctx, 100, 0); err != nil {
				t.Fatal(err)
			}
			if err := b.acquire(ctx, 1, 10*time.Millisecond); !errors.Is(err, errNoRoomForBody) {
				t.Fatalf("got %v, want errNoRoomForBody", err)
			}
			if b.inUse() != 100 || b.waiters.Len() != 0 {
				t.Fatalf("a waiter that gave up left %d in use, %d waiting", b.inUse(), b.waiters.Len())
			}
		}},
		{"in order, and a release serves the waiters", func(t *testing.T, b *bodyBudget) {
			if err := b.acquire(ctx, 60, 0); err != nil {
				t.Fatal(err)
			}
			big, small := make(chan error, 1), make(chan error, 1)
			go func() { big <- b.acquire(ctx, 80, wait) }()
			waitUntil(t, func() bool { return queued(b) == 1 })
			go func() { small <- b.acquire(ctx, 10, wait) }()
			waitUntil(t, func() bool { return queued(b) == 2 })
			// 40 bytes are free: enough for the small one, but it waits
			// behind the big one, which would otherwise starve.
			b.release(60)
			if err := <-big; err != nil {
				t.Fatal(err)
			}
			if err := <-small; err != nil {
				t.Fatal(err)
			}
			if b.inUse() != 90 {
				t.Fatalf("%d in use, want 90", b.inUse())
			}
		}},
		{"a request that ends lets those behind it in", func(t *testing.T, b *bodyBudget) {
			if err := b.acquire(ctx, 60, 0); err != nil {
				t.Fatal(err)
			}
			gone, cancel := context.WithCancel(ctx)
			big, small := make(chan error, 1), make(chan error, 1)
			go func() { big <- b.acquire(gone, 80, wait) }()
			waitUntil(t, func() bool { return queued(b) == 1 })
			go func() { small <- b.acquire(ctx, 10, wait) }()
			waitUntil(t, func() bool { return queued(b) == 2 })
			cancel()
			if err := <-big; !errors.Is(err, errNoRoomForBody) || !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want errNoRoomForBody and context.Canceled", err)
			}
			if err := <-small; err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newBodyBudget(100)) })
	}
}

func queued(b *bodyBudget) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters.Len()
}

// waitUntil polls cond for at most 10 s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// metricValue sums the series of the named counter or gauge whose labels
// include want (name=value pairs).
func metricValue(t *testing.T, reg *prometheus.Registry, name string, want ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		var sum float64
	series:
		for _, m := range mf.Metric {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(want); i += 2 {
				if labels[want[i]] != want[i+1] {
					continue series
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
		return sum
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// heapInUse is the heap in use once garbage is collected (twice: the
// first collection moves the body pool's buffers to its victim cache, the
// second frees them).
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// slowBody opens an authenticated request that promises length bytes and
// sends the first few.
func (e *env) slowBody(t *testing.T, length int) net.Conn {
	t.Helper()
	c := e.rawConn(t)
	if _, err := fmt.Fprintf(c, "POST /notifications HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n{\"Sub", authHeader(), length); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSlowBodiesHoldBoundedMemory: authenticated connections that promise
// 1 MiB bodies and trickle a few bytes hold memory for what they sent, not
// what they promised, and it comes back once they are gone.
func TestSlowBodiesHoldBoundedMemory(t *testing.T) {
	const (
		conns = 100
		// Each holds its 16 KiB buffer and what its connection costs the
		// server and the test (a few KiB); a buffer of the promised size
		// would be 100 MiB.
		whileOpen = 24 << 20
		after     = 8 << 20
	)
	e := startWithTimeouts(t, natstest.RunJetStream(t), nil, func(*Options) {},
		Timeouts{ReadHeader: 5 * time.Second, Read: time.Minute, Publish: 2 * time.Second})
	base := heapInUse()
	open := make([]net.Conn, 0, conns)
	for range conns {
		open = append(open, e.slowBody(t, 1<<20))
	}
	inUse := func() float64 { return metricValue(t, e.reg, "cdse_receiver_http_body_bytes_in_use") }
	// Every request is reading its body once each holds a buffer.
	waitUntil(t, func() bool { return inUse() >= conns*16<<10 })
	if grown := int64(heapInUse()) - int64(base); grown > whileOpen {
		t.Errorf("the heap grew by %d MiB with %d slow bodies open, want at most %d MiB", grown>>20, conns, whileOpen>>20)
	}
	for _, c := range open {
		c.Close()
	}
	waitUntil(t, func() bool { return inUse() == 0 })
	if grown := int64(heapInUse()) - int64(base); grown > after {
		t.Errorf("the heap is still %d MiB above where it was once the slow bodies are gone, want at most %d MiB", grown>>20, after>>20)
	}
	if resp, b := e.post(t, fixtures.Notification(t, "created-s2.json")); resp.StatusCode != 200 {
		t.Fatalf("server unhealthy afterwards: %d %s", resp.StatusCode, b)
	}
}

// TestBodyBudgetFull: once the bodies being received fill the budget, a
// request waits for room at most BodyWait, then gets 503 with Retry-After
// and the JSON error; room given back is used again.
func TestBodyBudgetFull(t *testing.T) {
	const maxBody = 64 << 10
	e := startWithTimeouts(t, natstest.RunJetStream(t), nil, func(o *Options) {
		o.MaxBody = maxBody
		o.BodyBudget = 1 // raised to the least: the largest body twice
		o.BodyWait = 200 * time.Millisecond
	}, Timeouts{ReadHeader: 5 * time.Second, Read: time.Minute, Publish: 2 * time.Second})
	inUse := func() float64 { return metricValue(t, e.reg, "cdse_receiver_http_body_bytes_in_use") }
	busy := func() float64 { return metricValue(t, e.reg, "cdse_receiver_bodies_not_kept_total", "reason", "busy") }
	// Open slow bodies until one finds no room: each holds at least 16 KiB
	// of a budget of 128 KiB, so that happens within 9.
	var held []net.Conn
	var refused net.Conn
	for len(held) < 9 && refused == nil {
		before := inUse()
		c := e.slowBody(t, maxBody)
		waitUntil(t, func() bool { return inUse() > before || busy() > 0 })
		if busy() > 0 {
			refused = c
		} else {
			held = append(held, c)
		}
	}
	if refused == nil {
		t.Fatalf("%d slow bodies held %v bytes and none was refused", len(held), inUse())
	}
	if got := inUse(); got > 2*(maxBody+1) {
		t.Errorf("%v bytes in use, over the budget of %d", got, 2*(maxBody+1))
	}
	refused.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(refused), nil)
	if err != nil {
		t.Fatalf("no response: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), `"error":"unavailable"`) {
		t.Fatalf("got %d (Retry-After %q) %s, want 503 unavailable with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	// Slow bodies that go away give their room back (counted as
	// incomplete), and the next request gets it.
	for _, c := range held {
		c.Close()
	}
	waitUntil(t, func() bool { return inUse() == 0 })
	if got := metricValue(t, e.reg, "cdse_receiver_bodies_not_kept_total", "reason", "incomplete"); got != float64(len(held)) {
		t.Errorf("%v incomplete bodies counted, want %d", got, len(held))
	}
	if resp, b := e.post(t, fixtures.Notification(t, "created-s2.json")); resp.StatusCode != 200 {
		t.Fatalf("with room again: %d %s", resp.StatusCode, b)
	}
}
