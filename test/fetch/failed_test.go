package fetch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// retryPrefix is where `fetcher failed retry` queues a failed event again:
// on the product stream, a subject the fetcher's consumer filters.
const retryPrefix = "cdse.fetchretry"

// failedCLI runs `fetcher failed args...` with what it needs of the
// fetcher's environment: NATS (not the target, not the catalogue login).
func (w *world) failedCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	bin := bins.Build(t, "github.com/cdse-jetstream/receiver/cmd/fetcher")
	return bins.Run(t, bin, map[string]string{
		"NATS_URL": w.receiver.NATSURL,
	}, append([]string{"failed"}, args...)...)
}

// failedEntry is what `failed list -o json` prints of one event.
type failedEntry struct {
	Seq         uint64
	Time        time.Time
	Subject     string
	Collection  string
	ProductType string
	Event       string
	ProductID   string
	ProductName string
	Reason      string
	Consumer    string
	RetryOf     string
	Bytes       int
}

func (w *world) failedList(t *testing.T) []failedEntry {
	t.Helper()
	code, out, errOut := w.failedCLI(t, "list", "-o", "json")
	if code != 0 {
		t.Fatalf("failed list: exit %d: %s%s", code, out, errOut)
	}
	var l []failedEntry
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("failed list: %v: %s", err, out)
	}
	return l
}

// notFound is a fault of the download host: 404 for the product until the
// faults are cleared (a permanent error: given up at once).
func notFound(t *testing.T, w *world, p *cdsesim.Product) {
	t.Helper()
	if err := w.sim.AddFault(cdsesim.Fault{Kind: cdsesim.FaultStatus, Status: 404, Product: p.ID}); err != nil {
		t.Fatal(err)
	}
}

