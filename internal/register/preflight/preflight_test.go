package preflight_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/ingest/webhook"
	"github.com/cdse-jetstream/receiver/internal/receiver/auth"
	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/publishtest"

	"github.com/cdse-jetstream/receiver/internal/ingest/webhook/wire"
	"github.com/cdse-jetstream/receiver/internal/register/preflight"
	"github.com/cdse-jetstream/receiver/internal/testkit/testcert"
)

const (
	user     = "cdse"
	password = "a-long-webhook-password"
)

// receiver is the receiver's real webhook (internal/ingest/webhook, its Basic
// auth, a JetStream stream behind it), so that the check is tested against
// what it will meet; t's cleanup checks that no preflight stored or
// quarantined anything.
func receiver(t *testing.T) http.Handler {
	t.Helper()
	env := publishtest.New(t, nil)
	log, _ := logtest.NewNullLogger()
	v, err := auth.NewBasic([]auth.Credential{{User: user, Password: password}}, "")
	if err != nil {
		t.Fatal(err)
	}
	e, err := webhook.New(webhook.Options{Path: "/notifications", MaxBody: 1 << 20, MaxNotifications: 100, Route: ingest.Route{Prefix: "cdse.product"},
		Quarantine: env.Quarantine}, env.Publisher, v, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if m := env.Messages(t); len(m) != 0 {
			t.Errorf("a preflight stored %v", m)
		}
		if q := env.Quarantined(t); len(q) != 0 {
			t.Errorf("a preflight was quarantined: %v", q)
		}
	})
	return e
}

// tlsServer serves h with the certificate testcert writes (for
// 127.0.0.1, expiring at notAfter) and returns the pool trusting it.
func tlsServer(t *testing.T, h http.Handler, notAfter time.Time) (*httptest.Server, *x509.CertPool) {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	pool := testcert.Write(t, certFile, keyFile, 1, notAfter)
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return startTLS(t, h, pair), pool
}

func startTLS(t *testing.T, h http.Handler, pair tls.Certificate) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are the point
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// otherName is a certificate for other.example only, and its pool.
func otherName(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "other.example"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(90 * 24 * time.Hour),
		DNSNames: []string{"other.example"}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}, pool
}

func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// silent accepts connections and never answers.
func silent(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

func handler(code int, header map[string]string, body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	})
}

