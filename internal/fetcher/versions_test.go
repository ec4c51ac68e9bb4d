package fetcher

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/stream/natsconn"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
	"github.com/cdse-jetstream/receiver/internal/stream/supersede"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// Real names of one acquisition each (internal/cdse/versions/testdata/
// names.json): a Sentinel-2 L1C reprocessed (baseline 02.04, then 05.00),
// and two Sentinel-1 versions dated from different attributes, which the
// rules cannot order.
const (
	s2Older = "S2A_MSIL1C_20150704T101006_N0204_R022_T32TPS_20150704T101337.SAFE"
	s2Newer = "S2A_MSIL1C_20150704T101006_N0500_R022_T32TPS_20231011T134419.SAFE"
	s1Dated = "S1A_IW_GRDH_1SDV_20231207T064649_20231207T064714_051545_0638F1_95E7"
	s1Other = "S1A_IW_GRDH_1SDV_20231207T064649_20231207T064714_051545_0638F1_4B74"
)

// receiverSide is the receiver's part of the product stream, on the
// fetcher's NATS: the stream as topology makes it (with the notices'
// subjects), the ingest path's publisher, and the versions consumer.
type receiverSide struct {
	js   jetstream.JetStream
	topo *topology.Topology
	pub  *publish.Publisher
	sim  *cdsesim.Sim
	last uint64 // the last product message's sequence
	logs *logtest.Hook
}

// versionsWorld is a fetcher beside the receiver's side (tracker false:
// without the versions consumer, so without a bucket); ready, when given,
// runs before the fetcher starts.
func versionsWorld(t *testing.T, dir string, tracker bool, adjust func(*fetchconfig.Config), ready func(*receiverSide)) (*badDay, *receiverSide) {
	t.Helper()
	r := &receiverSide{}
	b := startBadDayWith(t, dir, cdsesim.Unthrottled, adjust, func(ctx context.Context, js jetstream.JetStream, cfg fetchconfig.Config, sim *cdsesim.Sim) error {
		log, _ := logtest.NewNullLogger()
		nc, err := natsconn.Connect(natsconn.Options{URL: cfg.NATSURL}, log)
		if err != nil {
			return err
		}
		t.Cleanup(nc.Close)
		pub, err := publish.NewPublisher(nc, publish.PublisherOptions{Stream: cfg.ProductStream.Stream, Timeout: 5 * time.Second}, prometheus.NewRegistry())
		if err != nil {
			return err
		}
		topo := topology.New(pub.JetStream(), topology.Options{Stream: cfg.ProductStream.Stream, SubjectPrefix: cfg.SubjectPrefix,
			Duplicates: time.Hour, SupersededPrefix: cfg.VersionsPrefix})
		if _, err := topo.EnsureProduct(ctx); err != nil {
			return err
		}
		*r = receiverSide{js: js, topo: topo, pub: pub, sim: sim}
		if tracker {
			r.track(t)
		}
		if ready != nil {
			ready(r)
		}
		return nil
	})
	return b, r
}

// track runs the receiver's versions consumer until the test ends.
func (r *receiverSide) track(t *testing.T) {
	t.Helper()
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	r.logs = hook
	tr, err := supersede.New(supersede.Options{MaxAge: 24 * time.Hour, AckWait: 5 * time.Second}, r.topo, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = tr.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			for _, e := range hook.AllEntries() {
				t.Logf("versions consumer: %s %s %v", e.Level, e.Message, e.Data)
			}
		}
	})
}

