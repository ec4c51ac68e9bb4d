package supersede_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/stream/natsconn"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
	"github.com/cdse-jetstream/receiver/internal/stream/supersede"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// product is one product of internal/cdse/versions/testdata/names.json:
// real names, and for Sentinel-1 the dates the rule orders by.
type product struct {
	Name            string    `json:"name"`
	ProcessingDate  time.Time `json:"processingDate"`
	PublicationDate time.Time `json:"publicationDate"`
}

// realCases are names.json's cases of one kind: versions (oldest first),
// siblings, undecided, distinct.
func realCases(t *testing.T, kind string) [][]product {
	t.Helper()
	b, err := os.ReadFile("../../cdse/versions/testdata/names.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Cases []struct {
			Kind  string    `json:"kind"`
			Names []product `json:"names"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	var out [][]product
	for _, c := range f.Cases {
		if c.Kind == kind {
			out = append(out, c.Names)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no %s case in names.json", kind)
	}
	return out
}

// byName finds a product of names.json's cases of kind by its name.
func byName(t *testing.T, kind, name string) product {
	t.Helper()
	for _, c := range realCases(t, kind) {
		for _, p := range c {
			if p.Name == name {
				return p
			}
		}
	}
	t.Fatalf("%s is not among names.json's %s", name, kind)
	return product{}
}

// idOf is a product's catalogue Id, the same for every event of it.
func idOf(name string) string { return uuid.NewSHA1(uuid.NameSpaceURL, []byte(name)).String() }

// tokens are the platformShortName and productType the catalogue gives a
// product of this name.
func tokens(name string) (collection, productType string) {
	switch {
	case strings.HasSuffix(strings.TrimSuffix(name, ".SAFE"), "_COG"):
		return "SENTINEL-1", "IW_GRDH_1S-COG"
	case strings.HasPrefix(name, "S1"):
		return "SENTINEL-1", "IW_GRDH_1S"
	case strings.Contains(name, "MSIL1C"):
		return "SENTINEL-2", "S2MSI1C"
	case strings.Contains(name, "MSIL2A"):
		return "SENTINEL-2", "S2MSI2A"
	case strings.HasPrefix(name, "S3"):
		return "SENTINEL-3", name[4:15]
	default:
		return "SENTINEL-5P", name[9:19]
	}
}

// notificationOf is the catalogue's notification of ev for p (cause: the
// DeletionCause of a deleted one).
func notificationOf(ev event.Kind, p product, cause string) []byte {
	collection, productType := tokens(p.Name)
	attrs := []map[string]any{
		{"Name": "platformShortName", "Value": collection, "ValueType": "String"},
		{"Name": "productType", "Value": productType, "ValueType": "String"},
	}
	if !p.ProcessingDate.IsZero() {
		attrs = append(attrs, map[string]any{"Name": "processingDate", "Value": p.ProcessingDate.Format(time.RFC3339), "ValueType": "DateTimeOffset"})
	}
	value := map[string]any{"Id": idOf(p.Name), "Name": p.Name, "Attributes": attrs}
	if !p.PublicationDate.IsZero() {
		value["PublicationDate"] = p.PublicationDate.Format(time.RFC3339)
	}
	if ev == event.Deleted {
		value["DeletionDate"], value["DeletionCause"] = "2026-01-02T00:00:00Z", cause
	}
	b, _ := json.Marshal(map[string]any{"SubscriptionEvent": ev, "ProductId": idOf(p.Name), "ProductName": p.Name,
		"NotificationDate": "2026-01-02T00:00:00Z", "value": value})
	return b
}

// env is a product stream on a real server, with the receiver's
// publisher and route: the messages are the ingest path's own.
type env struct {
	js    jetstream.JetStream
	topo  *topology.Topology
	pub   *publish.Publisher
	route ingest.Route
	last  uint64 // the last product message's sequence
}

func newEnv(t *testing.T, duplicates time.Duration) *env {
	t.Helper()
	return newEnvWith(t, duplicates, "")
}

// newEnvWith is newEnv whose product stream takes the interests' copies
// too, under interestPrefix ("": none).
func newEnvWith(t *testing.T, duplicates time.Duration, interestPrefix string) *env {
	t.Helper()
	srv := natstest.RunJetStream(t)
	log, _ := test.NewNullLogger()
	nc, err := natsconn.Connect(natsconn.Options{URL: srv.ClientURL()}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	pub, err := publish.NewPublisher(nc, publish.PublisherOptions{Stream: event.DefaultStream, Timeout: 5 * time.Second}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	topo := topology.New(pub.JetStream(), topology.Options{Stream: event.DefaultStream, SubjectPrefix: event.DefaultPrefix,
		Duplicates: duplicates, SupersededPrefix: event.DefaultSupersededPrefix, InterestPrefix: interestPrefix})
	if _, err := topo.EnsureProduct(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &env{js: pub.JetStream(), topo: topo, pub: pub, route: ingest.Route{Prefix: event.DefaultPrefix}}
}

// store publishes the notifications as the ingest path does.
func (e *env) store(t *testing.T, bodies ...[]byte) {
	t.Helper()
	for _, b := range bodies {
		ns, err := notification.Parse(b, 1)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		res, err := e.pub.Publish(context.Background(), ingest.Messages(ns, &e.route, ingest.SourcePush))
		if err != nil {
			t.Fatal(err)
		}
		if res[0].Seq > e.last {
			e.last = res[0].Seq
		}
	}
}

// created and deleted are store's shorthands.
func (e *env) created(t *testing.T, ps ...product) {
	t.Helper()
	for _, p := range ps {
		e.store(t, notificationOf(event.Created, p, ""))
	}
}

// track runs a Tracker (a receiver replica) until the test ends; its
// metrics are on the registry returned.
func (e *env) track(t *testing.T) *prometheus.Registry {
	t.Helper()
	return e.trackWith(t, nil)
}

// trackWith is track with a Copier (nil: none).
func (e *env) trackWith(t *testing.T, copier supersede.Copier) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	log, hook := test.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	t.Cleanup(func() {
		if t.Failed() {
			for _, e := range hook.AllEntries() {
				t.Logf("tracker: %s %s %v", e.Level, e.Message, e.Data)
			}
		}
	})
	tr, err := supersede.New(supersede.Options{MaxAge: 24 * time.Hour, AckWait: 5 * time.Second, Copier: copier}, e.topo, reg, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = tr.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the tracker did not stop within 10 s of its context")
		}
	})
	return reg
}

// caughtUp waits until the receiver's durable has acknowledged every
// product message stored.
func (e *env) caughtUp(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var info *jetstream.ConsumerInfo
		c, err := e.js.Consumer(context.Background(), event.DefaultStream, topology.VersionsConsumer)
		if err == nil {
			info, err = c.Info(context.Background())
			if err == nil && info.AckFloor.Stream >= e.last && info.NumAckPending == 0 && info.NumPending == 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the versions consumer did not take every product message in (last %d): %v %+v", e.last, err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// noticed is one notice as a consumer reads it, with its subject.
type noticed struct {
	subject string
	*event.Superseded
}

// String is what the tests compare: reason, superseded and by.
func (n noticed) String() string {
	return fmt.Sprintf("%s %s(%s) by %s(%s)", n.Reason, n.Superseded.Superseded.Name, n.Superseded.Superseded.Version, n.By.Name, n.By.Version)
}

// notices reads the notices of the product stream, checking that each is
// what a consumer sees: ErrNotice from Decode, and its headers.
func (e *env) notices(t *testing.T) []noticed {
	t.Helper()
	var out []noticed
	for _, m := range natstest.StreamMessages(t, e.js, event.DefaultStream) {
		if !strings.HasPrefix(m.Subject, event.DefaultSupersededPrefix+".") {
			if event.IsNotice(m.Header) {
				t.Errorf("a notice on %s", m.Subject)
			}
			continue
		}
		if _, err := event.DecodeData(m.Data, m.Header); err != event.ErrNotice {
			t.Errorf("Decode on a notice: %v, want ErrNotice", err)
		}
		s, err := event.DecodeSupersededData(m.Data, m.Header)
		if err != nil {
			t.Fatal(err)
		}
		h := m.Header
		if s.ID != event.SupersededMsgID(s.Superseded.ID, s.By.ID) || h.Get(event.HeaderProductID) != s.Superseded.ID ||
			h.Get(event.HeaderProductName) != s.Superseded.Name || h.Get(event.HeaderSupersededBy) != s.By.ID ||
			h.Get(event.HeaderSupersededByName) != s.By.Name || h.Get(event.HeaderSupersededReason) != string(s.Reason) ||
			h.Get(event.HeaderAcquisition) != s.Acquisition {
			t.Errorf("headers %v do not repeat the body %+v", h, s)
		}
		if s.Superseded.ID != idOf(s.Superseded.Name) || s.By.ID != idOf(s.By.Name) {
			t.Errorf("ids %s %s are not the products' own", s.Superseded.ID, s.By.ID)
		}
		if want := event.SupersededSubject(event.DefaultSupersededPrefix, s.Collection, s.ProductType); m.Subject != want || s.Collection == "" || s.ProductType == "" {
			t.Errorf("subject %s, want %s (the superseded product's tokens)", m.Subject, want)
		}
		out = append(out, noticed{m.Subject, s})
	}
	return out
}

func strs(ns []noticed) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.String()
	}
	return out
}

// TestVersionsInBothOrders: every real pair of versions of names.json
// (Sentinel-2 baselines, Sentinel-1 reprocessings, Sentinel-3 NR then NT,
// Sentinel-5P OFFL then RPRO), stored oldest first, gives one notice:
// the older superseded by the newer as it arrived (newer_arrived); stored
// newest first, the same pair, the older superseded on its arrival
// (arrived_older). The acquisition is the headers' Cdse-Acquisition.
func TestVersionsInBothOrders(t *testing.T) {
	for _, c := range realCases(t, "versions") {
		old, new := c[0], c[1]
		for _, order := range []struct {
			name   string
			stored []product
			reason event.SupersededReason
		}{
			{"oldest first", []product{old, new}, event.NewerArrived},
			{"newest first", []product{new, old}, event.ArrivedOlder},
		} {
			t.Run(old.Name[:3]+" "+order.name, func(t *testing.T) {
				e := newEnv(t, time.Hour)
				e.track(t)
				e.created(t, order.stored...)
				e.caughtUp(t)
				got := e.notices(t)
				if len(got) != 1 {
					t.Fatalf("notices %v, want one", strs(got))
				}
				n := got[0]
				if n.Reason != order.reason || n.Superseded.Superseded.Name != old.Name || n.By.Name != new.Name {
					t.Errorf("notice %s, want %s %s by %s", n, order.reason, old.Name, new.Name)
				}
				if n.Superseded.Superseded.Version >= n.By.Version {
					t.Errorf("versions %s, %s: the superseded one sorts first", n.Superseded.Superseded.Version, n.By.Version)
				}
				stored := natstest.StreamMessages(t, e.js, event.DefaultStream)
				if acq := stored[0].Header.Get(event.HeaderAcquisition); acq == "" || acq != n.Acquisition {
					t.Errorf("notice's acquisition %q, the product's header %q", n.Acquisition, acq)
				}
			})
		}
	}
}

// TestNeverSuperseded: products that are not versions of one another get
// no notice whatever their order and dates: Sentinel-2 siblings (one
// baseline, two discriminators: two ground stations, a tile cut in two),
// a Sentinel-1 _COG twin of a GRD (another product type: here processed
// later, so a key without _COG would make it a newer version), every
// distinct name of names.json. A product stored twice (a replay) or
// modified is not compared again.
func TestNeverSuperseded(t *testing.T) {
	cog := byName(t, "distinct", "S1A_IW_GRDH_1SDV_20151021T063752_20151021T063817_008247_00B9CD_2770_COG.SAFE")
	grd := byName(t, "distinct", "S1A_IW_GRDH_1SDV_20151021T063752_20151021T063817_008247_00B9CD_2770.SAFE")
	cog.ProcessingDate = grd.ProcessingDate.Add(24 * time.Hour)
	type group struct {
		name     string
		products []product
	}
	groups := []group{{"a _COG twin, processed later", []product{grd, cog}}, {"a _COG twin, stored first", []product{cog, grd}}}
	for i, c := range realCases(t, "siblings") {
		groups = append(groups, group{fmt.Sprintf("S2 siblings %d", i), c}, group{fmt.Sprintf("S2 siblings %d, reversed", i), []product{c[1], c[0]}})
	}
	for i, c := range realCases(t, "distinct") {
		groups = append(groups, group{fmt.Sprintf("distinct %d", i), c})
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			e := newEnv(t, time.Hour)
			e.track(t)
			e.created(t, g.products...)
			e.created(t, g.products[0]) // a replay: a duplicate by id, not stored again
			e.store(t, notificationOf(event.Modified, g.products[0], ""))
			e.caughtUp(t)
			if got := e.notices(t); len(got) != 0 {
				t.Errorf("notices %v, want none", strs(got))
			}
		})
	}
}

// TestUndecided: the real Sentinel-1 pair whose second product is dated by
// its PublicationDate alone cannot be ordered: no notice, counted once by
// reason (date_sources), in either order; stored again, not counted again.
func TestUndecided(t *testing.T) {
	c := realCases(t, "undecided")[0]
	for _, order := range [][]product{{c[0], c[1]}, {c[1], c[0]}} {
		t.Run(order[0].Name[len(order[0].Name)-4:]+" first", func(t *testing.T) {
			e := newEnv(t, time.Hour)
			reg := e.track(t)
			e.created(t, order...)
			e.store(t, notificationOf(event.Modified, order[1], ""))
			e.caughtUp(t)
			if got := e.notices(t); len(got) != 0 {
				t.Errorf("notices %v, want none", strs(got))
			}
			if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP cdse_receiver_versions_undecided_total Products of a known acquisition whose version could not be ordered with the latest known (no notice, no link), by reason: date_sources (Sentinel-1 versions dated from different attributes), other.
# TYPE cdse_receiver_versions_undecided_total counter
cdse_receiver_versions_undecided_total{reason="date_sources"} 1
`), "cdse_receiver_versions_undecided_total"); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestDeletedAsObsolete: a deleted event whose DeletionCause says the
// product was replaced (matched loosely: "Obsolete product", "duplicated
// product", "REPROCESSED PRODUCT") links it to the latest version known,
// once; another cause, or a product already announced superseded, or the
// latest itself, links nothing.
func TestDeletedAsObsolete(t *testing.T) {
	v := realCases(t, "versions")[0] // S2 N0204, N0500
	sib := realCases(t, "siblings")[0]
	deleted := func(p product, cause string) []byte { return notificationOf(event.Deleted, p, cause) }
	for _, c := range []struct {
		name  string
		steps func(e *env, t *testing.T)
		want  []string
	}{
		{"an older version never created, deleted as obsolete", func(e *env, t *testing.T) {
			e.created(t, v[1])
			e.store(t, deleted(v[0], "Obsolete product"))
		}, []string{"deleted_obsolete " + v[0].Name + "(0204) by " + v[1].Name + "(0500)"}},
		{"a sibling deleted as duplicated: never superseded by its twin", func(e *env, t *testing.T) {
			e.created(t, sib...)
			e.store(t, deleted(sib[0], "duplicated product"))
		}, nil},
		{"an older version deleted, already announced", func(e *env, t *testing.T) {
			e.created(t, v...)
			e.store(t, deleted(v[0], "REPROCESSED PRODUCT"))
		}, []string{"newer_arrived " + v[0].Name + "(0204) by " + v[1].Name + "(0500)"}},
		{"another cause", func(e *env, t *testing.T) {
			e.created(t, sib...)
			e.store(t, deleted(sib[0], "Corrupted product"))
		}, nil},
		{"the latest deleted", func(e *env, t *testing.T) {
			e.created(t, v[0])
			e.store(t, deleted(v[0], "Obsolete product"))
		}, nil},
		{"then an older version arrives: the deleted one is no longer latest", func(e *env, t *testing.T) {
			e.created(t, v[1])
			e.store(t, deleted(v[1], "Corrupted product"))
			e.created(t, v[0])
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, time.Hour)
			e.track(t)
			c.steps(e, t)
			e.caughtUp(t)
			got := strs(e.notices(t))
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("notices\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			for _, n := range e.notices(t) {
				if n.Reason == event.DeletedObsolete && n.DeletionCause == "" {
					t.Errorf("%s without its DeletionCause", n)
				}
			}
		})
	}
}

