package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/ingest/quarantine"
	"github.com/cdse-jetstream/receiver/internal/platform/logging"
	"github.com/cdse-jetstream/receiver/internal/receiver/auth"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// withProduct gives a fixture a fresh ProductId, so each use is a new product.
func withProduct(t *testing.T, name string) ([]byte, string) {
	t.Helper()
	id := uuid.NewString()
	b := fixtures.Notification(t, name)
	old := []byte("0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f")
	if !bytes.Contains(b, old) {
		t.Fatalf("%s has no product id to replace", name)
	}
	return bytes.ReplaceAll(b, old, []byte(id)), id
}

func TestQuarantineKeepsARefusedBodyOnce(t *testing.T) {
	e := start(t, natstest.RunJetStream(t))
	body, id := withProduct(t, "created-s2.json")
	// A shape our validator does not know: an event in another case.
	body = bytes.Replace(body, []byte(`"created"`), []byte(`"Created"`), 1)
	// The catalogue's first try and its three retries.
	for i := range 4 {
		resp, b := e.do(t, req{body: body, headers: map[string]string{"Content-Type": "text/plain; charset=utf-8"}})
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("delivery %d: status %d: %s", i+1, resp.StatusCode, b)
		}
		var got struct {
			Error       string `json:"error"`
			Field       string `json:"field"`
			Quarantined bool   `json:"quarantined"`
		}
		if err := json.Unmarshal(b, &got); err != nil || got.Error != "invalid_notification" || got.Field != "SubscriptionEvent" || !got.Quarantined {
			t.Fatalf("delivery %d: body %s", i+1, b)
		}
	}
	list := e.quarantined(t)
	if len(list) != 1 {
		t.Fatalf("quarantine holds %d bodies after 4 deliveries, want 1", len(list))
	}
	q := list[0]
	if !bytes.Equal(q.Body, body) {
		t.Errorf("quarantined body differs from the one sent")
	}
	want := map[string]string{"source": q.Source, "reason": q.Reason, "field": q.Field, "product": q.ProductID, "content type": q.ContentType}
	for k, v := range map[string]string{"source": "push", "reason": quarantine.ReasonInvalidNotification, "field": "SubscriptionEvent", "product": id, "content type": "text/plain; charset=utf-8"} {
		if want[k] != v {
			t.Errorf("%s = %q, want %q", k, want[k], v)
		}
	}
	if !strings.Contains(q.Error, "unknown event") {
		t.Errorf("error header %q does not say what is wrong", q.Error)
	}
	if e.count(t) != 0 {
		t.Error("a refused body reached the product stream")
	}
	if got := testutil.ToFloat64(mustCounter(t, e.reg, "cdse_receiver_quarantined_total")); got != 1 {
		t.Errorf("quarantined_total = %v, want 1", got)
	}
}

func TestQuarantineNeverStoresUnauthenticated(t *testing.T) {
	e := start(t, natstest.RunJetStream(t))
	for _, r := range []req{
		{body: []byte("{"), noAuth: true},
		{body: []byte("{"), noAuth: true, headers: map[string]string{"Authorization": "Basic Y2RzZTp3cm9uZw=="}},
		{body: []byte("not gzip"), noAuth: true, headers: map[string]string{"Content-Encoding": "gzip"}},
	} {
		if resp, b := e.do(t, r); resp.StatusCode != http.StatusUnauthorized || strings.Contains(string(b), "quarantined") {
			t.Errorf("status %d: %s", resp.StatusCode, b)
		}
	}
	if n := len(e.quarantined(t)); n != 0 {
		t.Errorf("quarantine holds %d bodies of unauthenticated requests", n)
	}
}

