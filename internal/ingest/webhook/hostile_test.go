package webhook

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	"golang.org/x/crypto/bcrypt"

	"github.com/cdse-jetstream/receiver/internal/receiver/auth"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// TestHostileBodies: every case gets its status and a JSON error body,
// nothing is published, and the server keeps answering.
func TestHostileBodies(t *testing.T) {
	e := start(t, natstest.RunJetStream(t))
	pid := `"ProductId":"0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f"`
	one := `{"SubscriptionEvent":"created",` + pid + `}`
	tests := []struct {
		name   string
		body   string
		status int
		code   string
	}{
		{"number", "12", 400, "invalid_notification"},
		{"string", `"created"`, 400, "invalid_notification"},
		{"10000 elements", "[" + strings.TrimSuffix(strings.Repeat(one+",", 10000), ",") + "]", 413, "too_many_notifications"},
		{"100000 brackets", strings.Repeat("[", 100000), 400, "invalid_notification"},
		{"invalid utf-8", "{\"SubscriptionEvent\":\"created\"," + pid + ",\"ProductName\":\"\xc3\x28\"}", 400, "invalid_notification"},
		{"duplicate keys", `{"SubscriptionEvent":"deleted",` + pid + `,"SubscriptionEvent":"created"}`, 400, "invalid_notification"},
		{"event list", `{"SubscriptionEvent":["created","deleted"],` + pid + `}`, 400, "invalid_notification"},
		{"ProductId 10 MB", `{"SubscriptionEvent":"created","ProductId":"` + strings.Repeat("0", 10<<20) + `"}`, 413, "body_too_large"},
		{"ProductId 900 KB", `{"SubscriptionEvent":"created","ProductId":"` + strings.Repeat("0", 900<<10) + `"}`, 400, "invalid_notification"},
		{"CRLF in ProductName", `{"SubscriptionEvent":"created",` + pid + `,"ProductName":"S2A\r\nNats-Msg-Id: forged"}`, 400, "invalid_notification"},
		{"CRLF in value.Name", `{"SubscriptionEvent":"created",` + pid + `,"value":{"Name":"S2A\nX: y"}}`, 400, "invalid_notification"},
		{"NUL in AckId", `{"SubscriptionEvent":"created",` + pid + `,"AckId":"a\u0000b"}`, 400, "invalid_notification"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := e.post(t, []byte(tt.body))
			if resp.StatusCode != tt.status || !strings.Contains(string(body), `"error":"`+tt.code+`"`) {
				t.Fatalf("got %d %.200s, want %d %s", resp.StatusCode, body, tt.status, tt.code)
			}
			if len(body) > 500 {
				t.Errorf("error body of %d bytes echoes the input", len(body))
			}
		})
	}
	if got := e.count(t); got != 0 {
		t.Errorf("%d messages published from hostile input", got)
	}
	if resp, b := e.post(t, fixtures.Notification(t, "created-s1.json")); resp.StatusCode != 200 {
		t.Fatalf("server unhealthy afterwards: %d %s", resp.StatusCode, b)
	}
}

// TestSubjectInjection: tokens that reach the subject cannot add tokens or
// wildcards, whatever the notification says.
func TestSubjectInjection(t *testing.T) {
	e := start(t, natstest.RunJetStream(t))
	for i, platform := range []string{"SENTINEL-2.>", "*", "a b", "ünïcödé", "x.y.z", ">"} {
		id := fmt.Sprintf("0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e%02d", i)
		body := `{"SubscriptionEvent":"created","ProductId":"` + id + `","value":{"Attributes":[{"Name":"platformShortName","Value":` + fmt.Sprintf("%q", platform) + `},{"Name":"productType","Value":` + fmt.Sprintf("%q", platform) + `}]}}`
		if resp, b := e.post(t, []byte(body)); resp.StatusCode != 200 {
			t.Fatalf("%q: %d %s", platform, resp.StatusCode, b)
		}
	}
	s, _ := e.js.Stream(context.Background(), stream)
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(">"))
	if err != nil {
		t.Fatal(err)
	}
	for subj := range info.State.Subjects {
		tokens := strings.Split(subj, ".")
		if len(tokens) != 5 || strings.ContainsAny(tokens[3]+tokens[4], "*> ") {
			t.Errorf("subject %q escapes the scheme", subj)
		}
	}
	if len(info.State.Subjects) == 0 {
		t.Fatal("no subjects listed")
	}
}

