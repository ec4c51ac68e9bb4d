package binary_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cdse-jetstream/receiver/internal/stream/embedded"
	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// command runs `receiver args...` with the settings env and returns its
// output and exit code.
func command(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	code, stdout, stderr = bins.Run(t, receiverBin(t), envMap(env), args...)
	return stdout, stderr, code
}

// commandRSS is command, with the process's peak resident memory in
// bytes, measured by the rusage helper (see its comment for why not here).
func commandRSS(t *testing.T, env []string, args ...string) (stdout, stderr string, code int, maxRSS int64) {
	t.Helper()
	helper := bins.Build(t, "github.com/cdse-jetstream/receiver/test/binary/internal/rusage")
	out := filepath.Join(t.TempDir(), "rusage")
	m := envMap(env)
	m["RUSAGE_OUT"] = out
	code, stdout, stderr = bins.Run(t, helper, m, append([]string{receiverBin(t)}, args...)...)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("rusage: %v", err)
	}
	maxRSS, _ = strconv.ParseInt(string(b), 10, 64)
	return stdout, stderr, code, maxRSS
}

// envMap is KEY=VALUE lines as bins.Run takes them.
func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

type listed struct {
	Seq       uint64 `json:"seq"`
	Source    string `json:"source"`
	Reason    string `json:"reason"`
	Field     string `json:"field"`
	ProductID string `json:"productId"`
}

func listQuarantine(t *testing.T, env []string) []listed {
	t.Helper()
	out, errOut, code := command(t, env, "quarantine", "list", "-o", "json")
	if code != 0 {
		t.Fatalf("quarantine list: exit %d: %s", code, errOut)
	}
	var l []listed
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("quarantine list -o json: %v: %s", err, out)
	}
	return l
}