func TestQuarantineStreamRecreated(t *testing.T) {
	e := start(t, natstest.RunJetStream(t))
	js, closeNC := natstest.JetStream(t, e.srv.ClientURL())
	defer closeNC()
	if err := js.DeleteStream(context.Background(), quarantineStream); err != nil {
		t.Fatal(err)
	}
	if resp, b := e.post(t, []byte("{")); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"quarantined":true`) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if n := len(e.quarantined(t)); n != 1 {
		t.Errorf("quarantine holds %d bodies, want 1", n)
	}
}

func TestQuarantineUnavailableAnswers503(t *testing.T) {
	e := start(t, natstest.RunJetStream(t))
	// Another client replaces the quarantine stream by one of another
	// name on its subjects: nothing can be kept, nor the stream re-created.
	js, closeNC := natstest.JetStream(t, e.srv.ClientURL())
	defer closeNC()
	if err := js.DeleteStream(context.Background(), quarantineStream); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "SQUATTER", Subjects: []string{"cdse.quarantine.>"}}); err != nil {
		t.Fatal(err)
	}
	resp, b := e.post(t, []byte(`{"SubscriptionEvent":"created"}`))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("status %d (Retry-After %q): %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	if strings.Contains(string(b), "quarantined") {
		t.Errorf("a 503 claims the body was kept: %s", b)
	}
	if n := natstest.StreamCount(t, js, "SQUATTER"); n != 0 {
		t.Errorf("a body went to another stream than the quarantine: %d", n)
	}
	// Valid notifications do not depend on the quarantine.
	valid, _ := withProduct(t, "created-s2.json")
	if resp, b := e.post(t, valid); resp.StatusCode != http.StatusOK {
		t.Fatalf("valid notification: %d %s", resp.StatusCode, b)
	}
}

// TestOddContentTypes: a valid notification is stored whatever its label
// says, and the unexpected labels are counted by kind.
func TestOddContentTypes(t *testing.T) {
	e := start(t, natstest.RunJetStream(t))
	tests := []struct {
		contentType string
		kind        string // "" when expected
	}{
		{"", "missing"},
		{"text/plain", "text"},
		{"text/plain; charset=utf-8", "text"},
		{"application/x-www-form-urlencoded", "form"},
		{"application/octet-stream", "other"},
		{"application/json; charset=ISO-8859-1", "json"},
		{"APPLICATION/JSON; CHARSET=\"UTF-8\"", ""},
		{"application/json;charset=utf-8", ""},
		{"not a media type;;", "other"},
	}
	for _, tt := range tests {
		body, id := withProduct(t, "created-s2.json")
		resp, b := e.do(t, req{body: body, headers: map[string]string{"Content-Type": tt.contentType}})
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"accepted":1`) {
			t.Errorf("Content-Type %q: %d %s", tt.contentType, resp.StatusCode, b)
			continue
		}
		s, _ := e.js.Stream(context.Background(), stream)
		m, err := s.GetLastMsgForSubject(context.Background(), "cdse.product.created.SENTINEL-2.S2MSI2A")
		if err != nil || m.Header.Get("Cdse-Product-Id") != id || !bytes.Equal(m.Data, body) {
			t.Errorf("Content-Type %q: not stored as sent (%v)", tt.contentType, err)
		}
		if got := contentKind(tt.contentType); got != tt.kind {
			t.Errorf("contentKind(%q) = %q, want %q", tt.contentType, got, tt.kind)
		}
	}
	mfs, _ := e.reg.Gather()
	counts := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() == "cdse_receiver_unexpected_content_type_total" {
			for _, m := range mf.Metric {
				counts[m.Label[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	for kind, want := range map[string]float64{"missing": 1, "text": 2, "form": 1, "other": 2, "json": 1} {
		if counts[kind] != want {
			t.Errorf("unexpected_content_type_total{type=%q} = %v, want %v (all: %v)", kind, counts[kind], want, counts)
		}
	}
	// Logged once per kind, not once per request.
	logged := 0
	for _, en := range e.logs.AllEntries() {
		if strings.Contains(en.Message, "unexpected Content-Type") {
			logged++
		}
	}
	if logged != 5 {
		t.Errorf("%d log lines about content types, want 5 (one per kind)", logged)
	}
}

// TestUndecodableBodyKeptAsItCame: an encoding we cannot decode gets 415,
// and the bytes are kept exactly as received, with the encoding named.
func TestUndecodableBodyKeptAsItCame(t *testing.T) {
	e := start(t, natstest.RunJetStream(t))
	body := []byte{0x1b, 0x2c, 0x00, 0xff, 'x'} // not ours to decode
	resp, b := e.do(t, req{body: body, headers: map[string]string{"Content-Encoding": "br"}})
	if resp.StatusCode != http.StatusUnsupportedMediaType || !strings.Contains(string(b), `"quarantined":true`) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	list := e.quarantined(t)
	if len(list) != 1 || !bytes.Equal(list[0].Body, body) || list[0].BodyEncoding != "br" || list[0].Reason != quarantine.ReasonUnsupportedEncoding {
		t.Fatalf("quarantine: %+v", list)
	}
}

// lineRecorder keeps the request lines.
type lineRecorder struct {
	mu    sync.Mutex
	lines []logging.RequestLine
}

func (r *lineRecorder) LogRequest(l logging.RequestLine) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, l)
}

// TestLogLinesOutliveRecycledBuffers: request buffers are reused as soon as
// a request is answered; under concurrent load (and -race) every log line
// still names the product its request carried.
func TestLogLinesOutliveRecycledBuffers(t *testing.T) {
	rec := &lineRecorder{}
	e := startWith(t, natstest.RunJetStream(t), func(o *Options) { o.RequestLog = rec })
	var wg sync.WaitGroup
	sent := make(chan string, 200)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				body, id := withProduct(t, "created-s2.json")
				if resp, b := e.post(t, body); resp.StatusCode != http.StatusOK {
					t.Errorf("%d %s", resp.StatusCode, b)
				}
				sent <- id
			}
		}()
	}
	wg.Wait()
	close(sent)
	want := map[string]bool{}
	for id := range sent {
		want[id] = true
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	got := map[string]bool{}
	for _, l := range rec.lines {
		got[l.ProductID] = true
	}
	if len(got) != len(want) {
		t.Fatalf("%d distinct product ids logged, %d sent", len(got), len(want))
	}
	for id := range want {
		if !got[id] {
			t.Errorf("product %s sent but not logged (a line read a reused buffer?)", id)
		}
	}
}