func TestAuthFailureLimit(t *testing.T) {
	e := startWith(t, natstest.RunJetStream(t), func(o *Options) {
		o.Limiter = auth.NewFailureLimiter(3, time.Minute, 100)
	})
	wrong := "Basic " + base64.StdEncoding.EncodeToString([]byte("cdse:guess"))
	var codes []int
	for range 5 {
		resp, _ := e.do(t, req{body: []byte("{}"), noAuth: true, headers: map[string]string{"Authorization": wrong}})
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == 429 && resp.Header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
	}
	if fmt.Sprint(codes) != "[401 401 401 429 429]" {
		t.Errorf("statuses %v", codes)
	}
	// The correct client, from the same address, is not slowed down.
	if resp, b := e.post(t, fixtures.Notification(t, "created-s2.json")); resp.StatusCode != 200 {
		t.Fatalf("correct credentials refused while the address is limited: %d %s", resp.StatusCode, b)
	}
	// A request without credentials costs nothing to refuse and guesses
	// nothing: it is answered the challenge (register's preflight asks so
	// before it sends a password), even from an address over its limit.
	for range 3 {
		resp, _ := e.do(t, req{body: []byte("{}"), noAuth: true})
		if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `Basic realm=`) {
			t.Fatalf("no credentials from a limited address: %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
}

// TestMissingCredentialsAreNotFailures: requests without credentials
// (a preflight's first request, a browser) do not count against the
// address's limit of failed logins.
func TestMissingCredentialsAreNotFailures(t *testing.T) {
	e := startWith(t, natstest.RunJetStream(t), func(o *Options) {
		o.Limiter = auth.NewFailureLimiter(3, time.Minute, 100)
	})
	for range 10 {
		if resp, _ := e.do(t, req{body: []byte("{}"), noAuth: true}); resp.StatusCode != 401 {
			t.Fatalf("no credentials: %d", resp.StatusCode)
		}
	}
	wrong := "Basic " + base64.StdEncoding.EncodeToString([]byte("cdse:guess"))
	if resp, _ := e.do(t, req{body: []byte("{}"), noAuth: true, headers: map[string]string{"Authorization": wrong}}); resp.StatusCode != 401 {
		t.Errorf("the first wrong password after requests without credentials: %d, want 401", resp.StatusCode)
	}
}

// htpasswdVerifier is a verifier of an htpasswd file holding user's
// password, and the file's path.
func htpasswdVerifier(t *testing.T) (*auth.Basic, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "htpasswd")
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(user+":"+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := auth.NewBasic(nil, path)
	if err != nil {
		t.Fatal(err)
	}
	return v, path
}

// guess sends n requests with the wrong password of who, one after the
// other, and returns their statuses.
func (e *env) guess(t *testing.T, who string, n int) []int {
	t.Helper()
	wrong := "Basic " + base64.StdEncoding.EncodeToString([]byte(who+":guess"))
	var codes []int
	for range n {
		resp, _ := e.do(t, req{body: []byte("{}"), noAuth: true, headers: map[string]string{"Authorization": wrong}})
		codes = append(codes, resp.StatusCode)
	}
	return codes
}

// TestAuthFailureLimitPassesTheRightPassword: the catalogue's htpasswd
// password passes from an address over its failed-login limit when it is
// not remembered: the first time, right after a reload of the unchanged
// file, and once the memory of verified passwords has expired.
func TestAuthFailureLimitPassesTheRightPassword(t *testing.T) {
	v, path := htpasswdVerifier(t)
	var later atomic.Int64 // how far the verifier's clock is ahead
	v.SetClock(func() time.Time { return time.Now().Add(time.Duration(later.Load())) })
	e := startWithVerifier(t, natstest.RunJetStream(t), v, func(o *Options) {
		o.Limiter = auth.NewFailureLimiter(20, time.Minute, 100)
	})
	checks := func() float64 {
		return testutil.ToFloat64(mustCounter(t, e.reg, "cdse_receiver_auth_bcrypt_checks_total"))
	}
	codes := e.guess(t, user, 25)
	if codes[19] != 401 || codes[24] != 429 {
		t.Fatalf("statuses %v: want 401 up to the 20th, 429 after", codes)
	}
	tests := []struct {
		name       string
		before     func(t *testing.T)
		wantChecks float64 // bcrypt checks of the right password
	}{
		{"never verified", func(*testing.T) {}, 1},
		{"after a reload of the unchanged file", func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			at := time.Now().Add(time.Hour)
			if err := os.Chtimes(path, at, at); err != nil {
				t.Fatal(err)
			}
			if changed, err := v.Reload(); !changed || err != nil {
				t.Fatalf("reload: %v %v", changed, err)
			}
		}, 0},
		{"after the memory expired", func(*testing.T) { later.Add(int64(11 * time.Minute)) }, 1},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.before(t)
			if codes := e.guess(t, user, 2); fmt.Sprint(codes) != "[429 429]" {
				t.Fatalf("the address is not over its limit: %v", codes)
			}
			before := checks()
			body := bytes.Replace(fixtures.Notification(t, "created-s2.json"), []byte("0f6b4c1e-8d2a"), []byte(fmt.Sprintf("0f6b4c1e-8d%02d", i)), 1)
			if resp, b := e.post(t, body); resp.StatusCode != 200 {
				t.Fatalf("the right password from the limited address: %d %s", resp.StatusCode, b)
			}
			if got := checks() - before; got != tt.wantChecks {
				t.Errorf("%v bcrypt checks of the right password, want %v", got, tt.wantChecks)
			}
		})
	}
}

