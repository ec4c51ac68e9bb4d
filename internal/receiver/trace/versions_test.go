package trace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/receiver/trace"
	"github.com/cdse-jetstream/receiver/internal/stream/supersede"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/publishtest"
	"github.com/cdse-jetstream/receiver/internal/testkit/versionstest"
)

// Two versions of one Sentinel-2 L1C acquisition, real names
// (internal/cdse/versions/testdata/names.json, as test/fetch's): processing
// baseline 02.04, then the Collection-1 reprocessing 05.00.
const (
	olderS2       = "S2A_MSIL1C_20150704T101006_N0204_R022_T32TPS_20150704T101337.SAFE"
	newerS2       = "S2A_MSIL1C_20150704T101006_N0500_R022_T32TPS_20231011T134419.SAFE"
	s2Acquisition = "S2A_MSIL1C_20150704T101006_R022_T32TPS"
	// A name no rule applies to (another mission).
	landsat = "LC08_L2SP_196029_20230708_20230717_02_T1"
)

// product is one product to store, with the Sentinel-1 dates its version
// is read from.
type product struct {
	name                    string
	processing, published   time.Time
	collection, productType string
}

func s2(name string) product {
	return product{name: name, collection: "SENTINEL-2", productType: "S2MSI1C"}
}

func idOf(name string) string { return uuid.NewSHA1(uuid.NameSpaceURL, []byte(name)).String() }

// versionsEnv is a product stream that takes the notices, stored by the
// ingest path's own messages.
type versionsEnv struct {
	env  *publishtest.Env
	topo *topology.Topology
	o    trace.Options
	last uint64
}