// version is a product of the simulator named name (a real name), sensed
// when its name says, with the catalogue's attributes of its kind; a
// processingDate when given.
func (r *receiverSide) version(t *testing.T, name string, processing time.Time) *cdsesim.Product {
	t.Helper()
	mission, collection, productType := cdsesim.Sentinel2, "SENTINEL-2", "S2MSI1C"
	if strings.HasPrefix(name, "S1") {
		mission, collection, productType = cdsesim.Sentinel1, "SENTINEL-1", "IW_GRDH_1S"
	}
	return r.sim.GenerateWith(mission, 1, func(p *cdsesim.Product) {
		p.Name, p.Collection, p.ContentLength = name, collection, 96<<10
		p.ContentStart = sensingStart(name)
		p.ContentEnd = p.ContentStart.Add(20 * time.Second)
		var attrs []cdsesim.Attribute
		for _, a := range p.Attributes {
			if a.Name != "productType" && a.Name != "platformShortName" {
				attrs = append(attrs, a)
			}
		}
		attrs = append(attrs, cdsesim.Attribute{Name: "productType", Value: productType, ValueType: "String"},
			cdsesim.Attribute{Name: "platformShortName", Value: collection, ValueType: "String"})
		if !processing.IsZero() {
			attrs = append(attrs, cdsesim.Attribute{Name: "processingDate", Value: processing.Format("2006-01-02T15:04:05.000Z"), ValueType: "DateTimeOffset"})
		}
		p.Attributes = attrs
	})[0]
}

// store puts the created notification of each product on the product
// stream as the ingest path does (its headers: Cdse-Acquisition,
// Cdse-Version).
func (r *receiverSide) store(t *testing.T, ps ...*cdsesim.Product) {
	t.Helper()
	for _, p := range ps {
		body, err := json.Marshal(map[string]any{"@odata.context": "$metadata#Notification/$entity", "SubscriptionEvent": "created",
			"ProductId": p.ID, "ProductName": p.Name, "SubscriptionId": uuid.NewString(),
			"NotificationDate": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "value": p.Entity()})
		if err != nil {
			t.Fatal(err)
		}
		ns, err := notification.Parse(body, 1)
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.pub.Publish(context.Background(), ingest.Messages(ns, &ingest.Route{Prefix: event.DefaultPrefix}, ingest.SourcePush))
		if err != nil {
			t.Fatal(err)
		}
		r.last = max(r.last, res[0].Seq)
	}
}

// caughtUp waits until the versions consumer has taken in every product
// message stored: the bucket says what it decided.
func (r *receiverSide) caughtUp(t *testing.T) {
	t.Helper()
	until(t, 20*time.Second, "the versions consumer takes every product in", func() bool {
		c, err := r.js.Consumer(context.Background(), r.topo.ProductStream(), topology.VersionsConsumer)
		if err != nil {
			return false
		}
		info, err := c.Info(context.Background())
		return err == nil && info.AckFloor.Stream >= r.last && info.NumAckPending == 0 && info.NumPending == 0
	})
}

// fetchedEvents are the fetcher's fetched events, once there are n.
func (b *badDay) fetchedEvents(t *testing.T, n int) []natstest.Msg {
	t.Helper()
	until(t, 30*time.Second, "fetched events", func() bool { return b.events(t, b.cfg.FetchedPrefix) >= n })
	var out []natstest.Msg
	for _, m := range natstest.StreamMessages(t, b.js, b.cfg.Stream) {
		if strings.HasPrefix(m.Subject, b.cfg.FetchedPrefix+".") {
			out = append(out, m)
		}
	}
	if len(out) != n {
		t.Fatalf("%d fetched events, want %d", len(out), n)
	}
	return out
}

// keyOf is p's key as its created event gives it.
func keyOf(t *testing.T, cfg fetchconfig.Config, p *cdsesim.Product) string {
	t.Helper()
	body, err := json.Marshal(map[string]any{"SubscriptionEvent": "created", "ProductId": p.ID, "value": p.Entity()})
	if err != nil {
		t.Fatal(err)
	}
	n, err := event.DecodeData(body, nil)
	if err != nil {
		t.Fatal(err)
	}
	return Key(cfg.KeyTemplate, n)
}

