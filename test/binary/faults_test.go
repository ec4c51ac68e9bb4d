package binary_test

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// ledger records, per dedupe key, whether any request carrying it got a 2xx.
type ledger struct {
	mu    sync.Mutex
	acked map[string]bool // key → a 2xx was seen
	keys  []string        // every key sent, in order
}

func (l *ledger) sent(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.acked[key]; !ok {
		l.acked[key] = false
		l.keys = append(l.keys, key)
	}
}

func (l *ledger) ok(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acked[key] = true
}

// pick returns a key already sent, if any.
func (l *ledger) pick(r *rand.Rand) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.keys) == 0 {
		return "", false
	}
	return l.keys[r.IntN(len(l.keys))], true
}

type loadGen struct {
	template []byte
	pid      []byte
	client   *http.Client
	ledger   *ledger
	// refused records the invalid bodies sent: a key is acknowledged when
	// the answer said it was quarantined.
	refused *ledger
	// acked counts the products acknowledged, over every run.
	acked atomic.Int64
}

// waitAcked waits until n more products than at mark are acknowledged.
func (g *loadGen) waitAcked(t *testing.T, mark, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for g.acked.Load() < mark+n {
		if time.Now().After(deadline) {
			t.Fatalf("%d products acknowledged in 30 s, want %d", g.acked.Load()-mark, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func newLoadGen(t *testing.T) *loadGen {
	return &loadGen{
		template: fixtures.Notification(t, "created-s2.json"),
		pid:      []byte("0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f"),
		client:   &http.Client{Timeout: 10 * time.Second},
		ledger:   &ledger{acked: map[string]bool{}},
		refused:  &ledger{acked: map[string]bool{}},
	}
}

// run posts from workers until stop is closed: mostly new products, about a
// third of the requests repeating a product already sent (acknowledged or
// not), as the catalogue's retries and duplicate deliveries do; one request
// in eight is a body the validator refuses (new or repeated), which must be
// quarantined once.
func (g *loadGen) run(t *testing.T, addr string, workers int, stop <-chan struct{}) (sent, ok int64) {
	var wg sync.WaitGroup
	var nSent, nOK atomic.Int64
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for {
				select {
				case <-stop:
					return
				default:
				}
				l, invalid := g.ledger, r.IntN(8) == 0
				if invalid {
					l = g.refused
				}
				id, again := "", r.IntN(3) == 0
				if again {
					id, again = l.pick(r)
				}
				if !again {
					id = uuid.NewString()
				}
				l.sent(id)
				body := bytes.ReplaceAll(g.template, g.pid, []byte(id))
				if invalid {
					body = bytes.Replace(body, []byte(`"created"`), []byte(`"Created"`), 1)
				}
				req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/notifications", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.SetBasicAuth(user, password)
				nSent.Add(1)
				resp, err := g.client.Do(req)
				if err != nil {
					continue // killed mid-request: no answer, so not acknowledged
				}
				answer, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case !invalid && resp.StatusCode/100 == 2:
					l.ok(id)
					nOK.Add(1)
					g.acked.Add(1)
				case invalid && resp.StatusCode == http.StatusBadRequest && bytes.Contains(answer, []byte(`"quarantined":true`)):
					l.ok(id)
				case invalid && resp.StatusCode != http.StatusServiceUnavailable:
					t.Errorf("invalid body answered %d: %s", resp.StatusCode, answer)
				}
			}
		}()
	}
	wg.Wait()
	return nSent.Load(), nOK.Load()
}

// verify checks the streams against the ledgers: every acknowledged
// product exactly once on the product stream, none twice; every refused body
// answered "quarantined" exactly once in the quarantine, none twice, and
// none of them on the product stream.
func (g *loadGen) verify(t *testing.T, natsURL string) {
	t.Helper()
	js, closeNC := natstest.JetStream(t, natsURL)
	defer closeNC()
	seen := natstest.CountBy(natstest.StreamMessages(t, js, "CDSE_PRODUCTS"), "Cdse-Product-Id")
	acked := g.ledger.check(t, seen, "product stream")
	t.Logf("%d products sent, %d acknowledged", len(g.ledger.acked), acked)
	kept := natstest.CountBy(natstest.StreamMessages(t, js, "CDSE_QUARANTINE"), "Cdse-Product-Id")
	quarantined := g.refused.check(t, kept, "quarantine")
	for key := range g.refused.acked {
		if seen[key] != 0 {
			t.Errorf("refused body %s reached the product stream", key)
		}
	}
	t.Logf("%d invalid bodies sent, %d answered quarantined", len(g.refused.acked), quarantined)
	if quarantined == 0 {
		t.Error("no invalid body was answered quarantined; the test proves nothing about the quarantine")
	}
}

// check compares what a stream holds (count by product id) with the
// ledger: each acknowledged key once, no key twice, nothing never sent. It
// returns how many keys were acknowledged.
func (l *ledger) check(t *testing.T, stored map[string]int, where string) (acked int) {
	t.Helper()
	for key, ok := range l.acked {
		switch {
		case stored[key] > 1:
			t.Errorf("%s: %s stored %d times", where, key, stored[key])
		case ok && stored[key] != 1:
			t.Errorf("%s: %s was acknowledged but is not stored", where, key)
		}
		if ok {
			acked++
		}
	}
	for key := range stored {
		if _, ok := l.acked[key]; !ok {
			t.Errorf("%s holds %s, which was never sent", where, key)
		}
	}
	return acked
}

// TestCrashUnderLoad kills the receiver (SIGKILL) mid-load at several
// points, restarts it on the same data directory and goes on sending.
func TestCrashUnderLoad(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the binary under load")
	}
	dataDir := t.TempDir()
	g := newLoadGen(t)
	var p *proc
	for round, killAfter := range []time.Duration{300 * time.Millisecond, 700 * time.Millisecond, 150 * time.Millisecond} {
		p = startReceiver(t, dataDir)
		stop := make(chan struct{})
		var sent, ok int64
		done := make(chan struct{})
		mark := g.acked.Load()
		go func() { sent, ok = g.run(t, p.webhook, 8, stop); close(done) }()
		// Under load first (a few acknowledged), then killed at a moment
		// that differs from round to round.
		g.waitAcked(t, mark, 10)
		time.Sleep(killAfter)
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.done
		close(stop)
		<-done
		t.Logf("round %d: killed after %s: %d requests, %d acknowledged", round, killAfter, sent, ok)
		if ok == 0 {
			t.Fatalf("round %d: nothing acknowledged before the kill; the test proves nothing", round)
		}
	}
	// The survivor: resend a part of everything (as the catalogue's retries
	// would), then check the stream.
	p = startReceiver(t, dataDir)
	stop := make(chan struct{})
	mark := g.acked.Load()
	go func() { g.waitAcked(t, mark, 200); close(stop) }()
	g.run(t, p.webhook, 4, stop)
	g.verify(t, p.natsURL)
	p.stop(t)
}

// TestGracefulShutdownUnderLoad: SIGTERM during load; requests in flight get
// their true answer, the process exits in time, nothing acknowledged is lost.
func TestGracefulShutdownUnderLoad(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the binary under load")
	}
	dataDir := t.TempDir()
	g := newLoadGen(t)
	p := startReceiver(t, dataDir)
	stop := make(chan struct{})
	var sent, ok int64
	done := make(chan struct{})
	go func() { sent, ok = g.run(t, p.webhook, 8, stop); close(done) }()
	g.waitAcked(t, 0, 50) // under load
	termAt := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		t.Fatal("no exit within the shutdown bound")
	}
	if p.err != nil {
		t.Fatalf("exit status %v", p.err)
	}
	t.Logf("exited %s after SIGTERM", time.Since(termAt).Round(time.Millisecond))
	// After exit, nobody listens.
	if _, err := http.Post("http://"+p.webhook+"/notifications", "application/json", nil); err == nil {
		t.Error("webhook still accepts connections after exit")
	}
	close(stop)
	<-done
	t.Logf("%d requests, %d acknowledged", sent, ok)

	p2 := startReceiver(t, dataDir)
	g.verify(t, p2.natsURL)
	p2.stop(t)
}
