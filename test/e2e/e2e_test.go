package e2e

import (
	"encoding/json"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/receiver/app"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/receivertest"
)

// The webhook's login of the receivers receivertest starts.
const (
	webhookUser = receivertest.User
	webhookPass = receivertest.Password
)

type world struct {
	sim     *cdsesim.Sim
	simURL  string
	app     *app.App
	js      jetstream.JetStream
	env     map[string]string
	webhook string
}

func setup(t *testing.T) *world {
	t.Helper()
	w := newSim(t)
	w.startReceiver(t, func(*config.Config) {})
	return w
}

// newSim starts the simulator; the receiver is started separately.
func newSim(t *testing.T) *world {
	t.Helper()
	// Two running subscriptions (created,modified and deleted cannot share
	// one): the interface description's limit, not the live one.
	return newSimWith(t, cdsesim.New(cdsesim.Options{Users: map[string]cdsesim.User{"op@example.org": {Password: "account-pw"}}, PushBackoff: 10 * time.Millisecond, MaxRunning: 2}))
}

// newSimWith serves sim (whose user is op@example.org, password
// account-pw) as the catalogue.
func newSimWith(t *testing.T, sim *cdsesim.Sim) *world {
	t.Helper()
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); sim.Close() })
	return newSimAt(t, sim, srv.URL)
}

// newSimAt is the world of sim, served at url by the test.
func newSimAt(t *testing.T, sim *cdsesim.Sim, url string) *world {
	t.Helper()
	return &world{sim: sim, simURL: url, env: map[string]string{
		"CDSE_USERNAME":      "op@example.org",
		"CDSE_PASSWORD":      "account-pw",
		"CDSE_TOKEN_URL":     url + cdsesim.TokenPath,
		"CDSE_CATALOGUE_URL": url + "/odata/v1",
		"RECEIVER_USERNAME":  webhookUser,
		"RECEIVER_PASSWORD":  webhookPass,
	}}
}

// startReceiver runs the real receiver (embedded NATS) with the default
// configuration changed by mutate, logged in to the simulator, and waits
// until it is ready.
func (w *world) startReceiver(t *testing.T, mutate func(*config.Config)) {
	t.Helper()
	r := receivertest.Start(t, func(cfg *config.Config) {
		w.login(cfg)
		mutate(cfg)
	})
	js, closeNC := natstest.JetStream(t, r.NATSURL)
	t.Cleanup(closeNC)
	w.js, w.app, w.webhook = js, r.App, r.Webhook
}

// login logs c in to the simulator as the world's user.
func (w *world) login(c *config.Config) {
	c.CDSEUsername, c.CDSEPassword = w.env["CDSE_USERNAME"], w.env["CDSE_PASSWORD"]
	c.CDSETokenURL, c.CDSECatalogueURL = w.env["CDSE_TOKEN_URL"], w.env["CDSE_CATALOGUE_URL"]
}