// panicking is a Publisher that panics.
type panicking struct{}

func (panicking) Publish(context.Context, []publish.Message) ([]publish.Result, error) {
	panic("boom: a secret-looking detail")
}

// TestPanicAnswers500WithoutDetail: a panic in the handler is a 500 with the
// usual JSON body (no stack, no panic text) and the private-answer headers;
// the stack goes to the log; the server keeps serving.
func TestPanicAnswers500WithoutDetail(t *testing.T) {
	logger, hook := logtest.NewNullLogger()
	v, _ := auth.NewBasic([]auth.Credential{{User: user, Password: password}}, "")
	e, err := New(Options{Path: "/notifications", MaxBody: 1 << 20, MaxNotifications: 100, Route: ingest.Route{Prefix: "cdse.product"}}, panicking{}, v, prometheus.NewRegistry(), logger)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e)
	defer srv.Close()
	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/notifications", bytes.NewReader(fixtures.Notification(t, "created-s2.json")))
		req.SetBasicAuth(user, password)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(b), `"error":"internal"`) || strings.Contains(string(b), "boom") {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store", "X-Frame-Options": "DENY",
			"Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'", "Referrer-Policy": "no-referrer"} {
			if got := resp.Header.Get(k); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
	}
	logged := false
	for _, en := range hook.AllEntries() {
		logged = logged || en.Message == "handler panicked" && strings.Contains(fmt.Sprint(en.Data["stack"]), "goroutine")
	}
	if !logged {
		t.Error("the panic's stack was not logged")
	}
}
