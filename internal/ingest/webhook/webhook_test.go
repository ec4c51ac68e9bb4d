package webhook

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/ingest/quarantine"
	"github.com/cdse-jetstream/receiver/internal/receiver/auth"
	"github.com/cdse-jetstream/receiver/internal/stream/natsconn"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/publishtest"
)

const (
	user     = "cdse"
	password = "s3cret-pa55"
	stream   = "CDSE_PRODUCTS"
)

type env struct {
	url  string
	srv  *server.Server
	nc   *nats.Conn
	js   jetstream.JetStream
	reg  *prometheus.Registry
	logs *test.Hook
}

// quarantineStream is the stream of refused bodies in these tests.
const quarantineStream = "CDSE_QUARANTINE"

func start(t *testing.T, srv *server.Server) *env {
	t.Helper()
	return startWith(t, srv, func(*Options) {})
}

func startWith(t *testing.T, srv *server.Server, opt func(*Options)) *env {
	t.Helper()
	return startWithVerifier(t, srv, nil, opt)
}

// startWithVerifier is startWith with v checking the credentials (nil: the
// static user and password).
func startWithVerifier(t *testing.T, srv *server.Server, v Verifier, opt func(*Options)) *env {
	t.Helper()
	// The real server's timeouts, shortened so the tests stay quick.
	return startWithTimeouts(t, srv, v, opt, Timeouts{ReadHeader: 500 * time.Millisecond, Read: 1500 * time.Millisecond, Publish: 2 * time.Second})
}

