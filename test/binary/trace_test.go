package binary_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/internal/stream/embedded"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

type traced struct {
	Query string
	By    string
	Hits  []struct {
		Stream, Subject, What, Interest, Reason, Source, Detail string
		Seq                                                     uint64
	}
	Streams []struct {
		Stream  string
		Missing bool
		Done    bool
	}
	Versions *struct {
		Acquisition, From, Standing, Note string
		Versions                          []struct {
			ID, Name, Version string
			Latest, Traced    bool
		}
		Notices []struct{ Reason string }
	}
}

func (tr traced) whats() string {
	var w []string
	for _, h := range tr.Hits {
		s := h.Stream + ":" + h.What
		if h.Interest != "" {
			s += ":" + h.Interest
		}
		if h.Reason != "" {
			s += ":" + h.Reason
		}
		w = append(w, s)
	}
	return strings.Join(w, " ")
}

func runTrace(t *testing.T, env []string, args ...string) (traced, string, int) {
	t.Helper()
	out, errOut, code := command(t, env, append([]string{"trace", "-o", "json"}, args...)...)
	var tr traced
	if err := json.Unmarshal([]byte(out), &tr); err != nil {
		t.Fatalf("trace %v -o json: exit %d: %v: %s %s", args, code, err, out, errOut)
	}
	return tr, errOut, code
}

// TestTrace: receiver trace finds a product's product message, its
// interest copy and its quarantined body, by id and by name; the fetcher's
// events once its stream exists (none before is no error); and says "not
// found" with exit 1.
func TestTrace(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dataDir := t.TempDir()
	file := filepath.Join(t.TempDir(), "interests.yaml")
	writeFile(t, file, s2Interests)
	p := startReceiver(t, dataDir, "INTERESTS_FILE="+file)
	env := []string{"RECEIVER_DATA_DIR=" + dataDir, "INTERESTS_FILE=" + file}
	const (
		id   = "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f"
		name = "S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE"
	)
	body := fixtures.Notification(t, "created-s2.json")
	refused := bytes.Replace(body, []byte(`"created"`), []byte(`"Created"`), 1)
	for _, b := range [][]byte{body, fixtures.Notification(t, "created-s3.json")} {
		if code, resp := p.post(t, b); code != 200 {
			t.Fatalf("%d %s", code, resp)
		}
	}
	if code, resp := p.post(t, refused); code != 400 {
		t.Fatalf("%d %s", code, resp)
	}
	// Another product's refused body, which must not show.
	if code, resp := p.post(t, bytes.Replace(fixtures.Notification(t, "created-s3.json"), []byte(`"created"`), []byte(`"Created"`), 1)); code != 400 {
		t.Fatalf("%d %s", code, resp)
	}

	want := "CDSE_PRODUCTS:product CDSE_PRODUCTS:interest:s2 CDSE_QUARANTINE:quarantine:invalid_notification"
	for _, q := range []string{id, name} {
		tr, errOut, code := runTrace(t, env, q)
		if code != 0 || tr.whats() != want {
			t.Fatalf("trace %s: exit %d %s; hits %s, want %s", q, code, errOut, tr.whats(), want)
		}
		if h := tr.Hits[0]; h.Source != "push" || h.Subject != "cdse.product.created.SENTINEL-2.S2MSI2A" {
			t.Errorf("product hit %+v", h)
		}
		if len(tr.Streams) != 3 || tr.Streams[1].Stream != "CDSE_FETCHED" || !tr.Streams[1].Missing {
			t.Errorf("streams %+v", tr.Streams)
		}
	}

	// The fetcher's events, once its stream is there.
	login, err := embedded.ReadLogin(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	js, closeNC := natstest.JetStream(t, p.natsURL, nats.UserInfo(login.User, login.Password))
	defer closeNC()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "CDSE_FETCHED", Subjects: []string{"cdse.fetched.>", "cdse.fetchfailed.>"}}); err != nil {
		t.Fatal(err)
	}
	for subject, h := range map[string][2]string{
		"cdse.fetched.created.SENTINEL-2.S2MSI2A": {"Cdse-Object-Url", "file:///data/" + name + ".zip"},
		"cdse.fetchfailed.SENTINEL-2.S2MSI2A":     {"Cdse-Fetch-Error", "product offline"},
	} {
		m := nats.NewMsg(subject)
		m.Data = body
		m.Header.Set("Cdse-Product-Id", id)
		m.Header.Set("Cdse-Product-Name", name)
		m.Header.Set("Cdse-Source", "push")
		m.Header.Set(h[0], h[1])
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	tr, errOut, code := runTrace(t, env, name)
	if code != 0 || !strings.HasPrefix(tr.whats(), want+" CDSE_FETCHED:") || len(tr.Hits) != 5 {
		t.Fatalf("trace with the fetcher's stream: exit %d %s; hits %s", code, errOut, tr.whats())
	}
	// The table, as an operator reads it.
	out, errOut, code := command(t, env, "trace", id)
	for _, w := range []string{"STREAM", "WHAT", "interest s2", "quarantine invalid_notification", "fetched", "failed", "product offline", "file:///data/"} {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("trace %s: exit %d %s; no %q in\n%s", id, code, errOut, w, out)
		}
	}

	// Not there: exit 1, the streams read named.
	out, errOut, code = command(t, env, "trace", "99999999-8d2a-4f3b-9c5e-7a1d2b3c4e5f")
	if code != 1 || out != "" || !strings.Contains(errOut, "no message about it on CDSE_PRODUCTS") {
		t.Errorf("not found: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if tr, _, code := runTrace(t, env, "NOT_A_PRODUCT.SAFE"); code != 1 || len(tr.Hits) != 0 || tr.By != "name" || tr.Versions == nil || tr.Versions.Note != "no acquisition (no naming rule applies)" {
		t.Errorf("not found -o json: exit %d %+v", code, tr)
	}
	// Usage errors exit 2.
	for _, args := range [][]string{{"trace"}, {"trace", id, name}, {"trace", ""}, {"trace", id, "-o", "xml"}, {"trace", id, "--timeout", "0s"}} {
		if _, errOut, code := command(t, env, args...); code != 2 || !strings.Contains(errOut, "receiver trace") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
		}
	}

	// Two versions of one acquisition (issue 42): the older's trace shows
	// the acquisition, both versions oldest first, the newer the latest,
	// and the notice between them, once the versions consumer decided.
	for _, n := range []string{olderL1C, newerL1C} {
		b := bytes.ReplaceAll(bytes.ReplaceAll(body, []byte(name), []byte(n)), []byte(id), []byte(uuid.NewSHA1(uuid.NameSpaceURL, []byte(n)).String()))
		if code, resp := p.post(t, b); code != 200 {
			t.Fatalf("post %s: %d %s", n, code, resp)
		}
	}
	decided(t, js, 4)
	out, errOut, code = command(t, env, "trace", olderL1C)
	older := strings.Index(out, "0204  ")
	newer := strings.Index(out, "0500  ")
	if code != 0 || !strings.Contains(out, "VERSIONS of acquisition S2A_MSIL1C_20150704T101006_R022_T32TPS (its messages' Cdse-Acquisition)") ||
		older < 0 || newer < older || !strings.Contains(out[older:newer], "superseded by "+newerL1C) || !strings.Contains(out[newer:], newerL1C+"  latest") ||
		!strings.Contains(out, "This product (*): superseded by "+newerL1C) || !strings.Contains(out, "newer_arrived") {
		t.Errorf("trace %s: exit %d %s; want the acquisition, both versions in order, the newer the latest, the notice:\n%s", olderL1C, code, errOut, out)
	}
	tr, errOut, code = runTrace(t, env, olderL1C)
	if v := tr.Versions; code != 0 || v == nil || v.Acquisition != "S2A_MSIL1C_20150704T101006_R022_T32TPS" || v.Standing != "superseded" || len(v.Versions) != 2 ||
		v.Versions[0].Name != olderL1C || !v.Versions[0].Traced || v.Versions[1].Name != newerL1C || !v.Versions[1].Latest || len(v.Notices) != 1 {
		t.Errorf("trace %s -o json: exit %d %s; versions %+v", olderL1C, code, errOut, v)
	}
	p.stop(t)
}

