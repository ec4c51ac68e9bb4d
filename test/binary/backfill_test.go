package binary_test

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

type backfillSummary struct {
	DryRun   bool
	Interest string
	Resumed  bool
	Scanned  int `json:"scannedIds"`
	Events   []struct {
		Event                                       string
		Listed, Total                               int64
		Published, OnStream, Quarantined, Unchanged int
	}
}

func (s backfillSummary) count(f func(e string) int) map[string]int {
	out := map[string]int{}
	for _, e := range s.Events {
		out[e.Event] = f(e.Event)
	}
	return out
}

// killWhenStored starts the backfill cmd and kills it with SIGKILL once
// the product stream holds n messages, failing when it ends first or makes
// no progress for a minute.
func killWhenStored(t *testing.T, cmd *exec.Cmd, js jetstream.JetStream, n uint64) {
	t.Helper()
	var logs bins.SyncBuffer // read while the process writes
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for natstest.StreamCount(t, js, "CDSE_PRODUCTS") < n {
		select {
		case err := <-exited:
			t.Fatalf("backfill finished (%v) before it could be killed:\n%s", err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no progress:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
}

// TestBinaryBackfill: a range of 3 000 products (with modifications and
// deletions) backfilled by the real binary, killed with SIGKILL halfway,
// started again: every event exactly once. A third run publishes nothing.
// The stream's duplicate window is 1 s, so only the backfill's own check of
// the stream keeps the later runs from publishing twice.
func TestBinaryBackfill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	nats := natstest.RunJetStream(t)
	clock := cdsesim.NewClock(time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC))
	sim := cdsesim.New(cdsesim.Options{Users: map[string]cdsesim.User{"op@example.org": {Password: "account-pw"}}, Now: clock.Now})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); sim.Close() })
	var s2 []*cdsesim.Product
	for range 60 {
		s2 = append(s2, sim.Generate(cdsesim.Sentinel2, 50)...)
		sim.Generate(cdsesim.Sentinel1, 2) // outside the filter
		clock.Add(time.Minute)
	}
	for _, p := range s2[100:120] {
		if err := sim.ModifyProduct(p.ID); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range s2[:10] {
		if err := sim.DeleteProduct(p.ID, "Duplicated product"); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{
		"NATS_URL=" + nats.ClientURL(),
		"CDSE_USERNAME=op@example.org", "CDSE_PASSWORD=account-pw",
		"CDSE_TOKEN_URL=" + srv.URL + cdsesim.TokenPath,
		"CDSE_CATALOGUE_URL=" + srv.URL + "/odata/v1",
		"RECEIVER_DEDUPE_WINDOW=1s",
	}
	args := []string{"backfill", "--filter", "Collection/Name eq 'SENTINEL-2'", "--since", "2026-11-01T00:00:00Z", "--until", "2026-11-02T00:00:00Z", "--page-size", "250"}
	js, closeNC := natstest.JetStream(t, nats.ClientURL())
	defer closeNC()
	run := func(extra ...string) backfillSummary {
		t.Helper()
		out, errOut, code := command(t, env, append(append(args, extra...), "--rate", "100", "-o", "json")...)
		var sum backfillSummary
		if err := json.Unmarshal([]byte(out), &sum); code != 0 || err != nil {
			t.Fatalf("backfill %v: exit %d, %v\nstdout %s\nstderr %s", extra, code, err, out, errOut)
		}
		return sum
	}

	dry := run("--dry-run")
	if want := map[string]int{"created": 2990, "modified": 20, "deleted": 10}; !equal(dry.count(func(e string) int { return pub(dry, e) }), want) {
		t.Fatalf("dry run would publish %v, want %v", dry.count(func(e string) int { return pub(dry, e) }), want)
	}
	if n := natstest.StreamCount(t, js, "CDSE_PRODUCTS"); n != 0 {
		t.Fatalf("a dry run published %d messages", n)
	}

	// The real run, killed once a third of the products are stored.
	bin := receiverBin(t)
	// Slowly, so that it can be caught halfway.
	cmd := exec.Command(bin, append(args, "--rate", "5")...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	killWhenStored(t, cmd, js, 1000)
	before := natstest.StreamCount(t, js, "CDSE_PRODUCTS")
	if before >= 3020 {
		t.Fatalf("the kill came too late: %d stored", before)
	}

	resumed := run()
	if !resumed.Resumed {
		t.Error("the second run did not resume from the checkpoint")
	}
	check := func(when string) {
		t.Helper()
		msgs := natstest.StreamMessages(t, js, "CDSE_PRODUCTS")
		ids := natstest.CountBy(msgs, "Nats-Msg-Id")
		events := natstest.CountBy(msgs, "Cdse-Event")
		for id, n := range ids {
			if n != 1 {
				t.Errorf("%s: %s stored %d times", when, id, n)
			}
		}
		if want := map[string]int{"created": 2990, "modified": 20, "deleted": 10}; !equal(events, want) || len(msgs) != 3020 {
			t.Errorf("%s: %d messages, by event %v, want %v", when, len(msgs), events, want)
		}
		for _, m := range msgs {
			if m.Header.Get("Cdse-Source") != "backfill" || !strings.HasPrefix(m.Subject, "cdse.product.") || !strings.Contains(m.Subject, ".SENTINEL-2.S2MSI") {
				t.Errorf("%s: message %s from %q", when, m.Subject, m.Header.Get("Cdse-Source"))
				break
			}
		}
	}
	check("after the resumed run")
	// The summary of a resumed run counts the whole backfill, both runs;
	// a page stored just before the kill, whose checkpoint was not saved
	// yet, is found on the stream by the resumed run (counted "on stream").
	if got := pub(resumed, "created") + pub(resumed, "modified") + pub(resumed, "deleted"); got > 3020 || got < 3020-250 {
		t.Errorf("the backfill published %d in all (%d before the kill), want 3020 less at most one page", got, before)
	}

	again := run()
	if again.Resumed || again.Scanned < 3020 {
		t.Errorf("third run: resumed %v, %d ids read from the stream", again.Resumed, again.Scanned)
	}
	for _, e := range again.Events {
		if e.Published != 0 {
			t.Errorf("third run published %d %s events", e.Published, e.Event)
		}
	}
	check("after a third run")
}

func pub(s backfillSummary, event string) int {
	for _, e := range s.Events {
		if e.Event == event {
			return e.Published
		}
	}
	return -1
}

func equal(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