// startWithTimeouts is startWithVerifier with the server's timeouts.
func startWithTimeouts(t *testing.T, srv *server.Server, v Verifier, opt func(*Options), to Timeouts) *env {
	t.Helper()
	logger, hook := test.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	nc, err := natsconn.Connect(natsconn.Options{URL: srv.ClientURL()}, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	reg := prometheus.NewRegistry()
	pub, err := publish.NewPublisher(nc, publish.PublisherOptions{Stream: stream, Timeout: 2 * time.Second, RecentIDs: 1000, RecentTTL: time.Hour}, reg)
	if err != nil {
		t.Fatal(err)
	}
	topo := topology.New(pub.JetStream(), topology.Options{Stream: stream, SubjectPrefix: "cdse.product", Duplicates: 24 * time.Hour,
		QuarantineStream: quarantineStream, QuarantinePrefix: "cdse.quarantine"})
	if _, err := topo.EnsureProduct(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v == nil {
		if v, err = auth.NewBasic([]auth.Credential{{User: user, Password: password}}, ""); err != nil {
			t.Fatal(err)
		}
	}
	q, err := quarantine.New(topo, 2*time.Second, reg, logger)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	o := Options{Path: "/notifications", MaxBody: 1 << 20, MaxNotifications: 100, Route: ingest.Route{Prefix: "cdse.product"}, Quarantine: q}
	opt(&o)
	e, err := New(o, pub, v, reg, logger)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(e)
	hs.Config = HTTPServer(e, to, nil)
	hs.Start()
	t.Cleanup(hs.Close)
	return &env{url: hs.URL, srv: srv, nc: nc, js: pub.JetStream(), reg: reg, logs: hook}
}

type req struct {
	method  string
	path    string
	body    []byte
	headers map[string]string
	noAuth  bool
}

func (e *env) do(t *testing.T, r req) (*http.Response, []byte) {
	t.Helper()
	if r.method == "" {
		r.method = http.MethodPost
	}
	if r.path == "" {
		r.path = "/notifications"
	}
	hr, err := http.NewRequest(r.method, e.url+r.path, bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if !r.noAuth {
		hr.SetBasicAuth(user, password)
	}
	for k, v := range r.headers {
		if v == "" {
			hr.Header.Del(k)
		} else {
			hr.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func (e *env) post(t *testing.T, body []byte) (*http.Response, []byte) {
	t.Helper()
	return e.do(t, req{body: body})
}

func (e *env) count(t *testing.T) uint64 {
	t.Helper()
	return natstest.StreamCount(t, e.js, stream)
}

func (e *env) quarantined(t *testing.T) []quarantine.Stored {
	t.Helper()
	return publishtest.Quarantined(t, e.js, quarantineStream)
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func TestResponses(t *testing.T) {
	e := start(t, natstest.RunJetStream(t))
	s2 := fixtures.Notification(t, "created-s2.json")
	basic := func(s string) string { return "Basic " + s }

	tests := []struct {
		name     string
		req      req
		status   int
		code     string // the "error" member of the body; "" for success
		contains string // a substring of the body
		kept     bool   // the body is quarantined (and the answer says so)
	}{
		{"created", req{body: s2}, 200, "", `"accepted":1`, false},
		{"same again is a duplicate", req{body: s2}, 200, "", `"duplicates":1`, false},
		{"gzip", req{body: gz(fixtures.Notification(t, "created-s1.json")), headers: map[string]string{"Content-Encoding": "gzip"}}, 200, "", `"accepted":1`, false},
		{"charset", req{body: fixtures.Notification(t, "created-s3.json"), headers: map[string]string{"Content-Type": "application/json; charset=UTF-8"}}, 200, "", `"accepted":1`, false},
		{"no content type", req{body: fixtures.Notification(t, "created-s5p.json"), headers: map[string]string{"Content-Type": ""}}, 200, "", `"accepted":1`, false},

		{"no auth", req{body: s2, noAuth: true}, 401, "unauthorized", "credentials", false},
		{"wrong password", req{body: s2, noAuth: true, headers: map[string]string{"Authorization": basic("Y2RzZTp3cm9uZw==")}}, 401, "unauthorized", "", false},
		{"wrong user", req{body: s2, noAuth: true, headers: map[string]string{"Authorization": basic("b3RoZXI6czNjcmV0LXBhNTU=")}}, 401, "unauthorized", "", false},
		{"malformed auth", req{body: s2, noAuth: true, headers: map[string]string{"Authorization": "Basic !!!"}}, 401, "unauthorized", "", false},
		{"bearer auth", req{body: s2, noAuth: true, headers: map[string]string{"Authorization": "Bearer abc"}}, 401, "unauthorized", "", false},

		{"GET", req{method: http.MethodGet}, 405, "method_not_allowed", "", false},
		{"OPTIONS", req{method: http.MethodOptions}, 405, "method_not_allowed", "", false},
		{"trailing slash", req{path: "/notifications/", body: fixtures.Notification(t, "created-short.json")}, 200, "", `"accepted":1`, false},
		{"PUT", req{method: http.MethodPut, body: s2}, 405, "method_not_allowed", "", false},
		{"other path", req{path: "/other", body: s2}, 404, "not_found", "", false},
		{"path traversal", req{path: "/notifications/../../etc/passwd", body: s2}, 404, "not_found", "", false},

		// The body decides, not the label.
		{"text/plain", req{body: s2, headers: map[string]string{"Content-Type": "text/plain"}}, 200, "", `"duplicates":1`, false},
		{"latin1", req{body: s2, headers: map[string]string{"Content-Type": "application/json; charset=latin1"}}, 200, "", `"duplicates":1`, false},
		{"brotli", req{body: s2, headers: map[string]string{"Content-Encoding": "br"}}, 415, "unsupported_content_encoding", "", true},
		{"bad gzip", req{body: []byte("not gzip"), headers: map[string]string{"Content-Encoding": "gzip"}}, 400, "bad_body", "", true},
		{"too large", req{body: bytes.Repeat([]byte(" "), 1<<20+1)}, 413, "body_too_large", "", false},
		{"gzip bomb", req{body: gz(bytes.Repeat([]byte(" "), 50<<20)), headers: map[string]string{"Content-Encoding": "gzip"}}, 413, "body_too_large", "", false},

		// register's preflight: answered as the receiver, nothing stored;
		// only with the credentials, and a body is a notification.
		{"preflight", req{headers: map[string]string{"Cdse-Preflight": "1"}}, 200, "", `"preflight":"ok","service":"cdse-jetstream-receiver"`, false},
		{"preflight without credentials", req{noAuth: true, headers: map[string]string{"Cdse-Preflight": "1"}}, 401, "unauthorized", "", false},
		{"preflight header on a notification", req{body: fixtures.Notification(t, "created-s5p.json"), headers: map[string]string{"Cdse-Preflight": "1"}}, 200, "", `"duplicates":1`, false},
		{"empty body", req{body: nil}, 400, "invalid_notification", "empty body", true},
		{"null", req{body: []byte("null")}, 400, "invalid_notification", "not null", true},
		{"empty array", req{body: []byte("[]")}, 400, "invalid_notification", "empty array", true},
		{"malformed", req{body: []byte("{")}, 400, "invalid_notification", "malformed JSON", true},
		{"Created", req{body: bytes.Replace(s2, []byte(`"created"`), []byte(`"Created"`), 1)}, 400, "invalid_notification", `"field":"SubscriptionEvent"`, true},
		{"nested duplicate", req{body: bytes.Replace(s2, []byte(`"Name": "S2B_MSIL2A`), []byte(`"Name": "S1A_other", "Name": "S2B_MSIL2A`), 1)}, 400, "invalid_notification", `"field":"Name"`, true},
		{"nested case variant", req{body: bytes.Replace(s2, []byte(`"Online": true`), []byte(`"Online": true, "online": false`), 1)}, 400, "invalid_notification", `"field":"online"`, true},
		{"ProductId not uuid", req{body: bytes.Replace(s2, []byte(`"ProductId": "0f6b4c1e`), []byte(`"ProductId": "xx`), 1)}, 400, "invalid_notification", `"field":"ProductId"`, true},
		{"array all or nothing", req{body: []byte(`[` + string(fixtures.Notification(t, "deleted-s1.json")[1:len(fixtures.Notification(t, "deleted-s1.json"))-1]) + `,{"SubscriptionEvent":"deleted"}]`)}, 400, "invalid_notification", `"index":1`, true},
		{"too many", req{body: []byte("[" + strings.TrimSuffix(strings.Repeat(`{"SubscriptionEvent":"created","ProductId":"0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f"},`, 101), ",") + "]")}, 413, "too_many_notifications", "", true},
	}
	wantCount, wantKept := uint64(0), 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := e.do(t, tt.req)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tt.status, body)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q", ct)
			}
			var got struct {
				Error   string `json:"error"`
				Message string `json:"message"`
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("body is not JSON: %q", body)
			}
			if got.Error != tt.code {
				t.Errorf("error code %q, want %q (body %s)", got.Error, tt.code, body)
			}
			if tt.code != "" && got.Message == "" {
				t.Errorf("error without a message: %s", body)
			}
			if !strings.Contains(string(body), tt.contains) {
				t.Errorf("body %s does not contain %s", body, tt.contains)
			}
			after := e.count(t)
			if tt.status == 200 && strings.Contains(string(body), `"accepted":1`) {
				wantCount++
			}
			if after != wantCount {
				t.Errorf("stream holds %d messages, want %d", after, wantCount)
			}
			if tt.kept {
				wantKept++
			}
			if got := len(e.quarantined(t)); got != wantKept {
				t.Errorf("quarantine holds %d bodies, want %d", got, wantKept)
			}
			if said := strings.Contains(string(body), `"quarantined":true`); said != tt.kept {
				t.Errorf("answer says quarantined=%v, want %v: %s", said, tt.kept, body)
			}
			switch tt.status {
			case 401:
				if h := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(h, `Basic realm="`) {
					t.Errorf("WWW-Authenticate %q", h)
				}
			case 405:
				if h := resp.Header.Get("Allow"); h != "POST" {
					t.Errorf("Allow %q", h)
				}
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Error("security headers missing")
			}
		})
	}
	if got := testutil.ToFloat64(mustCounter(t, e.reg, "cdse_receiver_auth_failures_total")); got != 6 {
		t.Errorf("auth failures counted: %v, want 6", got)
	}
}

// mustCounter sums every series of the named counter.
func mustCounter(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.Metric {
				sum += m.GetCounter().GetValue()
			}
			c := prometheus.NewCounter(prometheus.CounterOpts{Name: "sum"})
			c.Add(sum)
			return c
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

func TestPublishedMessage(t *testing.T) {
	e := start(t, natstest.RunJetStream(t))
	body := fixtures.Notification(t, "modified-s2.json")
	if resp, b := e.post(t, body); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	s, _ := e.js.Stream(context.Background(), stream)
	m, err := s.GetLastMsgForSubject(context.Background(), "cdse.product.modified.SENTINEL-2.S2MSI2A")
	if err != nil {
		t.Fatal(err)
	}
	// An array element is published as its own bytes, exactly as received.
	trimmed := bytes.TrimSpace(body)
	elem := bytes.TrimSpace(trimmed[1 : len(trimmed)-1])
	if !bytes.Equal(m.Data, elem) {
		t.Errorf("data differs from the element as received:\n%.200s\n%.200s", m.Data, elem)
	}
	want := map[string]string{
		"Nats-Msg-Id":          "modified:0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f:2026-11-22T08:01:02.654321Z",
		"Cdse-Event":           "modified",
		"Cdse-Product-Id":      "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f",
		"Cdse-Product-Name":    "S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE",
		"Cdse-Subscription-Id": "7d3f9c2e-5b1a-4c8d-9e6f-0a1b2c3d4e5f",
		"Cdse-Collection":      "SENTINEL-2",
		"Cdse-Source":          "push",
	}
	for k, v := range want {
		if got := m.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
}

func TestDedupe(t *testing.T) {
	e := start(t, natstest.RunJetStream(t))
	created := fixtures.Notification(t, "created-s2.json")

	// 1 delivery + 3 retries → one message.
	for i := range 4 {
		resp, b := e.post(t, created)
		if resp.StatusCode != 200 {
			t.Fatalf("try %d: %d %s", i, resp.StatusCode, b)
		}
	}
	if got := e.count(t); got != 1 {
		t.Fatalf("after 4 deliveries: %d messages", got)
	}
	// Another subscription delivers the same product.
	other := bytes.Replace(created, []byte("7d3f9c2e-5b1a-4c8d-9e6f-0a1b2c3d4e5f"), []byte("11111111-2222-4333-8444-555555555555"), 1)
	if resp, b := e.post(t, other); resp.StatusCode != 200 || !strings.Contains(string(b), `"duplicates":1`) {
		t.Fatalf("second subscription: %d %s", resp.StatusCode, b)
	}
	// Two modifications of the product are two messages; each once.
	mod1 := fixtures.Notification(t, "modified-s2.json")
	mod2 := bytes.Replace(mod1, []byte(`"ModificationDate": "2026-11-22T08:01:02.654321Z"`), []byte(`"ModificationDate": "2026-11-23T00:00:00Z"`), 1)
	if bytes.Equal(mod1, mod2) {
		t.Fatal("fixture did not change")
	}
	for _, b := range [][]byte{mod1, mod2, mod1, mod2} {
		if resp, body := e.post(t, b); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	if got := e.count(t); got != 3 {
		t.Errorf("stream holds %d messages, want 3 (created + 2 modifications)", got)
	}
	// Dedupe counters follow.
	if got := testutil.ToFloat64(mustCounter(t, e.reg, "cdse_receiver_notifications_total")); got != 9 {
		t.Errorf("notifications counted: %v, want 9", got)
	}
}

func TestUnavailableThenRecovers(t *testing.T) {
	srv := natstest.RunJetStream(t)
	store := natstest.StoreDir(srv)
	e := start(t, srv)
	if resp, b := e.post(t, fixtures.Notification(t, "created-s1.json")); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	srv.Shutdown()
	srv.WaitForShutdown()

	resp, body := e.post(t, fixtures.Notification(t, "created-s2.json"))
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), `"error":"unavailable"`) {
		t.Fatalf("with NATS down: %d Retry-After=%q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if strings.Contains(string(body), "nats:") {
		t.Errorf("internal error leaked into the body: %s", body)
	}

	natstest.Restart(t, srv, store)
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, body = e.post(t, fixtures.Notification(t, "created-s2.json"))
		if resp.StatusCode == 200 {
			break
		}
		if resp.StatusCode != 503 || time.Now().After(deadline) {
			t.Fatalf("no recovery: %d %s", resp.StatusCode, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := e.count(t); got != 2 {
		t.Errorf("stream holds %d, want 2", got)
	}
}

func TestLogsCarryNoSecrets(t *testing.T) {
	e := start(t, natstest.RunJetStream(t))
	e.post(t, fixtures.Notification(t, "created-s2.json"))
	e.do(t, req{body: []byte("{}"), noAuth: true, headers: map[string]string{"Authorization": "Basic Y2RzZTp3cm9uZy1wYXNzd29yZA=="}})
	if len(e.logs.AllEntries()) < 2 {
		t.Fatalf("expected request logs, got %d", len(e.logs.AllEntries()))
	}
	for _, entry := range e.logs.AllEntries() {
		line, _ := entry.String()
		for _, secret := range []string{password, "wrong-password", "Y2RzZTp"} {
			if strings.Contains(line, secret) {
				t.Errorf("log line holds a secret: %s", line)
			}
		}
	}
	// The first request's line (the connection's own lines come before it).
	var first string
	for _, entry := range e.logs.AllEntries() {
		if _, ok := entry.Data["status"]; ok {
			first, _ = entry.String()
			break
		}
	}
	for _, want := range []string{"product_id=0f6b4c1e", "event=created", "status=200", "latency_ms="} {
		if !strings.Contains(first, want) {
			t.Errorf("request log %q lacks %s", first, want)
		}
	}
}

func TestResponseJSONMatchesEncodingJSON(t *testing.T) {
	for _, r := range []Response{{}, {Accepted: 1}, {Duplicates: 3}, {Accepted: 12345, Duplicates: 678}} {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(r.appendJSON(nil)); got != string(want)+"\n" {
			t.Errorf("%+v: %q, want %q", r, got, want)
		}
	}
}
