package binary_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/receiver/status"
	"github.com/cdse-jetstream/receiver/internal/stream/embedded"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// TestConfigFileValuesAsWritten: a YAML settings file gives every value as
// the operator wrote it. A password that YAML would read as a number (hex,
// octal, exponent, a long run of digits, a boolean) is the password, an
// empty value is no value (it does not turn PULL on), and <NAME>_FILE
// works in the file as in the environment.
func TestConfigFileValuesAsWritten(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	for _, pw := range []string{"0x1F2E3D4C5B6A", "012345670123", "1e3000000000", "123456789012345678901234567890"} {
		t.Run(pw, func(t *testing.T) {
			dir := t.TempDir()
			conf := filepath.Join(dir, "receiver.yaml")
			yaml := fmt.Sprintf("RECEIVER_USERNAME: 0x10\nRECEIVER_PASSWORD: %s\nPULL_SUBSCRIPTION_ID:\n", pw)
			if err := os.WriteFile(conf, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			p := startReceiverArgs(t, t.TempDir(), []string{"--config", conf}, "RECEIVER_USERNAME=", "RECEIVER_PASSWORD=")
			if code, resp := p.postAs(t, "0x10", pw, fixtures.Notification(t, "created-s2.json")); code != 200 {
				t.Fatalf("the catalogue sending the password as written got %d %s", code, resp)
			}
		})
	}
	t.Run("password file in the YAML file", func(t *testing.T) {
		dir := t.TempDir()
		pwFile := filepath.Join(dir, "pw")
		if err := os.WriteFile(pwFile, []byte("0o777777777777\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		conf := filepath.Join(dir, "receiver.yaml")
		if err := os.WriteFile(conf, []byte("RECEIVER_USERNAME: cdse\nRECEIVER_PASSWORD_FILE: "+pwFile+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		p := startReceiverArgs(t, t.TempDir(), []string{"--config", conf}, "RECEIVER_USERNAME=", "RECEIVER_PASSWORD=")
		if code, resp := p.postAs(t, "cdse", "0o777777777777", fixtures.Notification(t, "created-s2.json")); code != 200 {
			t.Fatalf("%d %s", code, resp)
		}
	})
}

// TestBareBooleanFlag: `receiver --pprof --config FILE` turns profiling on
// and reads the file; the boolean does not swallow the next argument.
func TestBareBooleanFlag(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	conf := filepath.Join(t.TempDir(), "receiver.yaml")
	if err := os.WriteFile(conf, []byte("RECEIVER_PATH: /hooks/cdse\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startReceiverArgs(t, t.TempDir(), []string{"--pprof", "--config", conf})
	resp, err := http.Get("http://" + p.admin + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/debug/pprof/ answered %d with --pprof", resp.StatusCode)
	}
	st := getStatus(t, p)
	if st.Webhook.Path != "/hooks/cdse" {
		t.Errorf("the file after --pprof was not read: webhook path %q", st.Webhook.Path)
	}
}

func getStatus(t *testing.T, p *proc) status.Receiver {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + p.admin + "/status")
	if err != nil {
		t.Fatalf("/status: %v", err)
	}
	defer resp.Body.Close()
	var st status.Receiver
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// hungServer accepts connections and never answers: an identity provider
// or catalogue that hangs. accepted is closed at the first connection.
func hungServer(t *testing.T) (url string, accepted chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = make(chan struct{})
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		first := true
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			if first {
				close(accepted)
				first = false
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String(), accepted
}

// TestSIGTERMWithHungIdentityProvider: a token endpoint that accepts the
// connection and never answers must not keep the receiver from ending on
// SIGTERM, well inside Kubernetes' 30 s grace period.
func TestSIGTERMWithHungIdentityProvider(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	hung, accepted := hungServer(t)
	p := startReceiver(t, t.TempDir(),
		"RECONCILE_INTERVAL=1m", "RECONCILE_FILTER=Collection/Name eq 'SENTINEL-2'",
		"CDSE_USERNAME=op@example.org", "CDSE_PASSWORD=account-password",
		"CDSE_TOKEN_URL="+hung+"/token", "CDSE_CATALOGUE_URL="+hung+"/odata/v1",
		"RECEIVER_SHUTDOWN_TIMEOUT=20s")
	select {
	case <-accepted:
	case <-time.After(30 * time.Second):
		t.Fatal("the reconciler never asked for a token")
	}
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		t.Logf("exited %s after SIGTERM (%v)", time.Since(start).Round(time.Millisecond), p.err)
	case <-time.After(25 * time.Second):
		t.Fatalf("still running 25 s after SIGTERM with a hung identity provider; logs:\n%s", p.logs.String())
	}
}

// TestStatusDuringReconcilePass: /status answers at once while a long,
// rate-limited reconcile pass runs (register status and its CronJob read
// it with a timeout).
func TestStatusDuringReconcilePass(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	clock := cdsesim.NewClock(time.Now().Add(-time.Hour))
	sim := cdsesim.New(cdsesim.Options{Users: map[string]cdsesim.User{"op@example.org": {Password: "account-password"}}, Now: clock.Now})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); sim.Close() })
	for range 30 {
		sim.Generate(cdsesim.Sentinel2, 100)
		clock.Add(time.Minute)
	}
	p := startReceiver(t, t.TempDir(),
		"RECONCILE_INTERVAL=1m", "RECONCILE_FILTER=Collection/Name eq 'SENTINEL-2'", "RECONCILE_PAGE_SIZE=10",
		"CDSE_USERNAME=op@example.org", "CDSE_PASSWORD=account-password",
		"CDSE_TOKEN_URL="+srv.URL+cdsesim.TokenPath, "CDSE_CATALOGUE_URL="+srv.URL+"/odata/v1")
	js, closeNC := natstest.JetStream(t, p.natsURL)
	defer closeNC()
	// Two pages: the pass is under way.
	if err := natstest.WaitStreamCount(t, js, "CDSE_PRODUCTS", 20, 30*time.Second); err != nil {
		t.Fatalf("the reconciler: %v; logs:\n%s", err, p.logs.String())
	}
	start := time.Now()
	st := getStatus(t, p) // fails the test after 5 s
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("/status took %s during a reconcile pass", took)
	}
	if n := natstest.StreamCount(t, js, "CDSE_PRODUCTS"); n >= 3000 {
		t.Fatalf("the pass ended (%d stored) before /status was asked: the test proves nothing", n)
	}
	if st.Watermarks["created"].IsZero() {
		t.Errorf("/status has no created watermark during the pass: %+v", st.Watermarks)
	}
}

// TestCommandsRefuseBadTemplate: the one-shot commands route as the server
// would, so a subject template the server refuses is refused by them too
// (exit 2, naming the setting), never replaced by the default.
func TestCommandsRefuseBadTemplate(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	env := []string{"NATS_SUBJECT_TEMPLATE=event.nonsense", "RECEIVER_DATA_DIR=" + t.TempDir(),
		"CDSE_USERNAME=op@example.org", "CDSE_PASSWORD=account-password"}
	for _, args := range [][]string{
		{"quarantine", "replay"},
		{"quarantine", "replay", "--dry-run"},
		{"backfill", "--filter", "Collection/Name eq 'SENTINEL-2'", "--since", "2026-11-01T00:00:00Z"},
	} {
		_, errOut, code := command(t, env, args...)
		if code != 2 || !strings.Contains(errOut, "NATS_SUBJECT_TEMPLATE") {
			t.Errorf("receiver %s: exit %d, want 2 naming NATS_SUBJECT_TEMPLATE: %s", strings.Join(args, " "), code, errOut)
		}
	}
}

// TestQuarantineReadBoundedMemory: listing and replaying a quarantine of
// 100 MB reads one body at a time; the command's peak memory stays far
// below what it holds.
func TestQuarantineReadBoundedMemory(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dataDir := t.TempDir()
	p := startReceiver(t, dataDir, "RECEIVER_MAX_BODY=1MiB")
	nc, err := nats.Connect(p.natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// A refused body makes the receiver create the quarantine stream.
	if code, _ := p.post(t, []byte(`{"SubscriptionEvent":"Created"}`)); code != 400 {
		t.Fatalf("refused body answered %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Publishing into the quarantine takes the receiver's login: consumers cannot.
	login, err := embedded.ReadLogin(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	js, closeJS := natstest.JetStream(t, p.natsURL, nats.UserInfo(login.User, login.Password))
	defer closeJS()
	body := bytes.Repeat([]byte("x"), 900<<10) // not JSON: still refused by a replay
	const n = 110
	for i := range n {
		m := nats.NewMsg("cdse.quarantine.push")
		m.Header.Set("Nats-Msg-Id", fmt.Sprint("big-", i))
		m.Header.Set("Cdse-Source", "push")
		m.Header.Set("Cdse-Quarantine-Reason", "invalid_json")
		m.Data = body
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"RECEIVER_DATA_DIR=" + dataDir}
	for _, args := range [][]string{{"quarantine", "list", "-o", "json"}, {"quarantine", "replay", "--dry-run", "-o", "json"}, {"quarantine", "replay", "-o", "json"}} {
		out, errOut, code, maxRSS := commandRSS(t, env, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		if !strings.Contains(out, `"seq"`) {
			t.Errorf("%v printed no entries: %.200s", args, out)
		}
		t.Logf("receiver %s: peak RSS %d MiB for %d MiB quarantined", strings.Join(args, " "), maxRSS>>20, n*len(body)>>20)
		if maxRSS > 60<<20 {
			t.Errorf("receiver %s: peak RSS %d MiB for %d MiB quarantined: it holds the bodies", strings.Join(args, " "), maxRSS>>20, n*len(body)>>20)
		}
	}
}