// byProduct are events by their Cdse-Product-Id.
func byProduct(ms []natstest.Msg) map[string]natstest.Msg {
	out := map[string]natstest.Msg{}
	for _, m := range ms {
		out[m.Header.Get(event.HeaderProductID)] = m
	}
	return out
}

// TestLatestSkipsWhatTheBucketKnowsSuperseded: with FETCH_VERSIONS=latest,
// the older of two versions, which the receiver's bucket knows superseded
// by the time the fetcher takes it, is not downloaded (the download
// service sends nothing of it): its fetched event says skipped, by what,
// and has no object; the newer is stored. Two Sentinel-1 versions the
// rules cannot order are both downloaded (undecided), and a product of no
// known acquisition is downloaded without a look.
func TestLatestSkipsWhatTheBucketKnowsSuperseded(t *testing.T) {
	dir := t.TempDir()
	var newer, older, dated, other, plain *cdsesim.Product
	b, _ := versionsWorld(t, dir, true, func(c *fetchconfig.Config) { c.Versions = "latest" }, func(r *receiverSide) {
		newer, older = r.version(t, s2Newer, time.Time{}), r.version(t, s2Older, time.Time{})
		dated, other = r.version(t, s1Dated, time.Date(2023, 12, 7, 8, 0, 0, 0, time.UTC)), r.version(t, s1Other, time.Time{})
		plain = r.sim.Generate(cdsesim.Sentinel5P, 1)[0] // NRTI: no acquisition
		r.store(t, newer, older, dated, other, plain)
		// The receiver decides first: the fetcher starts once the
		// bucket holds every product.
		r.caughtUp(t)
	})
	events := byProduct(b.fetchedEvents(t, 5))
	skipped := events[older.ID]
	if want := "superseded by " + newer.ID + " (" + s2Newer + ")"; skipped.Header.Get(event.HeaderSkipped) != want ||
		skipped.Header.Get(event.HeaderSupersededBy) != newer.ID || skipped.Header.Get(event.HeaderObjectURL) != "" ||
		skipped.Subject != "cdse.fetched.created.SENTINEL-2.S2MSI1C" {
		t.Errorf("the older version's event: %s %v, want skipped: %s", skipped.Subject, skipped.Header, want)
	}
	if _, err := event.DecodeFetchedData(skipped.Data, skipped.Header); !errors.Is(err, event.ErrSkipped) {
		t.Errorf("DecodeFetched of the skipped product: %v", err)
	}
	if s, err := event.DecodeSkippedData(skipped.Data, skipped.Header); err != nil || s.ProductID != older.ID || s.SupersededBy.Name != s2Newer {
		t.Errorf("DecodeSkipped: %+v %v", s, err)
	}
	if got := b.sim.ProductDownloads(older.ID); got != (cdsesim.ProductDownloads{}) {
		t.Errorf("the skipped product was downloaded: %+v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, keyOf(t, b.cfg, older))); !os.IsNotExist(err) {
		t.Errorf("the skipped product in the target: %v", err)
	}
	for _, p := range []*cdsesim.Product{newer, dated, other, plain} {
		if m := events[p.ID]; m.Header.Get(event.HeaderObjectURL) == "" || m.Header.Get(event.HeaderSkipped) != "" {
			t.Errorf("%s not stored: %v", p.Name, m.Header)
		}
	}
	for decision, want := range map[string]float64{"fetched": 2, "skipped": 1, "undecided": 1, "unknown": 0} {
		if got := testutil.ToFloat64(b.app.versions.decisions.WithLabelValues(decision)); got != want {
			t.Errorf("cdse_fetcher_versions_total{decision=%q} %v, want %v", decision, got, want)
		}
	}
	if got := testutil.ToFloat64(b.app.outcomes.WithLabelValues("skipped")); got != 1 {
		t.Errorf("skipped outcomes %v", got)
	}
}

// TestLatestWithoutABucket: beside a receiver without the versions
// consumer (no bucket), FETCH_VERSIONS=latest downloads every product,
// counts it unknown and says once why.
func TestLatestWithoutABucket(t *testing.T) {
	b, r := versionsWorld(t, t.TempDir(), false, func(c *fetchconfig.Config) { c.Versions = "latest" }, nil)
	older, newer := r.version(t, s2Older, time.Time{}), r.version(t, s2Newer, time.Time{})
	r.store(t, newer, older)
	for _, m := range b.fetchedEvents(t, 2) {
		if m.Header.Get(event.HeaderObjectURL) == "" {
			t.Errorf("not stored: %v", m.Header)
		}
	}
	if got := testutil.ToFloat64(b.app.versions.decisions.WithLabelValues("unknown")); got != 2 {
		t.Errorf("unknown decisions %v, want 2", got)
	}
	said := 0
	for _, e := range b.hook.AllEntries() {
		if strings.Contains(e.Message, "no versions bucket") {
			said++
		}
	}
	if said != 1 {
		t.Errorf("the missing bucket said %d times, want once", said)
	}
}

// TestOnSupersededDelete: with FETCH_ON_SUPERSEDED=delete, the older
// version, stored first, is removed with its STAC item when the newer
// arrives (the receiver's notice), and a fetched event on the deleted
// subject says so: its body the notice, Cdse-Superseded-By, the object's
// URL; event.DecodeFetched reads it as a deleted product with the notice.
// The newer stays. So for a product stored whole and one stored as the
// folder of its selected files (FETCH_FILES).
func TestOnSupersededDelete(t *testing.T) {
	for _, files := range []string{"", "MTD_MSIL1C.xml"} {
		t.Run("files="+files, func(t *testing.T) { onSupersededDelete(t, files) })
	}
}

func onSupersededDelete(t *testing.T, files string) {
	dir := t.TempDir()
	b, r := versionsWorld(t, dir, true, func(c *fetchconfig.Config) { c.OnSuperseded, c.Files = "delete", files }, nil)
	older, newer := r.version(t, s2Older, time.Time{}), r.version(t, s2Newer, time.Time{})
	r.store(t, older)
	first := b.fetchedEvents(t, 1)[0]
	oldPath := strings.TrimSuffix(strings.TrimPrefix(first.Header.Get(event.HeaderObjectURL), "file://"), "/")
	if _, err := os.Stat(oldPath); err != nil {
		t.Fatalf("the older version is not stored: %v", err)
	}
	itemPath := filepath.Join(dir, keyOf(t, b.cfg, older)) + ".json" // ItemKey: beside the archive's key, either way
	if _, err := os.Stat(itemPath); err != nil {
		t.Fatalf("the older version's STAC item: %v", err)
	}
	r.caughtUp(t) // the bucket knows the older one: the newer supersedes it
	r.store(t, newer)
	events := b.fetchedEvents(t, 3)
	var removed *natstest.Msg
	for i, m := range events {
		if strings.HasPrefix(m.Subject, "cdse.fetched.deleted.") {
			removed = &events[i]
		}
	}
	if removed == nil {
		t.Fatalf("no removal event among %v", events)
	}
	if removed.Subject != "cdse.fetched.deleted.SENTINEL-2.S2MSI1C" || removed.Header.Get(event.HeaderSupersededBy) != newer.ID ||
		removed.Header.Get(event.HeaderObjectURL) != first.Header.Get(event.HeaderObjectURL) || event.IsNotice(removed.Header) {
		t.Errorf("removal event %s %v", removed.Subject, removed.Header)
	}
	f, err := event.DecodeFetchedData(removed.Data, removed.Header)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Deleted || f.Superseded == nil || f.Superseded.Reason != event.NewerArrived || f.ProductID != older.ID || f.Superseded.By.Name != s2Newer {
		t.Errorf("decoded removal %+v", f)
	}
	for _, p := range []string{oldPath, itemPath} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s after the notice: %v", p, err)
		}
	}
	newerKey := keyOf(t, b.cfg, newer)
	if files != "" {
		newerKey = strings.TrimSuffix(newerKey, ".zip")
	}
	if _, err := os.Stat(filepath.Join(dir, newerKey)); err != nil {
		t.Errorf("the newer version: %v", err)
	}
	if got := testutil.ToFloat64(b.app.outcomes.WithLabelValues("superseded")); got != 1 {
		t.Errorf("superseded outcomes %v", got)
	}
}

