package fetch

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/oauth2"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/fetcher/target"
	"github.com/cdse-jetstream/receiver/internal/fetcher/target/file"
)

// hostile is a download service on loopback that answers every request
// with handle; the Fetcher's download URL is its own origin.
func hostile(t *testing.T, handle http.HandlerFunc, o func(*Options)) (*Fetcher, string) {
	t.Helper()
	srv := httptest.NewServer(handle)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	tgt, err := file.New(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{DownloadURL: srv.URL + "/odata/v1", Backoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, IdleTimeout: 5 * time.Second, MaxAttempts: 2}
	if o != nil {
		o(&opts)
	}
	fe, err := New(opts, bearer{}, tgt, prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return fe, dir
}

// bearer is a fixed token for the hostile servers, which check none.
type bearer struct{}

func (bearer) Token(context.Context) (*oauth2.Token, error) {
	return &oauth2.Token{AccessToken: "t", TokenType: "Bearer"}, nil
}
func (bearer) Invalidate(*oauth2.Token) {}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestLongRetryAfterIsHandedBack: a Retry-After longer than MaxHold is
// never slept holding the download: Fetch returns at once with the wait,
// for the caller to give the message back with it.
func TestLongRetryAfterIsHandedBack(t *testing.T) {
	fe, _ := hostile(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "999999")
		http.Error(w, "too many requests", http.StatusTooManyRequests)
	}, func(o *Options) { o.MaxRetryAfter = 5 * time.Minute; o.MaxHold = 30 * time.Second })
	start := time.Now()
	_, err := fe.Fetch(ctxFor(t, 20*time.Second), Product{ID: "a", Name: "p.SAFE", ContentLength: 10}, "p.SAFE.zip", nil)
	var d *DeferError
	if !errors.As(err, &d) || d.Wait < 5*time.Minute || Permanent(err) {
		t.Fatalf("err %v, want a DeferError of at least the 5 min cap", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Fetch held the download %v", took)
	}
}

// TestIdentityEncodingOnly: the product is asked for as stored, and an
// answer compressed anyway (1 MB of gzip can be 1 GiB) is refused, not
// inflated.
func TestIdentityEncodingOnly(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write(bytes.Repeat([]byte{0}, 4<<20))
	zw.Close()
	fe, dir := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Header.Get("Accept-Encoding"))
		mu.Unlock()
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(zipped.Bytes())
	}, nil)
	_, err := fe.Fetch(ctxFor(t, 20*time.Second), Product{ID: "a", Name: "p.SAFE"}, "p.SAFE.zip", nil)
	if err == nil || !strings.Contains(err.Error(), `Content-Encoding "gzip"`) {
		t.Errorf("a gzip answer: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range asked {
		if a != "identity" {
			t.Errorf("Accept-Encoding %q, want identity", a)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "p.SAFE.zip")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stored: %v", err)
	}
}

// TestUnknownLengthIsCapped: a product without a length in its
// notification and a body that never ends stops at MaxUnknownSize, for
// good, its partial removed.
func TestUnknownLengthIsCapped(t *testing.T) {
	fe, dir := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}, func(o *Options) { o.MaxUnknownSize = 1 << 20 })
	_, err := fe.Fetch(ctxFor(t, 20*time.Second), Product{ID: "a", Name: "p.SAFE"}, "p.SAFE.zip", nil)
	if !errors.Is(err, ErrTooLarge) || !Permanent(err) || !strings.Contains(err.Error(), "FETCH_MAX_UNKNOWN_SIZE") {
		t.Fatalf("err %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".partial", "*"))
	if len(left) > 0 {
		t.Errorf("partial left: %v", left)
	}
}

// TestMinRate: a download that drips below MinRate over its window is cut
// (ErrTooSlow, not permanent, the partial kept to resume), releasing its
// slot rather than being kept alive for ever.
func TestMinRate(t *testing.T) {
	fe, dir := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000000")
		for r.Context().Err() == nil {
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}, func(o *Options) { o.MinRate = 1000; o.MinRateWindow = time.Second })
	_, err := fe.Fetch(ctxFor(t, 20*time.Second), Product{ID: "a", Name: "p.SAFE", ContentLength: 1000000}, "p.SAFE.zip", nil)
	if !errors.Is(err, ErrTooSlow) || Permanent(err) {
		t.Fatalf("err %v, want ErrTooSlow", err)
	}
	if st, err := os.Stat(filepath.Join(dir, ".partial", "p.SAFE.zip.part")); err != nil || st.Size() == 0 {
		t.Errorf("the partial is not kept: %v", err)
	}
}