// countingVerifier records how many Verify calls (bcrypt checks, with the
// wait for their turn) run at once, at most.
type countingVerifier struct {
	*auth.Basic
	running, most atomic.Int32
}

func (c *countingVerifier) Verify(ctx context.Context, user, password string) (bool, error) {
	n := c.running.Add(1)
	defer c.running.Add(-1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	return c.Basic.Verify(ctx, user, password)
}

// TestAuthFailureLimitBoundsBcrypt: from an address over its failed-login
// limit, a user not in the htpasswd file costs no bcrypt check, and a
// flood of guesses for one who is runs one check at a time (429 once
// checked, 503 when its turn could not come); the right password still
// passes afterwards.
func TestAuthFailureLimitBoundsBcrypt(t *testing.T) {
	b, _ := htpasswdVerifier(t)
	v := &countingVerifier{Basic: b}
	e := startWithVerifier(t, natstest.RunJetStream(t), v, func(o *Options) {
		o.Limiter = auth.NewFailureLimiter(3, time.Minute, 100)
	})
	checks := func() float64 {
		return testutil.ToFloat64(mustCounter(t, e.reg, "cdse_receiver_auth_bcrypt_checks_total"))
	}
	if codes := e.guess(t, "nobody", 10); fmt.Sprint(codes) != "[401 401 401 429 429 429 429 429 429 429]" {
		t.Errorf("statuses %v", codes)
	}
	if got := checks(); got != 3 {
		t.Errorf("%v bcrypt checks: the 7 requests answered 429 ran bcrypt too (want 3)", got)
	}

	const flood = 12
	wrong := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":guess"))
	codes := make(chan int, flood)
	for range flood {
		go func() {
			hr, _ := http.NewRequest(http.MethodPost, e.url+"/notifications", strings.NewReader("{}"))
			hr.Header.Set("Authorization", wrong)
			resp, err := http.DefaultClient.Do(hr)
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	got := map[int]int{}
	for range flood {
		select {
		case c := <-codes:
			got[c]++
		case <-time.After(20 * time.Second):
			t.Fatalf("the flood is not answered: %v so far", got)
		}
	}
	if got[429] == 0 || got[429]+got[503] != flood {
		t.Errorf("statuses %v: want 429 (checked) or 503 (no turn) only", got)
	}
	if n := v.most.Load(); n != 1 {
		t.Errorf("%d checks ran at once for one address over its limit, want 1", n)
	}
	if n := checks() - 3; n != float64(got[429]) {
		t.Errorf("%v bcrypt checks for %d guesses answered 429", n, got[429])
	}
	if resp, b := e.post(t, fixtures.Notification(t, "created-s1.json")); resp.StatusCode != 200 {
		t.Fatalf("the right password from the limited address: %d %s", resp.StatusCode, b)
	}
}

func TestTrustedProxies(t *testing.T) {
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	_, elsewhere, _ := net.ParseCIDR("192.0.2.0/24")
	tests := []struct {
		name    string
		proxies []*net.IPNet
		want    string
	}{
		{"no proxies: the peer", nil, "remote=127.0.0.1"},
		{"untrusted peer: the peer", []*net.IPNet{elsewhere}, "remote=127.0.0.1"},
		{"trusted peer: the forwarded client", []*net.IPNet{loopback}, "remote=198.51.100.7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startWith(t, natstest.RunJetStream(t), func(o *Options) { o.TrustedProxies = tt.proxies })
			e.do(t, req{body: []byte("{}"), headers: map[string]string{"X-Forwarded-For": "198.51.100.7"}})
			line, _ := e.logs.LastEntry().String()
			if !strings.Contains(line, tt.want) {
				t.Errorf("log %q lacks %s", line, tt.want)
			}
		})
	}
}

// rawConn opens a TCP connection to the test server.
func (e *env) rawConn(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func authHeader() string {
	return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password)) + "\r\n"
}

