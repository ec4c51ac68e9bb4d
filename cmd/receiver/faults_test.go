package main

import (
	"bytes"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cdse-jetstream/receiver/internal/natstest"
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
}

func newLoadGen(t *testing.T) *loadGen {
	body, err := os.ReadFile(filepath.Join("..", "..", "testdata", "notifications", "created-s2.json"))
	if err != nil {
		t.Fatal(err)
	}
	return &loadGen{
		template: body,
		pid:      []byte("0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f"),
		client:   &http.Client{Timeout: 10 * time.Second},
		ledger:   &ledger{acked: map[string]bool{}},
	}
}

// run posts from workers until stop is closed: mostly new products, about a
// third of the requests repeating a product already sent (acknowledged or
// not), as the catalogue's retries and duplicate deliveries do.
func (g *loadGen) run(addr string, workers int, stop <-chan struct{}) (sent, ok int64) {
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
				id, again := "", r.IntN(3) == 0
				if again {
					id, again = g.ledger.pick(r)
				}
				if !again {
					id = uuid.NewString()
				}
				g.ledger.sent(id)
				body := bytes.ReplaceAll(g.template, g.pid, []byte(id))
				req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/notifications", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.SetBasicAuth(user, password)
				nSent.Add(1)
				resp, err := g.client.Do(req)
				if err != nil {
					continue // killed mid-request: no answer, so not acknowledged
				}
				resp.Body.Close()
				if resp.StatusCode/100 == 2 {
					g.ledger.ok(id)
					nOK.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return nSent.Load(), nOK.Load()
}

// verify checks the stream against the ledger: every acknowledged product
// exactly once, no product twice.
func (g *loadGen) verify(t *testing.T, natsURL string) {
	t.Helper()
	js, closeNC := natstest.JetStream(t, natsURL)
	defer closeNC()
	msgs := natstest.StreamMessages(t, js, "CDSE_PRODUCTS")
	seen := natstest.CountBy(msgs, "Cdse-Product-Id")
	total := len(msgs)
	acked := 0
	for key, ok := range g.ledger.acked {
		switch {
		case seen[key] > 1:
			t.Errorf("product %s stored %d times", key, seen[key])
		case ok && seen[key] != 1:
			t.Errorf("product %s got a 2xx but is not in the stream", key)
		}
		if ok {
			acked++
		}
	}
	for key := range seen {
		if _, ok := g.ledger.acked[key]; !ok {
			t.Errorf("stream holds %s, which was never sent", key)
		}
	}
	t.Logf("%d products sent, %d acknowledged, %d stored", len(g.ledger.acked), acked, total)
}

// TestCrashUnderLoad kills the receiver (SIGKILL) mid-load at several
// points, restarts it on the same data directory and goes on sending.
func TestCrashUnderLoad(t *testing.T) {
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
		go func() { sent, ok = g.run(p.webhook, 8, stop); close(done) }()
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
	go func() { time.Sleep(500 * time.Millisecond); close(stop) }()
	g.run(p.webhook, 4, stop)
	g.verify(t, p.natsURL)
	p.stop(t)
}

// TestGracefulShutdownUnderLoad: SIGTERM during load; requests in flight get
// their true answer, the process exits in time, nothing acknowledged is lost.
func TestGracefulShutdownUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary under load")
	}
	dataDir := t.TempDir()
	g := newLoadGen(t)
	p := startReceiver(t, dataDir)
	stop := make(chan struct{})
	var sent, ok int64
	done := make(chan struct{})
	go func() { sent, ok = g.run(p.webhook, 8, stop); close(done) }()
	time.Sleep(400 * time.Millisecond)
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
