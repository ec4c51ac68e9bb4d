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
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/auth"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/publishtest"
	"github.com/cdse-jetstream/receiver/internal/webhook"

	"github.com/cdse-jetstream/receiver/internal/preflight"
	"github.com/cdse-jetstream/receiver/internal/testkit/testcert"
)

const (
	user     = "cdse"
	password = "a-long-webhook-password"
)

// receiver is the receiver's real webhook (internal/webhook, its Basic
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

		{"not our receiver: 404", func(t *testing.T) preflight.Options {
			srv, pool := tlsServer(t, http.NotFoundHandler(), year)
			return preflight.Options{Endpoint: srv.URL + "/notifications", RootCAs: pool}
		}, want{all, preflight.Fail, preflight.NotReceiver, "404 Not Found: check the URL's path"}},

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