// TestSlowAndLyingClients: the server's timeouts cut off what would tie it up.
func TestSlowAndLyingClients(t *testing.T) {
	e := start(t, natstest.RunJetStream(t))

	t.Run("slowloris headers", func(t *testing.T) {
		c := e.rawConn(t)
		start := time.Now()
		closed := false
		for _, b := range []byte("POST /notifications HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaa") {
			if _, err := c.Write([]byte{b}); err != nil {
				closed = true
				break
			}
			time.Sleep(100 * time.Millisecond)
			if time.Since(start) > 3*time.Second {
				break
			}
		}
		if !closed {
			// The server must have hung up (after ReadHeaderTimeout).
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			if _, err := c.Read(make([]byte, 1)); err == nil {
				t.Fatal("connection still open")
			}
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("cut off after %s; ReadHeaderTimeout is 500ms", d)
		}
	})

	t.Run("lying Content-Length", func(t *testing.T) {
		c := e.rawConn(t)
		body := string(fixtures.Notification(t, "created-s2.json"))
		fmt.Fprintf(c, "POST /notifications HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s", authHeader(), len(body)+100, body)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no response: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 408 || !strings.Contains(string(b), `"error":"request_timeout"`) {
			t.Fatalf("got %d %s, want 408", resp.StatusCode, b)
		}
	})

	t.Run("over the limit without Content-Length", func(t *testing.T) {
		c := e.rawConn(t)
		fmt.Fprintf(c, "POST /notifications HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%sTransfer-Encoding: chunked\r\n\r\n", authHeader())
		chunk := bytes.Repeat([]byte(" "), 64<<10)
		for range 20 { // 1.25 MiB
			fmt.Fprintf(c, "%x\r\n%s\r\n", len(chunk), chunk)
		}
		fmt.Fprint(c, "0\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no response: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 413 || !strings.Contains(string(b), `"error":"body_too_large"`) {
			t.Fatalf("got %d %s, want 413", resp.StatusCode, b)
		}
	})

	t.Run("very long URL and headers", func(t *testing.T) {
		for _, r := range []req{
			{path: "/notifications?" + strings.Repeat("a", 64<<10)},
			{headers: map[string]string{"X-Big": strings.Repeat("b", 64<<10)}},
		} {
			r.body = fixtures.Notification(t, "created-s2.json")
			resp, _ := e.do(t, r)
			if resp.StatusCode != 431 {
				t.Errorf("got %d, want 431", resp.StatusCode)
			}
		}
	})

	if got := e.count(t); got != 0 {
		t.Errorf("%d messages published", got)
	}
	if resp, b := e.post(t, fixtures.Notification(t, "created-s3.json")); resp.StatusCode != 200 {
		t.Fatalf("server unhealthy afterwards: %d %s", resp.StatusCode, b)
	}
}

// TestSlowBrokerNoLeak: acks slower than the timeout get 503 + Retry-After,
// and nothing is left behind (goroutines come back to where they were).
func TestSlowBrokerNoLeak(t *testing.T) {
	srv := natstest.RunJetStream(t)
	e := start(t, srv)
	// Make JetStream unable to answer in time: the stream now captures other
	// subjects, and a slow responder answers ours too late.
	s, _ := e.js.Stream(context.Background(), stream)
	cfg := s.CachedInfo().Config
	cfg.Subjects = []string{"elsewhere.>"}
	if _, err := e.js.UpdateStream(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	sub, err := e.nc.Subscribe("cdse.product.>", func(m *nats.Msg) {
		<-release
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	e.nc.Flush()
	http.DefaultClient.CloseIdleConnections()
	before := runtime.NumGoroutine()

	for i := range 3 {
		body := bytes.Replace(fixtures.Notification(t, "created-s2.json"), []byte("0f6b4c1e-8d2a"), []byte(fmt.Sprintf("0f6b4c1e-8d%02d", i)), 1)
		resp, b := e.post(t, body)
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("slow broker: %d %s", resp.StatusCode, b)
		}
	}
	close(release)
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+2 {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines %d, before %d:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStreamFull: a stream at its limits with discard=new refuses; the
// sender gets 503, never a 2xx, and the log says why.
func TestStreamFull(t *testing.T) {
	e := start(t, natstest.RunJetStream(t))
	s, _ := e.js.Stream(context.Background(), stream)
	cfg := s.CachedInfo().Config
	cfg.MaxBytes = 12 << 10
	cfg.Discard = jetstream.DiscardNew
	if _, err := e.js.UpdateStream(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if resp, b := e.post(t, fixtures.Notification(t, "created-s1.json")); resp.StatusCode != 200 {
		t.Fatalf("first: %d %s", resp.StatusCode, b)
	}
	resp, b := e.post(t, fixtures.Notification(t, "created-s3.json"))
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("full stream: %d %s", resp.StatusCode, b)
	}
	found := false
	for _, entry := range e.logs.AllEntries() {
		if line, _ := entry.String(); strings.Contains(line, "maximum bytes exceeded") && entry.Level <= logrus.ErrorLevel {
			found = true
		}
	}
	if !found {
		t.Error("no error log line says the stream is full")
	}
	if got := e.count(t); got != 1 {
		t.Errorf("stream holds %d", got)
	}
}