// TestFailedListShowDropRetry: two products the download host answers 404
// are given up; `failed list` names them with the reason, `show` prints
// the notification, `drop` removes one for good; once the fault is gone,
// `retry` queues the other for the running fetcher, which stores it, and
// the failed event is gone: a second retry finds nothing, and the product
// stream holds one retry of it.
func TestFailedListShowDropRetry(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ps := w.sim.Generate(cdsesim.Sentinel2, 2)
	kept, dropped := ps[0], ps[1]
	for _, p := range ps {
		notFound(t, w, p)
	}
	dir := t.TempDir()
	// The defaults: the receiver's product stream takes the retry
	// subjects, and the fetcher's consumer filters its own.
	w.fetcher(t, map[string]string{"FETCH_TARGET": "file://" + dir})
	w.notify(t, ps...)
	_, failed := w.events(t, 2)
	if len(failed) != 2 {
		t.Fatalf("%d failed events, want 2", len(failed))
	}

	l := w.failedList(t)
	if len(l) != 2 {
		t.Fatalf("failed list: %+v", l)
	}
	bySeq := map[string]failedEntry{}
	for _, f := range l {
		bySeq[f.ProductID] = f
		if !strings.Contains(strings.ToLower(f.Reason), "not found") || f.Collection != "SENTINEL-2" || f.ProductType == "" ||
			f.Event != "created" || f.Consumer != "fetcher" || f.Bytes == 0 || f.Time.IsZero() || !strings.HasPrefix(f.Subject, "cdse.fetchfailed.SENTINEL-2.") {
			t.Errorf("failed list entry: %+v", f)
		}
	}
	k, d := bySeq[kept.ID], bySeq[dropped.ID]
	if k.ProductName != kept.Name || d.ProductName != dropped.Name {
		t.Fatalf("failed list: %+v", l)
	}
	code, out, _ := w.failedCLI(t, "list")
	if code != 0 || !strings.Contains(out, "REASON") || !strings.Contains(out, kept.ID) || !strings.Contains(out, fmt.Sprint(k.Seq)) {
		t.Errorf("failed list (table): exit %d:\n%s", code, out)
	}

	// show: the notification as stored; with -o json, its headers.
	var stored []byte
	for _, m := range failed {
		if m.Header.Get("Cdse-Product-Id") == kept.ID {
			stored = m.Data
		}
	}
	if code, out, errOut := w.failedCLI(t, "show", fmt.Sprint(k.Seq)); code != 0 || out != string(stored) {
		t.Errorf("failed show: exit %d: %q%s, want the stored body %q", code, out, errOut, stored)
	}
	code, out, _ = w.failedCLI(t, "show", fmt.Sprint(k.Seq), "-o", "json")
	var shown struct {
		Seq     uint64
		Reason  string
		Headers map[string][]string
		Body    string
	}
	if err := json.Unmarshal([]byte(out), &shown); err != nil || code != 0 {
		t.Fatalf("failed show -o json: exit %d %v: %s", code, err, out)
	}
	if shown.Seq != k.Seq || shown.Body != string(stored) || len(shown.Headers["Cdse-Fetch-Error"]) != 1 || shown.Reason != k.Reason {
		t.Errorf("failed show -o json: %+v", shown)
	}
	if code, _, errOut := w.failedCLI(t, "show", "99999"); code != 1 || !strings.Contains(errOut, "no such failed event: 99999") {
		t.Errorf("failed show of an unknown sequence: exit %d: %s", code, errOut)
	}

	// drop: gone for good; dropped again, it is not found (exit 1).
	if code, out, errOut := w.failedCLI(t, "drop", fmt.Sprint(d.Seq)); code != 0 || !strings.Contains(out, "dropped") {
		t.Errorf("failed drop: exit %d: %s%s", code, out, errOut)
	}
	if code, out, errOut := w.failedCLI(t, "drop", fmt.Sprint(d.Seq)); code != 1 || !strings.Contains(out, "not-found") ||
		!strings.Contains(errOut, "1 of the sequences given are not failed events") {
		t.Errorf("failed drop again: exit %d: %s%s", code, out, errOut)
	}
	if l := w.failedList(t); len(l) != 1 || l[0].Seq != k.Seq {
		t.Fatalf("after the drop: %+v", l)
	}

	// retry: a dry run queues and removes nothing.
	w.sim.ClearFaults()
	if code, out, errOut := w.failedCLI(t, "retry", "--dry-run"); code != 0 || !strings.Contains(out, "would-retry") {
		t.Errorf("failed retry --dry-run: exit %d: %s%s", code, out, errOut)
	}
	if l := w.failedList(t); len(l) != 1 {
		t.Fatalf("after the dry run: %+v", l)
	}
	if n := retries(t, w); n != 0 {
		t.Fatalf("a dry run queued %d retries", n)
	}
	code, out, errOut := w.failedCLI(t, "retry", "-o", "json")
	var sum struct {
		Checked, Retried, Queued int
		Items                    []struct {
			Seq     uint64
			Result  string
			Subject string
		}
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil || code != 0 {
		t.Fatalf("failed retry: exit %d %v: %s%s", code, err, out, errOut)
	}
	if sum.Checked != 1 || sum.Retried != 1 || sum.Queued != 1 || len(sum.Items) != 1 || sum.Items[0].Seq != k.Seq ||
		sum.Items[0].Subject != retryPrefix+".CDSE_PRODUCTS.fetcher.SENTINEL-2."+k.ProductType {
		t.Errorf("failed retry: %+v", sum)
	}

	// The running fetcher stores it: the one fetched event (the failed
	// ones are gone), which names the failed event it came from.
	fetched, failed := w.events(t, 1)
	if len(fetched) != 1 || len(failed) != 0 {
		t.Fatalf("after the retry: %d fetched, %d failed", len(fetched), len(failed))
	}
	f := fetched[0]
	if f.Header.Get("Cdse-Product-Id") != kept.ID || f.Header.Get("Cdse-Fetch-Retry") != fmt.Sprint(k.Seq) {
		t.Errorf("fetched event: %v", f.Header)
	}
	if st, err := os.Stat(strings.TrimPrefix(f.Header.Get("Cdse-Object-Url"), "file://")); err != nil || st.Size() != kept.ContentLength {
		t.Errorf("stored: %v %v", st, err)
	}
	if l := w.failedList(t); len(l) != 0 {
		t.Errorf("after the retry: %+v", l)
	}
	code, out, _ = w.failedCLI(t, "list")
	if code != 0 || strings.TrimSpace(out) != strings.Join(strings.Fields("SEQ TIME COLLECTION TYPE EVENT PRODUCT NAME REASON"), "  ") {
		t.Errorf("empty failed list (table): exit %d: %q", code, out)
	}
	// Exactly once: retried again by its sequence, it is not found.
	if code, out, errOut := w.failedCLI(t, "retry", fmt.Sprint(k.Seq)); code != 1 || !strings.Contains(out, "not-found") ||
		!strings.Contains(errOut, "1 of the sequences given are not failed events") {
		t.Errorf("failed retry again: exit %d: %s%s", code, out, errOut)
	}
	if n := retries(t, w); n != 1 {
		t.Errorf("%d retries on the product stream, want 1", n)
	}
}

// retries counts the messages on the product stream's retry subjects.
func retries(t *testing.T, w *world) int {
	t.Helper()
	n := 0
	for _, m := range natstest.StreamMessages(t, w.js, event.DefaultStream) {
		if strings.HasPrefix(m.Subject, retryPrefix+".") {
			n++
		}
	}
	return n
}

// TestFailedRetryNeedsItsConsumer: a retry that no fetcher would take (its
// consumer is gone) is refused, exit 1, and the failed event is kept: it
// is never removed for a message nobody reads.
func TestFailedRetryNeedsItsConsumer(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.sim.Generate(cdsesim.Sentinel2, 1)[0]
	notFound(t, w, p)
	dir := t.TempDir()
	_, _, stop := w.fetcher(t, map[string]string{"FETCH_TARGET": "file://" + dir})
	w.notify(t, p)
	if _, failed := w.events(t, 1); len(failed) != 1 {
		t.Fatalf("%d failed events, want 1", len(failed))
	}
	stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.js.DeleteConsumer(ctx, event.DefaultStream, "fetcher"); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"retry", "--dry-run"}, {"retry"}} {
		code, out, errOut := w.failedCLI(t, args...)
		if code != 1 || !strings.Contains(errOut, "no consumer fetcher on "+event.DefaultStream) || !strings.Contains(errOut, "kept") {
			t.Errorf("failed %v: exit %d: %s%s", args, code, out, errOut)
		}
	}
	if l := w.failedList(t); len(l) != 1 || l[0].ProductID != p.ID {
		t.Errorf("the failed event is not kept: %+v", l)
	}
	if n := retries(t, w); n != 0 {
		t.Errorf("%d retries queued for no consumer", n)
	}
}