func newVersionsEnv(t *testing.T) *versionsEnv {
	t.Helper()
	env := publishtest.New(t, nil)
	opts := publishtest.Topology
	opts.SupersededPrefix = event.DefaultSupersededPrefix
	topo := topology.New(env.JS, opts)
	if _, err := topo.EnsureProduct(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &versionsEnv{env: env, topo: topo, o: trace.Options{ProductStream: publishtest.Stream, QuarantineStream: publishtest.QuarantineStream,
		MaxBody: 1 << 20, VersionsBucket: topo.VersionsBucket()}}
}

// store publishes the created events of ps as the ingest path does.
func (e *versionsEnv) store(t *testing.T, ps ...product) {
	t.Helper()
	for _, p := range ps {
		attrs := []map[string]any{
			{"Name": "platformShortName", "Value": p.collection, "ValueType": "String"},
			{"Name": "productType", "Value": p.productType, "ValueType": "String"},
		}
		if !p.processing.IsZero() {
			attrs = append(attrs, map[string]any{"Name": "processingDate", "Value": p.processing.Format(time.RFC3339), "ValueType": "DateTimeOffset"})
		}
		value := map[string]any{"Id": idOf(p.name), "Name": p.name, "Attributes": attrs}
		if !p.published.IsZero() {
			value["PublicationDate"] = p.published.Format(time.RFC3339)
		}
		b, err := json.Marshal(map[string]any{"SubscriptionEvent": "created", "ProductId": idOf(p.name), "ProductName": p.name,
			"NotificationDate": "2026-01-02T00:00:00Z", "value": value})
		if err != nil {
			t.Fatal(err)
		}
		ns, err := notification.Parse(b, 1)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		res, err := e.env.Publisher.Publish(context.Background(), ingest.Messages(ns, &ingest.Route{Prefix: "cdse.product"}, ingest.SourcePush))
		if err != nil {
			t.Fatal(err)
		}
		e.last = max(e.last, res[0].Seq)
	}
}

// decide runs the versions consumer and waits until it has decided every
// product stored.
func (e *versionsEnv) decide(t *testing.T) {
	t.Helper()
	versionstest.Run(t, e.topo, supersede.Options{})
	versionstest.Decided(t, e.topo, e.last)
}

func (e *versionsEnv) find(t *testing.T, q string) trace.Result {
	t.Helper()
	query, err := trace.ParseQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	res, err := trace.Find(context.Background(), e.env.JS, e.o, query)
	if err != nil {
		t.Fatalf("trace %s: %v", q, err)
	}
	if res.Versions == nil {
		t.Fatalf("trace %s: no versions section", q)
	}
	return res
}

// versionsOf is the versions section's versions in a line each: version,
// name, latest or what supersedes it, * for the traced one.
func versionsOf(v *trace.Versions) string {
	var out []string
	for _, x := range v.Versions {
		s := x.Version + " " + x.Name
		switch {
		case x.Latest:
			s += " latest"
		case x.SupersededBy != nil:
			s += " superseded by " + x.SupersededBy.Name
		case x.Undecided:
			s += " undecided"
		}
		if x.Traced {
			s += " *"
		}
		out = append(out, s)
	}
	return strings.Join(out, "\n")
}

// TestVersionsBothOrders (issue 42, "Consumers choose"): the real pair
// stored in both orders and decided by the versions consumer; trace of
// either, by name or id, shows the acquisition from the messages' header,
// both versions oldest first, the newer the latest, the older superseded
// by it, and the one notice between them (not as a hit: its place is the
// versions section), with when each place was decided.
func TestVersionsBothOrders(t *testing.T) {
	for _, tt := range []struct {
		name   string
		order  []product
		reason event.SupersededReason
	}{
		{"newer second", []product{s2(olderS2), s2(newerS2)}, event.NewerArrived},
		{"older second", []product{s2(newerS2), s2(olderS2)}, event.ArrivedOlder},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newVersionsEnv(t)
			e.store(t, tt.order...)
			e.decide(t)
			for _, q := range []struct{ query, traced, standing string }{
				{olderS2, olderS2, trace.StandingSuperseded},
				{idOf(olderS2), olderS2, trace.StandingSuperseded},
				{newerS2, newerS2, trace.StandingLatest},
			} {
				res := e.find(t, q.query)
				v := res.Versions
				if v.Acquisition != s2Acquisition || v.From != trace.FromMessage || v.Note != "" || v.Rule != "S2" || v.Changed == nil {
					t.Errorf("%s: acquisition %q from %q, rule %q, changed %v, note %q", q.query, v.Acquisition, v.From, v.Rule, v.Changed, v.Note)
				}
				older, newer := "0204 "+olderS2+" superseded by "+newerS2, "0500 "+newerS2+" latest"
				if q.traced == olderS2 {
					older += " *"
				} else {
					newer += " *"
				}
				want := older + "\n" + newer
				if got := versionsOf(v); got != want {
					t.Errorf("%s: versions\n%s\nwant\n%s", q.query, got, want)
				}
				if v.Standing != q.standing {
					t.Errorf("%s: standing %q, want %q", q.query, v.Standing, q.standing)
				}
				if q.standing == trace.StandingSuperseded && (v.SupersededBy == nil || v.SupersededBy.ID != idOf(newerS2) || v.SupersededBy.Name != newerS2) {
					t.Errorf("%s: superseded by %+v", q.query, v.SupersededBy)
				}
				if len(v.Notices) != 1 {
					t.Fatalf("%s: notices %+v, want the one between the pair", q.query, v.Notices)
				}
				n := v.Notices[0]
				if n.Reason != string(tt.reason) || n.Superseded.ID != idOf(olderS2) || n.Superseded.Name != olderS2 || n.By.ID != idOf(newerS2) ||
					n.By.Name != newerS2 || !strings.HasPrefix(n.Subject, event.DefaultSupersededPrefix+".SENTINEL-2.") {
					t.Errorf("%s: notice %+v", q.query, n)
				}
				// The older's place was decided by the notice; the newer's
				// too when it arrived second (before, it was decided on
				// arrival, which no notice tells).
				if older, newer := v.Versions[0], v.Versions[1]; older.Decided == nil || !older.Decided.Equal(n.Time) {
					t.Errorf("%s: the older decided %v, want the notice's %v", q.query, older.Decided, n.Time)
				} else if (newer.Decided != nil) != (tt.reason == event.NewerArrived) {
					t.Errorf("%s: the newer decided %v", q.query, newer.Decided)
				}
				if fmt.Sprint(whats(res)) != "[product]" || !res.Found() {
					t.Errorf("%s: hits %+v", q.query, res.Hits)
				}
			}
		})
	}
}