// TestBinaryQuarantineRefused: with consumers' authentication on, a refused
// body is kept, listed, shown byte for byte, not replayed while it is still
// invalid, and consumers cannot write into the quarantine.
func TestBinaryQuarantineRefused(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dataDir := t.TempDir()
	p := startReceiver(t, dataDir, "NATS_EMBEDDED_USER=reader", "NATS_EMBEDDED_PASSWORD=reader-password")
	env := []string{"RECEIVER_DATA_DIR=" + dataDir}
	body := fixtures.Notification(t, "created-s2.json")
	refused := bytes.Replace(body, []byte(`"created"`), []byte(`"Created"`), 1)
	if code, resp := p.post(t, refused); code != 400 || !strings.Contains(resp, `"quarantined":true`) {
		t.Fatalf("%d %s", code, resp)
	}
	l := listQuarantine(t, env)
	if len(l) != 1 || l[0].Source != "push" || l[0].Reason != "invalid_notification" || l[0].Field != "SubscriptionEvent" || l[0].ProductID != "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f" {
		t.Fatalf("list: %+v", l)
	}
	out, errOut, code := command(t, env, "quarantine", "show", strconv.FormatUint(l[0].Seq, 10))
	if code != 0 || out != string(refused) {
		t.Fatalf("show: exit %d, stderr %s; body equal: %v", code, errOut, out == string(refused))
	}
	out, _, code = command(t, env, "quarantine", "replay")
	if code != 0 || !strings.Contains(out, "1 checked: replayed 0") || !strings.Contains(out, "1 still refused") {
		t.Fatalf("replay: exit %d: %s", code, out)
	}
	if n := len(listQuarantine(t, env)); n != 1 {
		t.Errorf("a body still refused left the quarantine: %d left", n)
	}
	// Consumers read, never write: neither the product stream nor the quarantine.
	nc, err := nats.Connect(p.natsURL, nats.UserInfo("reader", "reader-password"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	denied := make(chan error, 1)
	nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { denied <- err })
	if err := nc.Publish("cdse.quarantine.push", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	_ = nc.Flush()
	select {
	case err := <-denied:
		if !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
			t.Errorf("publish error %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("a consumer published into the quarantine without a permissions violation")
	}
	// YAML as well as JSON, with the same names.
	if out, errOut, code := command(t, env, "quarantine", "list", "-o", "yaml"); code != 0 || !strings.Contains(out, "reason: invalid_notification") {
		t.Errorf("list -o yaml: exit %d %s %s", code, out, errOut)
	}
	// Usage errors exit 2 and say why.
	for _, args := range [][]string{{"quarantine"}, {"quarantine", "show"}, {"quarantine", "show", "x"}, {"quarantine", "list", "-o", "xml"}, {"quarantine", "frobnicate"}, {"quarantine", "list", "--bogus"}, {"quarantine", "show", "1", "2"}} {
		if _, errOut, code := command(t, env, args...); code != 2 || !strings.Contains(errOut, "receiver quarantine") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	p.stop(t)
}

// TestBinaryQuarantineReplay: bodies an older validator refused are
// published by a replay with this version, exactly once, and leave the
// quarantine; --dry-run changes nothing; a second replay finds nothing.
func TestBinaryQuarantineReplay(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dataDir := t.TempDir()
	p := startReceiver(t, dataDir)
	env := []string{"RECEIVER_DATA_DIR=" + dataDir}
	// Publishing into the quarantine takes the receiver's login: consumers cannot.
	login, err := embedded.ReadLogin(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	js, closeNC := natstest.JetStream(t, p.natsURL, nats.UserInfo(login.User, login.Password))
	defer closeNC()
	// What an older version's validator left in the quarantine: two valid
	// notifications (one of them also delivered since, by another path)
	// and one that is invalid still.
	read := func(name string) []byte { return fixtures.Notification(t, name) }
	if code, resp := p.post(t, read("created-s3.json")); code != 200 {
		t.Fatalf("%d %s", code, resp)
	}
	for i, body := range [][]byte{read("created-s2.json"), read("created-s3.json"), []byte(`{"SubscriptionEvent":"created"}`)} {
		m := nats.NewMsg("cdse.quarantine.push")
		m.Data = body
		m.Header.Set("Nats-Msg-Id", "old-"+strconv.Itoa(i))
		m.Header.Set("Cdse-Source", "push")
		m.Header.Set("Cdse-Quarantine-Reason", "invalid_notification")
		if _, err := js.PublishMsg(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	before := natstest.StreamCount(t, js, "CDSE_PRODUCTS")
	out, _, code := command(t, env, "quarantine", "replay", "--dry-run", "-o", "json")
	var sum struct {
		DryRun                                              bool
		Checked, Replayed, Stored, Duplicates, StillRefused int
	}
	if err := json.Unmarshal([]byte(out), &sum); code != 0 || err != nil || !sum.DryRun || sum.Checked != 3 || sum.Replayed != 2 || sum.StillRefused != 1 {
		t.Fatalf("dry run: exit %d, %+v, %s", code, sum, out)
	}
	if natstest.StreamCount(t, js, "CDSE_PRODUCTS") != before || len(listQuarantine(t, env)) != 3 {
		t.Fatal("a dry run changed something")
	}
	out, _, code = command(t, env, "quarantine", "replay", "-o", "json")
	if err := json.Unmarshal([]byte(out), &sum); code != 0 || err != nil || sum.Replayed != 2 || sum.Stored != 1 || sum.Duplicates != 1 || sum.StillRefused != 1 {
		t.Fatalf("replay: exit %d, %+v, %s", code, sum, out)
	}
	msgs := natstest.StreamMessages(t, js, "CDSE_PRODUCTS")
	byProduct := natstest.CountBy(msgs, "Cdse-Product-Id")
	if len(msgs) != 2 || byProduct["0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f"] != 1 {
		t.Fatalf("product stream: %d messages, by product %v", len(msgs), byProduct)
	}
	last := msgs[len(msgs)-1]
	if last.Subject != "cdse.product.created.SENTINEL-2.S2MSI2A" || last.Header.Get("Cdse-Source") != "push" || last.Header.Get("Cdse-Replayed") == "" ||
		last.Header.Get("Nats-Msg-Id") != "created:0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f" || !bytes.Equal(last.Data, read("created-s2.json")) {
		t.Errorf("replayed message: %s %v", last.Subject, last.Header)
	}
	if l := listQuarantine(t, env); len(l) != 1 {
		t.Errorf("quarantine holds %d after the replay, want the 1 still refused", len(l))
	}
	out, _, code = command(t, env, "quarantine", "replay")
	if code != 0 || !strings.Contains(out, "1 checked: replayed 0") || natstest.StreamCount(t, js, "CDSE_PRODUCTS") != 2 {
		t.Fatalf("second replay: exit %d: %s", code, out)
	}
	p.stop(t)
}