// waitMessages waits until the stream holds n messages and returns them.
func (w *world) waitMessages(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := w.messages(t)
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (w *world) register(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := w.runRegister(t, args...)
	if code != 0 {
		t.Fatalf("register %v: exit %d: %s", args, code, errOut)
	}
	return out
}

// messages returns "subject product-id source" of each stored product
// event, in order. The stream also holds the versions consumer's
// supersession notices (cdse.superseded.>), published whenever two
// generated products turn out to be versions of one acquisition, and at a
// moment of their own: counting them made these counts race it.
func (w *world) messages(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, m := range natstest.StreamMessages(t, w.js, "CDSE_PRODUCTS") {
		if !strings.HasPrefix(m.Subject, "cdse.product.") {
			continue
		}
		out = append(out, m.Subject+" "+m.Header.Get("Cdse-Product-Id")+" "+m.Header.Get("Cdse-Source"))
	}
	return out
}

func TestRegisterAndDeliver(t *testing.T) {
	w := setup(t)
	args := []string{"create", "--endpoint", w.webhook, "--insecure-endpoint", "--filter", "Collection/Name eq 'SENTINEL-2' or Collection/Name eq 'SENTINEL-1'", "--events", "created,modified"}
	w.register(t, args...)
	w.register(t, args...) // idempotent
	w.register(t, "create", "--endpoint", w.webhook, "--insecure-endpoint", "--events", "deleted", "--max-running", "2")
	if out := w.register(t, "list"); strings.Count(out, w.webhook) != 2 {
		t.Fatalf("want 2 subscriptions:\n%s", out)
	}

	// Every notification is delivered twice by the simulator, as happens.
	w.sim.SetDuplicateSends(true)
	s2 := w.sim.Generate(cdsesim.Sentinel2, 3)
	s1 := w.sim.Generate(cdsesim.Sentinel1, 1)
	w.sim.Generate(cdsesim.Sentinel3, 2) // filtered out
	w.sim.WaitPushes()
	if err := w.sim.ModifyProduct(s2[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := w.sim.DeleteProduct(s1[0].ID, "Corrupted product"); err != nil {
		t.Fatal(err)
	}
	w.sim.WaitPushes()

	want := []string{
		"cdse.product.created.SENTINEL-2." + productType(s2[0]) + " " + s2[0].ID + " push",
		"cdse.product.created.SENTINEL-2." + productType(s2[1]) + " " + s2[1].ID + " push",
		"cdse.product.created.SENTINEL-2." + productType(s2[2]) + " " + s2[2].ID + " push",
		"cdse.product.created.SENTINEL-1." + productType(s1[0]) + " " + s1[0].ID + " push",
		"cdse.product.modified.SENTINEL-2." + productType(s2[0]) + " " + s2[0].ID + " push",
		"cdse.product.deleted.SENTINEL-1." + productType(s1[0]) + " " + s1[0].ID + " push",
	}
	got := w.messages(t)
	if len(got) != len(want) {
		t.Fatalf("stream holds %d messages, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	// PUSH deliveries run concurrently: compare as sets, each exactly once.
	count := map[string]int{}
	for _, g := range got {
		count[g]++
	}
	for _, w := range want {
		if count[w] != 1 {
			t.Errorf("%s arrived %d times", w, count[w])
		}
	}
	st := w.sim.Stats()
	if st.PushDropped != 0 || st.Pushed != 12 {
		t.Errorf("simulator stats %+v: want 12 delivered (6 notifications twice), none dropped", st)
	}
}

func TestWrongWebhookPasswordDeliversNothing(t *testing.T) {
	w := setup(t)
	w.env["RECEIVER_PASSWORD"] = "not-the-receivers-password"
	// The preflight stops it, naming the problem; forced, the catalogue's
	// every push is refused.
	if code, _, errOut := w.runRegister(t, "create", "--endpoint", w.webhook, "--insecure-endpoint"); code != 1 || !strings.Contains(errOut, "preflight: wrong-credentials") || strings.Contains(w.register(t, "-o", "json", "list"), w.webhook) {
		t.Fatalf("create with a password the receiver refuses: exit %d\n%s", code, errOut)
	}
	w.register(t, "create", "--endpoint", w.webhook, "--insecure-endpoint", "--skip-preflight")
	w.sim.Generate(cdsesim.Sentinel2, 2)
	w.sim.WaitPushes()
	if got := w.messages(t); len(got) != 0 {
		t.Errorf("messages from a subscription with the wrong password: %v", got)
	}
	st := w.sim.Stats()
	if st.Pushed != 0 || st.PushDropped != 2 || st.PushAttempts != 8 {
		t.Errorf("simulator stats %+v: want every attempt refused (401), 2 dropped after 3 retries", st)
	}
}

func TestPullOnlyReceiver(t *testing.T) {
	w := newSim(t)
	out := w.register(t, "-o", "json", "create", "--type", "pull", "--filter", "Collection/Name eq 'SENTINEL-3'")
	var subs []struct{ Id string }
	if err := json.Unmarshal([]byte(out), &subs); err != nil || len(subs) != 1 {
		t.Fatalf("register output %q: %v", out, err)
	}
	products := w.sim.Generate(cdsesim.Sentinel3, 45)
	w.sim.Generate(cdsesim.Sentinel2, 5) // filtered out
	w.startReceiver(t, func(c *config.Config) {
		c.Webhook = false
		c.Username, c.Password = "", ""
		c.PullSubscription = subs[0].Id
		c.PullInterval = 100 * time.Millisecond
	})
	if w.app.WebhookAddr() != "" {
		t.Error("the webhook listens although it is off")
	}
	got := w.waitMessages(t, 45)
	if len(got) != 45 || !strings.HasSuffix(got[0], " pull") || !strings.Contains(got[0], products[0].ID) {
		t.Fatalf("%d messages, first %q", len(got), got[0])
	}
}

func TestReconcileAfterOutage(t *testing.T) {
	w := newSim(t)
	// The receiver is down while the catalogue creates, modifies and
	// deletes products: PUSH gives up on every one of them.
	w.register(t, "create", "--endpoint", "http://127.0.0.1:1/notifications", "--insecure-endpoint", "--filter", "Collection/Name eq 'SENTINEL-1'", "--events", "created,modified", "--skip-preflight")
	w.register(t, "create", "--endpoint", "http://127.0.0.1:1/notifications", "--insecure-endpoint", "--filter", "Collection/Name eq 'SENTINEL-1'", "--events", "deleted", "--max-running", "2", "--skip-preflight")
	lost := w.sim.Generate(cdsesim.Sentinel1, 30)
	for _, p := range lost[20:25] {
		if err := w.sim.ModifyProduct(p.ID); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range lost[:3] {
		if err := w.sim.DeleteProduct(p.ID, "Corrupted product"); err != nil {
			t.Fatal(err)
		}
	}
	w.sim.WaitPushes()
	if st := w.sim.Stats(); st.PushDropped != 38 {
		t.Fatalf("simulator %+v: want 38 dropped (30 created, 5 modified, 3 deleted)", st)
	}
	// It comes back with the reconciler on: the first pass runs at start.
	// A product deleted meanwhile is no longer listed as created: its
	// deletion is what the stream learns.
	w.startReceiver(t, func(c *config.Config) {
		c.ReconcileInterval = time.Hour
		c.ReconcileFilter = "Collection/Name eq 'SENTINEL-1'"
	})
	got := w.waitMessages(t, 35)
	counts := map[string]int{}
	for _, m := range got {
		counts[m]++
	}
	for _, p := range lost {
		want := map[string]int{"created": 1, "modified": 0, "deleted": 0}
		if p == lost[20] || p == lost[21] || p == lost[22] || p == lost[23] || p == lost[24] {
			want["modified"] = 1
		}
		if p == lost[0] || p == lost[1] || p == lost[2] {
			want["created"], want["deleted"] = 0, 1
		}
		for ev, n := range want {
			if c := counts["cdse.product."+ev+".SENTINEL-1."+productType(p)+" "+p.ID+" reconcile"]; c != n {
				t.Errorf("%s %s: %d messages, want %d", ev, p.ID, c, n)
			}
		}
	}
	if len(got) != 35 {
		t.Fatalf("%d messages, want 35: %v", len(got), got)
	}
}

// productType is the product's productType attribute, the subject's last
// token.
func productType(p *cdsesim.Product) string {
	for _, a := range p.Attributes {
		if a.Name == "productType" {
			return a.Value.(string)
		}
	}
	return "UNKNOWN"
}

// The same products reach the stream alike whichever way they come: PUSH,
// the PULL queue, the reconciler. Only what says how they came differs.
func TestEverySourceShapesAlike(t *testing.T) {
	w := newSim(t)
	out := w.register(t, "-o", "json", "create", "--type", "pull")
	var subs []struct{ Id string }
	if err := json.Unmarshal([]byte(out), &subs); err != nil || len(subs) != 1 {
		t.Fatalf("register output %q: %v", out, err)
	}
	w.startReceiver(t, func(*config.Config) {})
	w.register(t, "create", "--endpoint", w.webhook, "--insecure-endpoint", "--max-running", "2")
	var products int
	for _, m := range cdsesim.Missions {
		products += len(w.sim.Generate(m, 2))
	}
	w.sim.WaitPushes()
	bySource := map[string]map[string]string{}
	collect := func(source string) {
		got := map[string]string{}
		msgs := natstest.StreamMessages(t, w.js, "CDSE_PRODUCTS")
		for _, m := range msgs {
			if s := m.Header.Get("Cdse-Source"); s != source {
				t.Errorf("%s: a message from %q", source, s)
			}
			got[m.Header.Get("Nats-Msg-Id")] = m.Subject + "\n" + shape(m.Header)
		}
		if len(got) != products || len(msgs) != products {
			t.Fatalf("%s: %d messages, %d ids; want %d", source, len(msgs), len(got), products)
		}
		bySource[source] = got
	}
	collect("push")

	w.startReceiver(t, func(c *config.Config) {
		c.Webhook, c.Username, c.Password = false, "", ""
		c.PullSubscription, c.PullInterval = subs[0].Id, 100*time.Millisecond
	})
	w.waitMessages(t, products)
	collect("pull")

	w.startReceiver(t, func(c *config.Config) {
		c.Webhook, c.Username, c.Password = false, "", ""
		c.ReconcileInterval, c.ReconcileEvents = time.Hour, "created"
		c.ReconcileFilter = "Collection/Name ne 'NONE'"
	})
	w.waitMessages(t, products)
	collect("reconcile")

	for id, push := range bySource["push"] {
		for _, source := range []string{"pull", "reconcile"} {
			if got := bySource[source][id]; got != push {
				t.Errorf("%s differs from push:\npush:\n%s\n%s:\n%s", id, push, source, got)
			}
		}
		if !strings.Contains(push, "ce-type: eu.copernicus.dataspace.product.created") || !strings.Contains(push, "Cdse-S3-Path: /eodata/") {
			t.Errorf("%s lacks CloudEvents or product headers:\n%s", id, push)
		}
	}
}

// shape is a message's headers less those that say how it came: its
// source, and the subscription (reconciled events have none) with what is
// derived from it (ce-source), and the notification's date (ce-time).
func shape(h nats.Header) string {
	var lines []string
	for k, v := range h {
		switch k {
		case "Cdse-Source", "Cdse-Subscription-Id", "ce-source", "ce-time":
			continue
		}
		lines = append(lines, k+": "+strings.Join(v, ", "))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