func TestCheck(t *testing.T) {
	now := time.Now()
	year := now.Add(365 * 24 * time.Hour)
	type want struct {
		names   string // the checks made, in order
		last    preflight.Status
		problem preflight.Problem
		detail  string // in the last check's detail
	}
	all := "url dns tcp tls webhook"
	cases := []struct {
		name  string
		setup func(t *testing.T) preflight.Options
		want  want
	}{
		{"all good", func(t *testing.T) preflight.Options {
			srv, pool := tlsServer(t, receiver(t), year)
			return preflight.Options{Endpoint: srv.URL + "/notifications", RootCAs: pool}
		}, want{all, preflight.OK, "", "accepts the credentials (200 OK"}},

		{"unreachable: closed port", func(t *testing.T) preflight.Options {
			return preflight.Options{Endpoint: "https://" + closedPort(t) + "/notifications"}
		}, want{"url dns tcp", preflight.Fail, preflight.Unreachable, "connection refused"}},

		{"unreachable: no such name", func(t *testing.T) preflight.Options {
			return preflight.Options{Endpoint: "https://hooks.receiver.invalid/notifications", Timeout: 3 * time.Second}
		}, want{"url dns", preflight.Fail, preflight.Unreachable, "not reachable"}},

		{"unreachable: no TLS handshake", func(t *testing.T) preflight.Options {
			return preflight.Options{Endpoint: "https://" + silent(t) + "/notifications", Timeout: 300 * time.Millisecond}
		}, want{"url dns tcp tls", preflight.Fail, preflight.Unreachable, "no TLS handshake within 300ms"}},

		{"unreachable: the proxy's 502", func(t *testing.T) preflight.Options {
			srv, pool := tlsServer(t, handler(502, nil, "Bad Gateway"), year)
			return preflight.Options{Endpoint: srv.URL + "/notifications", RootCAs: pool}
		}, want{all, preflight.Fail, preflight.Unreachable, "502 Bad Gateway"}},

		{"bad certificate: unknown authority", func(t *testing.T) preflight.Options {
			srv, _ := tlsServer(t, receiver(t), year)
			return preflight.Options{Endpoint: srv.URL + "/notifications"} // the system's roots
		}, want{"url dns tcp tls", preflight.Fail, preflight.BadCertificate, "unknown authority"}},

		{"bad certificate: wrong name", func(t *testing.T) preflight.Options {
			pair, pool := otherName(t)
			srv := startTLS(t, receiver(t), pair)
			return preflight.Options{Endpoint: srv.URL + "/notifications", RootCAs: pool}
		}, want{"url dns tcp tls", preflight.Fail, preflight.BadCertificate, "not valid for 127.0.0.1"}},

		{"bad certificate: expired", func(t *testing.T) preflight.Options {
			srv, pool := tlsServer(t, receiver(t), now.Add(-time.Minute))
			return preflight.Options{Endpoint: srv.URL + "/notifications", RootCAs: pool}
		}, want{"url dns tcp tls", preflight.Fail, preflight.BadCertificate, "expired"}},

		{"bad certificate: expired by the clock given", func(t *testing.T) preflight.Options {
			srv, pool := tlsServer(t, receiver(t), year)
			return preflight.Options{Endpoint: srv.URL + "/notifications", RootCAs: pool, Now: func() time.Time { return year.Add(time.Hour) }}
		}, want{"url dns tcp tls", preflight.Fail, preflight.BadCertificate, "expired"}},

		{"expiring soon", func(t *testing.T) preflight.Options {
			srv, pool := tlsServer(t, receiver(t), now.Add(5*24*time.Hour+time.Hour))
			return preflight.Options{Endpoint: srv.URL + "/notifications", RootCAs: pool}
		}, want{all, preflight.OK, "", "accepts the credentials"}},

		{"wrong credentials", func(t *testing.T) preflight.Options {
			srv, pool := tlsServer(t, receiver(t), year)
			return preflight.Options{Endpoint: srv.URL + "/notifications", RootCAs: pool, Password: "not-the-password"}
		}, want{all, preflight.Fail, preflight.WrongCredentials, "wrong credentials"}},

		{"wrong credentials: the failed-login limit", func(t *testing.T) preflight.Options {
			srv, pool := tlsServer(t, handler(429, nil, ""), year)
			return preflight.Options{Endpoint: srv.URL + "/notifications", RootCAs: pool}
		}, want{all, preflight.Fail, preflight.WrongCredentials, "RECEIVER_AUTH_FAILURE_LIMIT"}},

		{"wrong credentials: the failed-login limit, after the receiver's challenge", func(t *testing.T) preflight.Options {
			srv, pool := tlsServer(t, imitation(handler(429, nil, "")), year)
			return preflight.Options{Endpoint: srv.URL + "/notifications", RootCAs: pool}
		}, want{all, preflight.Fail, preflight.WrongCredentials, "RECEIVER_AUTH_FAILURE_LIMIT"}},

		{"not our receiver: 404", func(t *testing.T) preflight.Options {
			srv, pool := tlsServer(t, http.NotFoundHandler(), year)
			return preflight.Options{Endpoint: srv.URL + "/notifications", RootCAs: pool}
		}, want{all, preflight.Fail, preflight.NotReceiver, "404 Not Found (no Basic realm), not the receiver's 401"}},

		{"not our receiver: 200 with other JSON", func(t *testing.T) preflight.Options {
			srv, pool := tlsServer(t, handler(200, map[string]string{"Content-Type": "application/json"}, `{"status":"ok"}`), year)
			return preflight.Options{Endpoint: srv.URL + "/notifications", RootCAs: pool}
		}, want{all, preflight.Fail, preflight.NotReceiver, `application/json: "{\"status\":\"ok\"}"`}},

		{"not our receiver: 200 with HTML", func(t *testing.T) preflight.Options {
			srv, pool := tlsServer(t, handler(200, map[string]string{"Content-Type": "text/html"}, "<html><body>Welcome to nginx!</body></html>"), year)
			return preflight.Options{Endpoint: srv.URL + "/notifications", RootCAs: pool}
		}, want{all, preflight.Fail, preflight.NotReceiver, "text/html"}},

		{"not our receiver: 401 with another realm", func(t *testing.T) preflight.Options {
			srv, pool := tlsServer(t, handler(401, map[string]string{"WWW-Authenticate": `Basic realm="Restricted"`}, ""), year)
			return preflight.Options{Endpoint: srv.URL + "/notifications", RootCAs: pool}
		}, want{all, preflight.Fail, preflight.NotReceiver, `realm "Restricted"`}},

		{"not our receiver: a redirect", func(t *testing.T) preflight.Options {
			srv, pool := tlsServer(t, handler(302, map[string]string{"Location": "https://elsewhere.example/login"}, ""), year)
			return preflight.Options{Endpoint: srv.URL + "/notifications", RootCAs: pool}
		}, want{all, preflight.Fail, preflight.NotReceiver, "https://elsewhere.example/login"}},

		{"not our receiver: no TLS on the port", func(t *testing.T) preflight.Options {
			srv := httptest.NewServer(receiver(t))
			t.Cleanup(srv.Close)
			return preflight.Options{Endpoint: strings.Replace(srv.URL, "http:", "https:", 1) + "/notifications"}
		}, want{"url dns tcp tls", preflight.Fail, preflight.NotReceiver, "does not speak TLS"}},

		{"http refused without Insecure", func(t *testing.T) preflight.Options {
			return preflight.Options{Endpoint: "http://127.0.0.1:8080/notifications"}
		}, want{"url", preflight.Fail, preflight.InvalidEndpoint, "https"}},

		{"http with Insecure", func(t *testing.T) preflight.Options {
			srv := httptest.NewServer(receiver(t))
			t.Cleanup(srv.Close)
			return preflight.Options{Endpoint: srv.URL + "/notifications", Insecure: true}
		}, want{all, preflight.OK, "", "accepts the credentials"}},

		{"not a URL", func(t *testing.T) preflight.Options {
			return preflight.Options{Endpoint: "https://cdse:secret@hooks example.org/notifications"}
		}, want{"url", preflight.Fail, preflight.InvalidEndpoint, "not a URL"}},

		{"credentials in the URL", func(t *testing.T) preflight.Options {
			return preflight.Options{Endpoint: "https://cdse:secret@hooks.example.org/notifications"}
		}, want{"url", preflight.Fail, preflight.InvalidEndpoint, "xxxxx"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := c.setup(t)
			if o.Username == "" {
				o.Username = user
			}
			if o.Password == "" {
				o.Password = password
			}
			r := preflight.Check(context.Background(), o)
			t.Logf("\n%s", table(r))
			var names []string
			for _, s := range r.Checks {
				names = append(names, s.Name)
			}
			if got := strings.Join(names, " "); got != c.want.names {
				t.Fatalf("checks %q, want %q\n%s", got, c.want.names, table(r))
			}
			last := r.Checks[len(r.Checks)-1]
			if last.Status != c.want.last || r.Problem != c.want.problem || !strings.Contains(last.Detail, c.want.detail) {
				t.Errorf("last %s %q, problem %q; want %s %q, problem %q\n%s", last.Status, last.Detail, r.Problem, c.want.last, c.want.detail, c.want.problem, table(r))
			}
			if r.OK() != (c.want.problem == "") {
				t.Errorf("OK() %v with problem %q", r.OK(), r.Problem)
			}
			js, _ := json.Marshal(r)
			if strings.Contains(table(r)+string(js), password) || strings.Contains(table(r)+string(js), "secret") {
				t.Errorf("a password in the report:\n%s\n%s", table(r), js)
			}
			for _, s := range r.Checks[:len(r.Checks)-1] {
				if s.Status == preflight.Fail {
					t.Errorf("the report goes on after a failure:\n%s", table(r))
				}
			}
		})
	}
}