// TestTraceBoundedMemory: trace reads a product stream and a quarantine of
// about 100 MB each in a few megabytes: the product stream by its headers,
// the quarantine a few bodies at a time, and still finds the product in
// a refused body that names it only in its bytes.
func TestTraceBoundedMemory(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dataDir := t.TempDir()
	p := startReceiver(t, dataDir, "RECEIVER_MAX_BODY=1MiB")
	// A refused body makes the receiver create the quarantine stream.
	if code, _ := p.post(t, []byte(`{"SubscriptionEvent":"Created"}`)); code != 400 {
		t.Fatalf("refused body answered %d", code)
	}
	login, err := embedded.ReadLogin(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	js, closeJS := natstest.JetStream(t, p.natsURL, nats.UserInfo(login.User, login.Password))
	defer closeJS()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const (
		id = "abcdef01-8d2a-4f3b-9c5e-7a1d2b3c4e5f"
		n  = 110
	)
	big := bytes.Repeat([]byte("x"), 900<<10)
	for i := range n {
		for _, subject := range []string{"cdse.product.created.SENTINEL-1.GRD", "cdse.quarantine.push"} {
			m := nats.NewMsg(subject)
			m.Header.Set("Nats-Msg-Id", fmt.Sprint(subject, i))
			m.Header.Set("Cdse-Source", "push")
			m.Data = big
			if i == n-1 {
				// The last of each names the product: the product message
				// in its header, the refused body only in its bytes.
				if subject == "cdse.quarantine.push" {
					m.Data = append([]byte(`{"ProductId":"`+id+`",`), big...)
				} else {
					m.Header.Set("Cdse-Product-Id", id)
				}
			}
			if _, err := js.PublishMsg(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	env := []string{"RECEIVER_DATA_DIR=" + dataDir}
	out, errOut, code, maxRSS := commandRSS(t, env, "trace", id, "-o", "json")
	var tr traced
	if err := json.Unmarshal([]byte(out), &tr); code != 0 || err != nil || tr.whats() != "CDSE_PRODUCTS:product CDSE_QUARANTINE:quarantine" {
		t.Fatalf("trace: exit %d %v %s: %.300s", code, err, errOut, out)
	}
	t.Logf("receiver trace: peak RSS %d MiB for %d MiB on each stream", maxRSS>>20, n*len(big)>>20)
	// Measured: 31-34 MiB; 43-46 MiB when the quarantine's bodies came
	// 1000 a fetch; over 100 MiB when they are kept.
	if maxRSS > 50<<20 {
		t.Errorf("receiver trace: peak RSS %d MiB for %d MiB on each stream: it holds the bodies", maxRSS>>20, n*len(big)>>20)
	}
}