// TestVersionsNoAcquisition: a product no naming rule applies to is
// traced with its versions section saying so.
func TestVersionsNoAcquisition(t *testing.T) {
	e := newVersionsEnv(t)
	e.store(t, product{name: landsat, collection: "LANDSAT-8", productType: "L2SP"})
	e.decide(t)
	for _, q := range []string{landsat, idOf(landsat)} {
		res := e.find(t, q)
		if v := res.Versions; v.Note != trace.NoAcquisition || v.Acquisition != "" || len(v.Versions) != 0 || v.Standing != "" || !res.Found() {
			t.Errorf("%s: versions %+v", q, v)
		}
	}
}

// TestVersionsNoBucket: without the versions bucket (RECEIVER_VERSIONS
// off) the section says so, and the trace is no error.
func TestVersionsNoBucket(t *testing.T) {
	e := newVersionsEnv(t)
	e.store(t, s2(olderS2))
	res := e.find(t, olderS2)
	if v := res.Versions; !v.BucketMissing || !strings.Contains(v.Note, "RECEIVER_VERSIONS is off") || v.Acquisition != s2Acquisition || v.From != trace.FromMessage {
		t.Errorf("versions %+v", v)
	}
}

// TestVersionsFromTheName: when nothing of the product is left on the
// stream (its messages and the notice aged out), its name still gives the
// acquisition, and the bucket its place.
func TestVersionsFromTheName(t *testing.T) {
	e := newVersionsEnv(t)
	e.store(t, s2(olderS2), s2(newerS2))
	e.decide(t)
	s, err := e.env.JS.Stream(context.Background(), publishtest.Stream)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Purge(context.Background()); err != nil {
		t.Fatal(err)
	}
	res := e.find(t, olderS2)
	v := res.Versions
	if v.Acquisition != s2Acquisition || v.From != trace.FromName || v.Standing != trace.StandingSuperseded || len(v.Notices) != 0 || len(res.Hits) != 0 || !res.Found() {
		t.Errorf("versions %+v; hits %+v", v, res.Hits)
	}
	if got, want := versionsOf(v), "0204 "+olderS2+" superseded by "+newerS2+" *\n0500 "+newerS2+" latest"; got != want {
		t.Errorf("versions\n%s\nwant\n%s", got, want)
	}
}

// TestVersionsUndecided: the real Sentinel-1 pair dated from different
// attributes (internal/cdse/versions/testdata/names.json) cannot be
// ordered: the second is said undecided, linked to nothing, and no notice
// names it.
func TestVersionsUndecided(t *testing.T) {
	const (
		first  = "S1A_IW_GRDH_1SDV_20231207T064649_20231207T064714_051545_0638F1_95E7"
		second = "S1A_IW_GRDH_1SDV_20231207T064649_20231207T064714_051545_0638F1_4B74"
	)
	e := newVersionsEnv(t)
	e.store(t,
		product{name: first, collection: "SENTINEL-1", productType: "IW_GRDH_1S", processing: time.Date(2023, 12, 7, 8, 0, 0, 0, time.UTC)},
		product{name: second, collection: "SENTINEL-1", productType: "IW_GRDH_1S", published: time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC)})
	e.decide(t)
	res := e.find(t, second)
	v := res.Versions
	if v.Acquisition != "S1A_IW_GRDH_1SDV_20231207T064649_20231207T064714_051545_0638F1" || v.Standing != trace.StandingUndecided || v.SupersededBy != nil || len(v.Notices) != 0 {
		t.Errorf("versions %+v", v)
	}
	if got, want := versionsOf(v), "P20231207T080000.000000Z "+first+" latest\nU20240115T000000.000000Z "+second+" undecided *"; got != want {
		t.Errorf("versions\n%s\nwant\n%s", got, want)
	}
}