// The warnings: a certificate near its expiry, by the clock given too;
// an http endpoint's TLS check is skipped.
func TestWarnings(t *testing.T) {
	soon := time.Now().Add(5*24*time.Hour + time.Hour)
	srv, pool := tlsServer(t, receiver(t), soon)
	r := preflight.Check(context.Background(), preflight.Options{Endpoint: srv.URL + "/notifications", Username: user, Password: password, RootCAs: pool})
	if s := step(t, r, "tls"); s.Status != preflight.Warn || !strings.Contains(s.Detail, "expires in 5 days") || !strings.Contains(s.Detail, "renew it now") {
		t.Errorf("tls: %s %q", s.Status, s.Detail)
	}
	if !r.OK() {
		t.Error("a warning fails the report")
	}

	far := time.Now().Add(90 * 24 * time.Hour)
	srv, pool = tlsServer(t, receiver(t), far)
	o := preflight.Options{Endpoint: srv.URL + "/notifications", Username: user, Password: password, RootCAs: pool}
	if s := step(t, preflight.Check(context.Background(), o), "tls"); s.Status != preflight.OK || !strings.Contains(s.Detail, "89 days") {
		t.Errorf("tls: %s %q", s.Status, s.Detail)
	}
	o.Now = func() time.Time { return far.Add(-13 * 24 * time.Hour) }
	if s := step(t, preflight.Check(context.Background(), o), "tls"); s.Status != preflight.Warn || !strings.Contains(s.Detail, "12 days") {
		t.Errorf("tls 13 days before: %s %q", s.Status, s.Detail)
	}

	// No credentials to check with: the receiver's own 401 says the URL is
	// right, a warning.
	r = preflight.Check(context.Background(), preflight.Options{Endpoint: srv.URL + "/notifications", RootCAs: pool})
	if s := step(t, r, "webhook"); s.Status != preflight.Warn || !strings.Contains(s.Detail, "credentials were not checked") || !r.OK() {
		t.Errorf("webhook without credentials: %s %q, OK %v", s.Status, s.Detail, r.OK())
	}

	plain := httptest.NewServer(receiver(t))
	defer plain.Close()
	r = preflight.Check(context.Background(), preflight.Options{Endpoint: plain.URL + "/notifications", Username: user, Password: password, Insecure: true})
	if s := step(t, r, "tls"); s.Status != preflight.Skip {
		t.Errorf("tls of http: %s %q", s.Status, s.Detail)
	}
}