// TestFailedWithTheEmbeddedFetcherLogin: the fetcher's login on the
// receiver's embedded server lists, shows, retries and drops the failed
// events (it may publish to the retry subjects and delete messages of
// CDSE_FETCHED, nothing more: internal/stream/embedded's tests), and the retried
// product is fetched.
func TestFailedWithTheEmbeddedFetcherLogin(t *testing.T) {
	t.Parallel()
	w := startWorld(t, true)
	ps := w.sim.Generate(cdsesim.Sentinel2, 2)
	for _, p := range ps {
		notFound(t, w, p)
	}
	dir := t.TempDir()
	w.fetcher(t, map[string]string{"FETCH_TARGET": "file://" + dir, "NATS_USER": fetcherUser, "NATS_PASSWORD": fetcherPassword})
	w.notify(t, ps...)
	_, failed := w.events(t, 2)
	if len(failed) != 2 {
		t.Fatalf("%d failed events, want 2", len(failed))
	}
	bin := bins.Build(t, "github.com/cdse-jetstream/receiver/cmd/fetcher")
	env := map[string]string{"NATS_URL": w.receiver.NATSURL, "NATS_USER": fetcherUser, "NATS_PASSWORD": fetcherPassword}
	code, out, errOut := bins.Run(t, bin, env, "failed", "list", "-o", "json")
	var l []failedEntry
	if err := json.Unmarshal([]byte(out), &l); err != nil || code != 0 || len(l) != 2 || errOut != "" {
		t.Fatalf("failed list: exit %d %v: %s%s", code, err, out, errOut)
	}
	if code, out, errOut := bins.Run(t, bin, env, "failed", "show", fmt.Sprint(l[0].Seq)); code != 0 || !strings.Contains(out, l[0].ProductID) {
		t.Errorf("failed show: exit %d: %s%s", code, out, errOut)
	}
	if code, out, errOut := bins.Run(t, bin, env, "failed", "drop", fmt.Sprint(l[1].Seq)); code != 0 || !strings.Contains(out, "dropped") {
		t.Errorf("failed drop: exit %d: %s%s", code, out, errOut)
	}
	w.sim.ClearFaults()
	if code, out, errOut := bins.Run(t, bin, env, "failed", "retry"); code != 0 {
		t.Fatalf("failed retry: exit %d: %s%s", code, out, errOut)
	}
	fetched, failed := w.events(t, 1)
	if len(fetched) != 1 || len(failed) != 0 || fetched[0].Header.Get("Cdse-Product-Id") != l[0].ProductID {
		t.Fatalf("after the retry: %d fetched, %d failed: %v", len(fetched), len(failed), fetched)
	}
}