// TestNoticeKeptNotGivenUp: a notice on the fetcher's consumer (here its
// FETCH_SUBJECTS take them) with FETCH_ON_SUPERSEDED=keep is acked and
// nothing removed; never given up as a body that is not a notification.
// Nor is a notice the fetcher does not read (another kind).
func TestNoticeKeptNotGivenUp(t *testing.T) {
	dir := t.TempDir()
	b, r := versionsWorld(t, dir, true, func(c *fetchconfig.Config) { c.Subjects = "cdse.product.created.>,cdse.superseded.>" }, nil)
	older, newer := r.version(t, s2Older, time.Time{}), r.version(t, s2Newer, time.Time{})
	r.store(t, older)
	b.fetchedEvents(t, 1)
	r.caughtUp(t)
	r.store(t, newer)
	r.caughtUp(t)
	other := nats.NewMsg("cdse.superseded.SENTINEL-2.S2MSI1C")
	other.Header.Set(event.HeaderNotice, "something-else")
	other.Data = []byte(`{"notice":"something-else"}`)
	if _, err := r.js.PublishMsg(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	b.fetchedEvents(t, 2)
	until(t, 10*time.Second, "both notices acked", func() bool {
		return testutil.ToFloat64(b.app.outcomes.WithLabelValues("notice")) == 2
	})
	if n := b.events(t, b.cfg.FailedPrefix); n != 0 {
		t.Errorf("%d failed events", n)
	}
	if _, err := os.Stat(filepath.Join(dir, keyOf(t, b.cfg, older))); err != nil {
		t.Errorf("the older version with keep: %v", err)
	}
}

// TestSupersededKey: the key of a notice's product is the one its product
// event got (the sensing start its name begins with is the ContentDate/
// Start of every Sentinel name); none without a date where the template
// needs one, or for an unsafe name.
func TestSupersededKey(t *testing.T) {
	for _, tc := range []struct {
		name, template, want, why string
	}{
		{s2Older, fetchconfig.DefaultKeyTemplate, "SENTINEL-2/S2MSI1C/2015/07/04/" + s2Older + ".zip", ""},
		{s1Dated, fetchconfig.DefaultKeyTemplate, "SENTINEL-2/S2MSI1C/2023/12/07/" + s1Dated + ".zip", ""},
		{"S3A_OL_1_EFR____20190430T094655_20190430T094955_20190430T114141_0180_044_136_2160_LN1_O_NR_002.SEN3", "{yyyy}{mm}{dd}/{name}.zip",
			"20190430/S3A_OL_1_EFR____20190430T094655_20190430T094955_20190430T114141_0180_044_136_2160_LN1_O_NR_002.SEN3.zip", ""},
		{"no-date-here", "{id}/{name}.zip", "the-id/no-date-here.zip", ""},
		{"no-date-here", fetchconfig.DefaultKeyTemplate, "", "no sensing date"},
		{"../etc", "{name}.zip", "", "unsafe name"},
	} {
		s := &event.Superseded{Superseded: event.VersionedProduct{ID: "the-id", Name: tc.name}, Collection: "SENTINEL-2", ProductType: "S2MSI1C"}
		key, why := SupersededKey(tc.template, s)
		if key != tc.want || (tc.why == "") != (why == "") || !strings.Contains(why, tc.why) {
			t.Errorf("%s by %s: %q (%s), want %q (%s)", tc.name, tc.template, key, why, tc.want, tc.why)
		}
	}
}
