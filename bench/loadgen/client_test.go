package loadgen

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestClientAgainstNetHTTP checks the generator's own HTTP client against
// the answers net/http's server gives: each kind of body framing, the
// request as the server sees it, and keep-alive.
func TestClientAgainstNetHTTP(t *testing.T) {
	var (
		mu     sync.Mutex
		bodies []string
		conns  atomic.Int32
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != "user" || p != "pa:ss" || r.Method != http.MethodPost || r.URL.RequestURI() != "/hook?x=1" ||
			r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusTeapot)
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		switch string(b) {
		case "204":
			w.WriteHeader(http.StatusNoContent)
		case "json":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]int{"accepted": 1})
		case "chunked":
			_, _ = io.WriteString(w, "part one,")
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, "part two")
		case "close":
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"error":"x"}`)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	tg, err := newTarget(srv.URL+"/hook?x=1", "user", "pa:ss")
	if err != nil {
		t.Fatal(err)
	}
	c := &conn{timeout: 5 * time.Second}
	defer c.close()
	for _, tc := range []struct {
		body      string
		status    int
		wantConns int32 // connections opened so far, after this request
	}{
		{"204", 204, 1},
		{"json", 200, 1},
		{"chunked", 200, 1},
		{"204", 204, 1},
		{"close", 503, 1},
		{"json", 200, 2}, // a new connection after the server's close
		{"json", 200, 2},
	} {
		status, err := c.do(tg, []byte(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		if status != tc.status {
			t.Errorf("%s: status %d, want %d", tc.body, status, tc.status)
		}
		if got := conns.Load(); got != tc.wantConns {
			t.Errorf("after %s: %d connections, want %d", tc.body, got, tc.wantConns)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "204 json chunked 204 close json json"; strings.Join(bodies, " ") != want {
		t.Errorf("server saw bodies %q, want %q", bodies, want)
	}
}

func TestRunCountsEveryRequest(t *testing.T) {
	var seen sync.Map
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		n.Add(1)
		if _, dup := seen.LoadOrStore(string(b), true); dup {
			w.WriteHeader(http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	res := Run(context.Background(), Options{URL: srv.URL, Template: []byte(`{"Id":"ID","Name":"ID.SAFE"}`), TemplateID: "ID",
		Conns: 4, Duration: 200 * time.Millisecond})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if res.OK == 0 || res.Errors != 0 || int64(res.Requests) != n.Load() || len(res.Acked) != res.OK || len(res.Latencies) != res.Requests {
		t.Fatalf("result %+v does not match the %d requests the server saw", res, n.Load())
	}
	// Every occurrence of the template id is replaced by the same fresh id.
	seen.Range(func(k, _ any) bool {
		var v struct{ Id, Name string }
		if err := json.Unmarshal([]byte(k.(string)), &v); err != nil || v.Id == "ID" || v.Name != v.Id+".SAFE" {
			t.Errorf("body %s", k)
		}
		return true
	})
	if bad := Run(context.Background(), Options{URL: "https://example.invalid/", Duration: time.Millisecond}); bad.Err == nil {
		t.Error("an https URL was accepted")
	}
}