func step(t *testing.T, r preflight.Report, name string) preflight.Step {
	t.Helper()
	for _, s := range r.Checks {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no %s check:\n%s", name, table(r))
	return preflight.Step{}
}

// The check leaves nothing in the receiver's log: no connection is closed
// before its TLS handshake.
func TestNothingInTheServersLog(t *testing.T) {
	var buf bins.SyncBuffer
	srv, pool := tlsServer(t, receiver(t), time.Now().Add(90*24*time.Hour))
	srv.Config.ErrorLog = log.New(&buf, "", 0)
	for range 3 {
		if r := preflight.Check(context.Background(), preflight.Options{Endpoint: srv.URL + "/notifications", Username: user, Password: password, RootCAs: pool}); !r.OK() {
			t.Fatalf("\n%s", table(r))
		}
	}
	// Close waits for the server to finish with every connection (one
	// closed under way would be logged, by the test's doing).
	srv.Close()
	if buf.String() != "" {
		t.Errorf("the server logged:\n%s", buf.String())
	}
}

// The context bounds the whole check.
func TestCheckContext(t *testing.T) {
	addr := silent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	r := preflight.Check(ctx, preflight.Options{Endpoint: "https://" + addr + "/notifications", Timeout: time.Minute})
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s", d)
	}
	if r.OK() || r.Problem != preflight.Unreachable {
		t.Errorf("problem %q\n%s", r.Problem, table(r))
	}
}