// TestOverlongBodyNeverReachesTheLog: a download service sending more
// than its Content-Length leaves bytes on the connection; Go's transport
// would log them as an "unsolicited response" on a pooled connection. Each
// request goes on a connection of its own (Connection: close), and no
// product byte reaches the log.
func TestOverlongBodyNeverReachesTheLog(t *testing.T) {
	var logged bytes.Buffer
	var lmu sync.Mutex
	log.SetOutput(writerFunc(func(b []byte) (int, error) { lmu.Lock(); defer lmu.Unlock(); return logged.Write(b) }))
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	var closes []bool
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				for {
					req, err := http.ReadRequest(bufioReader(c))
					if err != nil {
						return
					}
					mu.Lock()
					closes = append(closes, req.Close)
					mu.Unlock()
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789SECRETBYTES-SECRETBYTES")
				}
			}(c)
		}
	}()
	tgt, _ := file.New(t.TempDir(), 0)
	fe, err := New(Options{DownloadURL: "http://" + ln.Addr().String() + "/odata/v1", MaxAttempts: 1}, bearer{}, tgt, prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := fe.Fetch(ctxFor(t, 10*time.Second), Product{ID: "a", Name: fmt.Sprintf("p%d.SAFE", i), ContentLength: 10}, fmt.Sprintf("p%d.SAFE.zip", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(closes) != 3 {
		t.Errorf("%d requests, want 3", len(closes))
	}
	for i, c := range closes {
		if !c {
			t.Errorf("request %d without Connection: close: its connection would be pooled", i)
		}
	}
	lmu.Lock()
	defer lmu.Unlock()
	if strings.Contains(logged.String(), "SECRET") {
		t.Errorf("product bytes in the log: %s", logged.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// TestLockedKeyWaitsThenFindsItStored: a second fetch of a key being
// downloaded (a redelivery while the first still runs) waits for it and
// finds the product stored: it never fails on the lock, and the product
// is downloaded once.
func TestLockedKeyWaitsThenFindsItStored(t *testing.T) {
	f := setup(t, cdsesim.Options{DownloadRate: 4 << 20})
	p, sp := f.product(t, sized(6<<20))
	fe := f.fetcher(t, f.options(), nil)
	ctx := ctxFor(t, 30*time.Second)
	errs := make(chan error, 2)
	results := make(chan Result, 2)
	for range 2 {
		go func() {
			r, err := fe.Fetch(ctx, p, "k/"+p.Name+".zip", nil)
			results <- r
			errs <- err
		}()
	}
	already := 0
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("a fetch of a locked key failed: %v", err)
		}
		if (<-results).AlreadyThere {
			already++
		}
	}
	if already != 1 {
		t.Errorf("%d of 2 fetches found it there, want 1", already)
	}
	got, _ := os.ReadFile(filepath.Join(f.dir, "k", p.Name+".zip"))
	if !bytes.Equal(got, content(t, sp)) {
		t.Error("bytes differ")
	}
}

// TestLockTakenOver: a partial locked by a fetch silent past LockWait (a
// stopped replica) is taken over; the silent one's Commit then fails
// rather than rename the new fetch's bytes.
func TestLockTakenOver(t *testing.T) {
	f := setup(t, cdsesim.Options{})
	p, sp := f.product(t, sized(1<<20))
	tgt, _ := file.New(f.dir, 0)
	o := f.options()
	o.LockWait = 300 * time.Millisecond
	fe := f.fetcher(t, o, tgt)
	ctx := ctxFor(t, 20*time.Second)
	key := p.Name + ".zip"
	stale, err := tgt.Open(ctx, key, p.ContentLength, target.Stored{})
	if err != nil {
		t.Fatal(err)
	}
	stale.Write([]byte("not the product"))
	if _, err := fe.Fetch(ctx, p, key, nil); err != nil {
		t.Fatalf("fetch of a key locked by a silent fetch: %v", err)
	}
	got, _ := os.ReadFile(filepath.Join(f.dir, key))
	if !bytes.Equal(got, content(t, sp)) {
		t.Fatal("bytes differ")
	}
	if err := stale.Commit(ctx, target.Stored{}); err == nil {
		t.Error("the silent fetch committed over the one that took it over")
	}
	stale.Abort(false)
	if got, _ := os.ReadFile(filepath.Join(f.dir, key)); !bytes.Equal(got, content(t, sp)) {
		t.Error("the stored product changed after the silent fetch woke")
	}
}

func bufioReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }
