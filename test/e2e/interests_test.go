package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/testkit/scrape"

	"github.com/nats-io/nats.go"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/stream/embedded"
	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/receivertest"
)

// The interests of the routing test. alps-l2a's area is an L: its bounding
// box also covers the notch at its upper right, which the L does not.
const routingInterests = `interests:
  - name: alps-l2a
    events: [created, modified]
    filter: >-
      Collection/Name eq 'SENTINEL-2'
      and not (Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value gt 30.0))
      and OData.CSC.Intersects(area=geography'SRID=4326;POLYGON((6 44,12 44,12 46,8 46,8 48,6 48,6 44))')
  - name: s1a
    events: [created, deleted]
    filter: startswith(Name,'S1A_') and ContentDate/Start ge 2026-01-01T00:00:00.000Z
  - name: recent-no2
    maxSensingAge: 30d
    filter: Collection/Name eq 'SENTINEL-5P' and contains(Name,'NO2')
`

// routed makes a product of mission m whose footprint is a 0.5° square at
// (lon, lat), sensed age ago, with the name's first part and cloud cover
// set when given, published at now.
func routed(m cdsesim.Mission, lon, lat float64, age time.Duration, unit string, cloud float64, now time.Time) *cdsesim.Product {
	p := cdsesim.NewProduct(m, now, nil)
	p.Footprint = [][2]float64{{lon, lat}, {lon + 0.5, lat}, {lon + 0.5, lat + 0.5}, {lon, lat + 0.5}, {lon, lat}}
	if age > 0 {
		p.ContentStart, p.ContentEnd = now.Add(-age), now.Add(-age).Add(time.Minute)
	}
	if unit != "" {
		p.Name = strings.Replace(p.Name, p.Name[:3], unit, 1)
	}
	for i, a := range p.Attributes {
		if a.Name == "cloudCover" && cloud >= 0 {
			p.Attributes[i].Value = cloud
		}
	}
	return p
}

// batch is one set of products, each with the interests it must reach,
// and whether the union of the interests' filters (what the reconciler and
// the backfill list) takes it.
type batch []struct {
	p     *cdsesim.Product
	want  []string
	union bool
}

func makeBatch(now time.Time) batch {
	return batch{
		{routed(cdsesim.Sentinel2, 6.5, 44.5, 0, "", 10, now), []string{"alps-l2a"}, true}, // in the L
		{routed(cdsesim.Sentinel2, 10.5, 47, 0, "", 10, now), nil, false},                  // the notch: in the box, not in the L
		{routed(cdsesim.Sentinel2, 6.5, 44.5, 0, "", 55, now), nil, false},                 // in the L, too cloudy (not)
		{routed(cdsesim.Sentinel1, 20, 10, 0, "S1A", -1, now), []string{"s1a"}, true},      // startswith, date
		{routed(cdsesim.Sentinel1, 20, 10, 0, "S1B", -1, now), nil, false},                 // the other unit
		{routed(cdsesim.Sentinel5P, 0, 0, 0, "", -1, now), []string{"recent-no2"}, true},   // contains, sensed shortly before
		{routed(cdsesim.Sentinel5P, 0, 0, 60*24*time.Hour, "", -1, now), nil, true},        // a reprocessed old acquisition: filter yes, sensing age no
		{routed(cdsesim.Sentinel3, 179.8, 60, 0, "", -1, now), nil, false},                 // no interest
	}
}

// TestInterestsRouteEverySourceOnce: products across missions and
// footprints reach exactly the interests they match, once each, whichever
// source stores them: the reconciler, PUSH, PULL, the backfill command and
// a quarantine replay. The product stream keeps every one.
func TestInterestsRouteEverySourceOnce(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "interests.yaml")
	if err := os.WriteFile(file, []byte(routingInterests), 0o600); err != nil {
		t.Fatal(err)
	}
	sim := cdsesim.New(cdsesim.Options{Users: map[string]cdsesim.User{"op@example.org": {Password: "account-pw"}}, PushBackoff: 10 * time.Millisecond, MaxRunning: 2})
	w := newSimWith(t, sim)
	now := time.Now().UTC()
	// Expected: the product events on the product stream, and each
	// interest's copies ("interest event product").
	var products int
	want := map[string]int{}
	add := func(b batch, listed bool) batch {
		for _, e := range b {
			sim.CreateProduct(e.p)
			if listed && !e.union {
				continue // the reconciler and the backfill list the union only
			}
			products++
			for _, name := range e.want {
				want[name+" created "+e.p.ID]++
			}
		}
		return b
	}
	// The backfill's products, three days old; the reconciler's, before any
	// subscription (nothing pushed or queued).
	add(makeBatch(now.Add(-72*time.Hour)), true)
	add(makeBatch(now.Add(-10*time.Minute)), true)
	// PULL takes Sentinel-5P, PUSH the rest: one source each.
	out := w.register(t, "-o", "json", "create", "--type", "pull", "--filter", "Collection/Name eq 'SENTINEL-5P'", "--max-running", "2")
	var subs []struct{ Id string }
	if err := json.Unmarshal([]byte(out), &subs); err != nil || len(subs) != 1 {
		t.Fatalf("register: %q %v", out, err)
	}
	dataDir := t.TempDir()
	r := receivertest.Start(t, func(c *config.Config) {
		c.DataDir, c.InterestsFile, c.PullSubscription, c.PullInterval = dataDir, file, subs[0].Id, 100*time.Millisecond
		w.login(c)
		// No RECONCILE_FILTER: the interests' union.
		c.ReconcileInterval, c.ReconcileLookback = time.Hour, time.Hour
	})
	// The replay's old body is published with the receiver's login: consumers cannot.
	login, err := embedded.ReadLogin(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	js, closeNC := natstest.JetStream(t, r.NATSURL, nats.UserInfo(login.User, login.Password))
	defer closeNC()
	w.register(t, "create", "--endpoint", r.Webhook, "--insecure-endpoint", "--filter", "Collection/Name ne 'SENTINEL-5P'", "--events", "created,modified", "--max-running", "2")
	pushed := add(makeBatch(now), false)
	// A modification of an alps-l2a product: routed as modified.
	modified := pushed[0].p
	if err := sim.ModifyProduct(modified.ID); err != nil {
		t.Fatal(err)
	}
	want["alps-l2a modified "+modified.ID]++

	// The backfill of three days ago, by the real binary beside the receiver.
	env := map[string]string{"RECEIVER_DATA_DIR": dataDir, "INTERESTS_FILE": file,
		"CDSE_USERNAME": w.env["CDSE_USERNAME"], "CDSE_PASSWORD": w.env["CDSE_PASSWORD"],
		"CDSE_TOKEN_URL": w.env["CDSE_TOKEN_URL"], "CDSE_CATALOGUE_URL": w.env["CDSE_CATALOGUE_URL"]}
	rcv := bins.Build(t, "github.com/cdse-jetstream/receiver/cmd/receiver")
	since := now.Add(-73 * time.Hour).Format(time.RFC3339)
	until := now.Add(-71 * time.Hour).Format(time.RFC3339)
	if code, out, errOut := bins.Run(t, rcv, env, "backfill", "--since", since, "--until", until, "--events", "created", "--rate", "100", "-o", "json"); code != 0 {
		t.Fatalf("backfill: %d %s %s", code, out, errOut)
	}
	// A replay: a body an older version refused, valid now.
	replayed := routed(cdsesim.Sentinel2, 6.7, 44.7, 0, "", 5, now)
	body, _ := json.Marshal(map[string]any{"@odata.context": "$metadata#Notification/$entity", "SubscriptionEvent": "created",
		"ProductId": replayed.ID, "ProductName": replayed.Name, "NotificationDate": now.Format(time.RFC3339), "value": replayed.Entity()})
	m := nats.NewMsg("cdse.quarantine.push")
	m.Header.Set("Nats-Msg-Id", "q:replay-test")
	m.Header.Set("Cdse-Source", "push")
	m.Header.Set("Cdse-Quarantine-Reason", "invalid_notification")
	m.Data = body
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if code, _ := r.Post(t, []byte(`{"SubscriptionEvent":"Created"}`)); code != 400 { // the quarantine stream exists
		t.Fatalf("refused body: %d", code)
	}
	if _, err := js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := bins.Run(t, rcv, env, "quarantine", "replay"); code != 0 || !strings.Contains(out, "replayed 1") {
		t.Fatalf("replay: %d %s %s", code, out, errOut)
	}

	products++ // the replayed one
	want["alps-l2a created "+replayed.ID]++
	wantCopies := len(want)
	deadline := time.Now().Add(30 * time.Second)
	for {
		msgs := natstest.StreamMessages(t, js, "CDSE_PRODUCTS")
		got, onProduct := map[string]int{}, 0
		for _, m := range msgs {
			if name := m.Header.Get("Cdse-Interest"); name != "" {
				got[name+" "+m.Header.Get("Cdse-Event")+" "+m.Header.Get("Cdse-Product-Id")]++
				if !strings.HasPrefix(m.Subject, "cdse.interest."+name+"."+m.Header.Get("Cdse-Event")+".") {
					t.Errorf("copy for %s on %s", name, m.Subject)
				}
			} else if m.Header.Get("Cdse-Event") == "created" {
				onProduct++
			}
		}
		if len(got) >= wantCopies && onProduct >= products || time.Now().After(deadline) {
			var problems []string
			for k, n := range got {
				if want[k] != n {
					problems = append(problems, fmt.Sprintf("%s: %d copies, want %d", k, n, want[k]))
				}
			}
			for k := range want {
				if got[k] == 0 {
					problems = append(problems, k+": no copy")
				}
			}
			sort.Strings(problems)
			if len(problems) > 0 || onProduct != products {
				t.Fatalf("%d created on the product stream, want %d; copies:\n%s", onProduct, products, strings.Join(problems, "\n"))
			}
			t.Logf("%d product events, %d interest copies, each once", onProduct, len(got))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestInterestMetricsCountWhatWasStored: every fixture sent twice (as the
// catalogue may); the interests' metrics count what their subjects
// received and the product events that reached none, never the resends:
// each metric equals what the stream holds.
func TestInterestMetricsCountWhatWasStored(t *testing.T) {
	file := filepath.Join(t.TempDir(), "interests.yaml")
	if err := os.WriteFile(file, []byte("interests:\n  - name: s1\n    events: [created, deleted]\n    filter: Collection/Name eq 'SENTINEL-1'\n  - name: l2a\n    events: [created, modified]\n    filter: Name eq 'none' or contains(Name,'_MSIL2A_')\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := receivertest.Start(t, func(c *config.Config) { c.InterestsFile = file })
	r.PostFixtures(t)
	r.PostFixtures(t)
	js, closeNC := natstest.JetStream(t, r.NATSURL)
	defer closeNC()
	copies, unmatched := map[string]int{}, map[string]int{}
	msgs := natstest.StreamMessages(t, js, "CDSE_PRODUCTS")
	routed := map[string]bool{} // the product events' keys that have a copy
	for _, m := range msgs {
		if name := m.Header.Get("Cdse-Interest"); name != "" {
			copies[name]++
			routed[m.Header.Get("Cdse-Event")+":"+m.Header.Get("Cdse-Product-Id")] = true
		}
	}
	for _, m := range msgs {
		if m.Header.Get("Cdse-Interest") == "" && !routed[m.Header.Get("Cdse-Event")+":"+m.Header.Get("Cdse-Product-Id")] {
			unmatched[m.Header.Get("Cdse-Event")]++
		}
	}
	if copies["s1"] == 0 || copies["l2a"] == 0 || unmatched["created"] == 0 {
		t.Fatalf("the fixtures no longer exercise the metrics: copies %v, unmatched %v", copies, unmatched)
	}
	for _, name := range []string{"s1", "l2a"} {
		if got := scrape.Value(t, r.Admin, `cdse_receiver_interest_routed_total{interest="`+name+`"}`); got != fmt.Sprint(copies[name]) {
			t.Errorf("routed to %s: metric %s, stream %d", name, got, copies[name])
		}
	}
	for _, ev := range []string{"created", "modified", "deleted"} {
		if got := scrape.Value(t, r.Admin, `cdse_receiver_interest_unmatched_total{event="`+ev+`"}`); got != fmt.Sprint(unmatched[ev]) {
			t.Errorf("unmatched %s: metric %s, stream %d", ev, got, unmatched[ev])
		}
	}
	t.Logf("copies %v, unmatched %v", copies, unmatched)
}