func TestPrintAndJSON(t *testing.T) {
	srv, pool := tlsServer(t, receiver(t), time.Now().Add(5*24*time.Hour+time.Hour))
	r := preflight.Check(context.Background(), preflight.Options{Endpoint: srv.URL + "/notifications", Username: user, Password: "wrong-password-1", RootCAs: pool})
	out := table(r)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "CHECK") || !strings.Contains(lines[0], "OK") || !strings.Contains(lines[0], "DETAIL") {
		t.Fatalf("table:\n%s", out)
	}
	for i, mark := range []string{"✔", "✔", "✔", "!", "✘"} {
		if f := strings.Fields(lines[i+1]); len(f) < 2 || f[1] != mark {
			t.Errorf("line %d: %q, want the mark %s", i+1, lines[i+1], mark)
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got["ok"] != false || got["problem"] != "wrong-credentials" || got["endpoint"] != srv.URL+"/notifications" {
		t.Errorf("JSON: %s", b)
	}
	checks, _ := got["checks"].([]any)
	if len(checks) != 5 {
		t.Fatalf("JSON checks: %s", b)
	}
	if c := checks[3].(map[string]any); c["name"] != "tls" || c["status"] != "warn" || c["detail"] == "" {
		t.Errorf("JSON check: %v", c)
	}
	var back preflight.Report
	if err := json.Unmarshal(b, &back); err != nil || len(back.Checks) != 5 || back.Problem != preflight.WrongCredentials {
		t.Errorf("the JSON does not read back: %v %+v", err, back)
	}
	ok, _ := json.Marshal(preflight.Report{Checks: []preflight.Step{{Name: "url", Status: preflight.OK}}})
	if !bytes.Contains(ok, []byte(`"ok":true`)) || bytes.Contains(ok, []byte("problem")) {
		t.Errorf("JSON of a good report: %s", ok)
	}
}

func table(r preflight.Report) string {
	var b bytes.Buffer
	preflight.PrintReport(&b, r)
	return b.String()
}

// capture records the Authorization headers it is sent, as a server that
// is not the receiver (a typo's host) would log them.
type capture struct {
	mu    sync.Mutex
	auth  []string // every request's Authorization header, "" for none
	inner http.Handler
}

func (c *capture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.auth = append(c.auth, r.Header.Get("Authorization"))
	c.mu.Unlock()
	c.inner.ServeHTTP(w, r)
}

// sent is the Authorization headers received that were not empty.
func (c *capture) sent() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, a := range c.auth {
		if a != "" {
			out = append(out, a)
		}
	}
	return out
}

func (c *capture) requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.auth)
}

// answer is the receiver's answer to a preflight request, to anyone.
func answer() http.Handler {
	return handler(200, map[string]string{"Content-Type": "application/json"}, `{"preflight":"ok","service":"`+wire.Service+`"}`)
}