// TestReplicasAndReplays: two receiver replicas share the durable over a
// backlog of every real version pair (oldest first) and sibling pair, and
// then over what arrives while they run: each notice is stored once, and
// each pair in the stream's order (newer_arrived: one message at a time,
// so no replica takes a newer version before another has taken the older
// one in), and cdse_receiver_versions_pending_messages says neither trails
// the stream. Then the durable is deleted and made anew (it starts
// RECEIVER_VERSIONS_MAX_AGE back: every product event is read again) past
// the stream's duplicate window: the versions bucket knows every product,
// and nothing is announced again.
func TestReplicasAndReplays(t *testing.T) {
	e := newEnv(t, time.Second)
	var want []string
	for range 20 { // a backlog the replicas share
		for _, c := range realCases(t, "versions") {
			c = unique(c)
			e.created(t, c...)
			want = append(want, "newer_arrived "+c[0].Name+"("+versionOf(t, c[0])+") by "+c[1].Name+"("+versionOf(t, c[1])+")")
		}
	}
	regs := []*prometheus.Registry{e.track(t), e.track(t)}
	for _, c := range realCases(t, "versions") {
		e.created(t, c...)
		want = append(want, "newer_arrived "+c[0].Name+"("+versionOf(t, c[0])+") by "+c[1].Name+"("+versionOf(t, c[1])+")")
	}
	for _, c := range realCases(t, "siblings") {
		e.created(t, c[1], c[0])
	}
	e.caughtUp(t)
	got := strs(e.notices(t))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("notices\n%s\nwant, once each\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Both replicas run, and trail the stream by nothing.
	for _, reg := range regs {
		if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP cdse_receiver_versions_pending_messages Product events the versions consumer has yet to take in (its pending and unacknowledged messages), read from JetStream at scrape time; absent while it is not running.
# TYPE cdse_receiver_versions_pending_messages gauge
cdse_receiver_versions_pending_messages 0
`), "cdse_receiver_versions_pending_messages"); err != nil {
			t.Error(err)
		}
	}

	time.Sleep(1500 * time.Millisecond) // past the duplicate window
	if err := e.js.DeleteConsumer(context.Background(), event.DefaultStream, topology.VersionsConsumer); err != nil {
		t.Fatal(err)
	}
	e.caughtUp(t) // the replicas make it anew, and read everything again
	if again := strs(e.notices(t)); len(again) != len(got) {
		t.Errorf("after the replay, notices\n%s", strings.Join(again, "\n"))
	}
}

// unique is the products of ps under names of their own: the same
// relations (the discriminators, the dates, the tokens the acquisition is
// made of are kept), other acquisitions: three digits of the name that
// are in every rule's acquisition key (the S2 relative orbit, the S1
// absolute orbit, the S3 cycle, the S5P orbit) become 9xx, at most 100
// times.
func unique(ps []product) []product {
	seq := uniqueSeq.Add(1)
	out := make([]product, len(ps))
	for i, p := range ps {
		b := []byte(p.Name)
		at := map[string]int{"S1": 49, "S2": 34, "S3": 69, "S5": 52}[p.Name[:2]]
		copy(b[at:at+3], fmt.Sprintf("9%02d", seq%100)) // no real name here has 9 there
		p.Name = string(b)
		out[i] = p
	}
	return out
}

var uniqueSeq atomic.Int64

// versionOf is p's Cdse-Version as the ingest path sets it.
func versionOf(t *testing.T, p product) string {
	t.Helper()
	ns, err := notification.Parse(notificationOf(event.Created, p, ""), 1)
	if err != nil {
		t.Fatal(err)
	}
	route := ingest.Route{Prefix: event.DefaultPrefix}
	return ingest.Messages(ns, &route, ingest.SourcePush)[0].Headers()[event.HeaderVersion][0]
}