// TestFailedRetryDryRunChecksTheRights: run with a login that may read
// the streams but not queue a retry nor remove a failed event (the
// embedded server's anonymous consumer, no NATS_USER), `failed retry
// --dry-run` fails as the real retry would, rather than say would-retry
// (issue 38 item 6), and so does `failed drop --dry-run`; each names the NATS user and the settings that give
// the fetcher's rights. With the fetcher's login the dry runs pass, and
// neither queues nor removes anything.
func TestFailedRetryDryRunChecksTheRights(t *testing.T) {
	t.Parallel()
	w := startWorld(t, true)
	p := w.sim.Generate(cdsesim.Sentinel2, 1)[0]
	notFound(t, w, p)
	dir := t.TempDir()
	w.fetcher(t, map[string]string{"FETCH_TARGET": "file://" + dir, "NATS_USER": fetcherUser, "NATS_PASSWORD": fetcherPassword})
	w.notify(t, p)
	if _, failed := w.events(t, 1); len(failed) != 1 {
		t.Fatalf("%d failed events, want 1", len(failed))
	}
	bin := bins.Build(t, "github.com/cdse-jetstream/receiver/cmd/fetcher")
	anonymous := map[string]string{"NATS_URL": w.receiver.NATSURL}
	l := w.failedList(t)
	if len(l) != 1 {
		t.Fatalf("%d failed events listed, want 1", len(l))
	}
	seq := fmt.Sprint(l[0].Seq)
	for _, args := range [][]string{{"failed", "retry", "--dry-run"}, {"failed", "retry"}, {"failed", "drop", "--dry-run", seq}} {
		code, out, errOut := runBounded(t, bin, anonymous, 30*time.Second, args...)
		if code != 1 || strings.Contains(out, "would-") {
			t.Errorf("%v as the anonymous consumer: exit %d, want 1 and no would-retry or would-drop:\n%s%s", args, code, out, errOut)
		}
		for _, want := range []string{"permissions violation", "NATS user anonymous", "NATS_EMBEDDED_FETCHER_USER", "NATS_USER and NATS_PASSWORD"} {
			if !strings.Contains(strings.ToLower(errOut), strings.ToLower(want)) {
				t.Errorf("%v as the anonymous consumer: the error does not say %q:\n%s", args, want, errOut)
			}
		}
	}
	fetcher := map[string]string{"NATS_URL": w.receiver.NATSURL, "NATS_USER": fetcherUser, "NATS_PASSWORD": fetcherPassword}
	if code, out, errOut := runBounded(t, bin, fetcher, 30*time.Second, "failed", "retry", "--dry-run"); code != 0 || !strings.Contains(out, "would-retry") {
		t.Errorf("dry run with the fetcher's login: exit %d, want 0 and would-retry:\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runBounded(t, bin, fetcher, 30*time.Second, "failed", "drop", "--dry-run", seq); code != 0 || !strings.Contains(out, "would-drop") {
		t.Errorf("drop dry run with the fetcher's login: exit %d, want 0 and would-drop:\n%s%s", code, out, errOut)
	}
	if l := w.failedList(t); len(l) != 1 {
		t.Errorf("%d failed events after the dry runs and the refused retry, want 1 kept", len(l))
	}
	if n := retries(t, w); n != 0 {
		t.Errorf("%d retries queued by dry runs and a refused retry", n)
	}
}