// imitation answers a request without credentials as the receiver does
// (401, its realm), and one with credentials with authed (nil: the
// receiver's preflight answer).
func imitation(authed http.Handler) http.Handler {
	if authed == nil {
		authed = answer()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			w.Header().Set("WWW-Authenticate", `Basic realm="`+wire.Realm+`", charset="UTF-8"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		authed.ServeHTTP(w, r)
	})
}

// TestCredentialsOnlyToTheReceiver: a TLS server with a valid certificate
// that does not answer a request without credentials as the receiver does
// (a typo in the host name, taken by someone who logs what he is sent)
// never gets the credentials, whatever it answers, and the check names
// what it answered. A redirect is not followed, with or without them.
func TestCredentialsOnlyToTheReceiver(t *testing.T) {
	year := time.Now().Add(365 * 24 * time.Hour)
	elsewhere := &capture{inner: handler(200, nil, "")}
	target, _ := tlsServer(t, elsewhere, year)
	cases := []struct {
		name    string
		h       http.Handler
		problem preflight.Problem
		detail  string
	}{
		{"200 with a page", handler(200, map[string]string{"Content-Type": "text/html"}, "<html>parked domain</html>"), preflight.NotReceiver, `200 OK (no Basic realm)`},
		// The receiver's answer without asking for credentials is not
		// the receiver's: it always asks.
		{"200 with the receiver's answer", answer(), preflight.NotReceiver, "200 OK (no Basic realm)"},
		{"401 with another realm", handler(401, map[string]string{"WWW-Authenticate": `Basic realm="Restricted"`}, ""), preflight.NotReceiver, `401 Unauthorized (realm "Restricted")`},
		{"401 with the realm in another scheme", handler(401, map[string]string{"WWW-Authenticate": `Bearer realm="` + wire.Realm + `"`}, ""), preflight.NotReceiver, `401 Unauthorized (no Basic realm)`},
		{"401 without a challenge", handler(401, nil, ""), preflight.NotReceiver, `401 Unauthorized (no Basic realm)`},
		{"404", http.NotFoundHandler(), preflight.NotReceiver, "404 Not Found (no Basic realm)"},
		{"a redirect to another host", handler(307, map[string]string{"Location": target.URL + "/notifications"}, ""), preflight.NotReceiver, "307 Temporary Redirect (no Basic realm)"},
		{"429", handler(429, nil, ""), preflight.WrongCredentials, "429 Too Many Requests (no Basic realm)"},
		{"502", handler(502, nil, "Bad Gateway"), preflight.Unreachable, "502 Bad Gateway (no Basic realm)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spy := &capture{inner: c.h}
			srv, pool := tlsServer(t, spy, year)
			r := preflight.Check(context.Background(), preflight.Options{Endpoint: srv.URL + "/notifications", Username: user, Password: password, RootCAs: pool})
			t.Logf("\n%s", table(r))
			if got := spy.sent(); len(got) != 0 {
				t.Errorf("the server was sent the credentials: %q", got)
			}
			if spy.requests() != 1 {
				t.Errorf("%d requests, want the one without credentials", spy.requests())
			}
			last := r.Checks[len(r.Checks)-1]
			if r.OK() || r.Problem != c.problem || last.Name != "webhook" {
				t.Fatalf("problem %q at %s, want %q at webhook\n%s", r.Problem, last.Name, c.problem, table(r))
			}
			for _, want := range []string{c.detail, "without credentials answered", "not the receiver's 401 with Basic realm \"" + wire.Realm + "\"", "the credentials were not sent"} {
				if !strings.Contains(last.Detail, want) {
					t.Errorf("detail %q, want %q in it", last.Detail, want)
				}
			}
		})
	}
	if n := elsewhere.requests(); n != 0 {
		t.Errorf("the redirect was followed: %d requests to its target", n)
	}

	// What answers as the receiver gets the credentials, once, in the
	// second request.
	spy := &capture{inner: imitation(nil)}
	srv, pool := tlsServer(t, spy, year)
	r := preflight.Check(context.Background(), preflight.Options{Endpoint: srv.URL + "/notifications", Username: user, Password: password, RootCAs: pool})
	if !r.OK() || len(spy.auth) != 2 || spy.auth[0] != "" || len(spy.sent()) != 1 {
		t.Errorf("the receiver's imitation: Authorization %q\n%s", spy.auth, table(r))
	}
}
