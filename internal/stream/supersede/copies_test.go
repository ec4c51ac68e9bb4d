package supersede_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/ingest/interest"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/interesttest"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// window is the duplicate window of copyEnv's stream: short, so that a
// test can replay past it.
const window = time.Second

// latestInterests: the same filter taking every version and the latest
// only, deletions included.
const latestInterests = `interests:
  - name: s2-all
    events: [created, deleted]
    filter: Collection/Name eq 'SENTINEL-2'
  - name: s2-latest
    events: [created, deleted]
    versions: latest
    filter: Collection/Name eq 'SENTINEL-2'
`

// copyEnv is env with the interests of latestInterests routed by the
// ingest path and copied by the Tracker.
func copyEnv(t *testing.T) (*env, *interest.Router) {
	t.Helper()
	e := newEnvWith(t, window, event.DefaultInterestPrefix)
	r, _ := interesttest.Router(t, latestInterests)
	e.route.Interests, e.route.InterestPrefix = r, event.DefaultInterestPrefix
	return e, r
}

// held is what the subjects of one interest hold, in order: the product
// names of its copies ("created NAME"), and its notices ("notice REASON
// SUPERSEDED by BY"), each checked as a consumer reads it.
func (e *env) held(t *testing.T, name string) []string {
	t.Helper()
	var out []string
	prefix := event.DefaultInterestPrefix + "." + name + "."
	for _, m := range natstest.StreamMessages(t, e.js, event.DefaultStream) {
		if !strings.HasPrefix(m.Subject, prefix) {
			continue
		}
		if m.Header.Get(event.HeaderInterest) != name || !strings.HasPrefix(m.Header.Get(event.HeaderMsgID), ingest.InterestMsgID(name, "")) {
			t.Errorf("%s: headers %v are not a copy's of %s", m.Subject, m.Header, name)
		}
		n, err := event.DecodeData(m.Data, m.Header)
		if err == event.ErrNotice {
			s, err := event.DecodeSupersededData(m.Data, m.Header)
			if err != nil {
				t.Fatal(err)
			}
			if want := event.SupersededSubject(prefix+ingest.NoticeToken, s.Collection, s.ProductType); m.Subject != want {
				t.Errorf("notice on %s, want %s", m.Subject, want)
			}
			out = append(out, "notice "+string(s.Reason)+" "+s.Superseded.Name+" by "+s.By.Name)
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", m.Subject, err)
		}
		if !strings.HasPrefix(m.Subject, prefix+string(n.Event)+".") || n.Acquisition == "" && strings.Contains(n.ProductName, "N0") {
			t.Errorf("%s: a copy of %s %s without the product message's subject or headers (%+v)", m.Subject, n.Event, n.ProductName, m.Header)
		}
		out = append(out, string(n.Event)+" "+n.ProductName)
	}
	return out
}

// TestLatestInterestCopies: the versions consumer copies to an interest
// that takes the latest versions only what it decides is the latest, with
// the notices of its acquisitions, in both orders of a real pair of
// Sentinel-2 versions (internal/cdse/versions/testdata/names.json); the
// interest beside it that takes all versions holds both, copied by the
// ingest path. A product no naming rule identifies is its own latest, and
// a deletion is copied as a deletion. Taken in again from the start past
// the stream's duplicate window (the durable lost), no copy is stored
// twice but the unversioned product's, which no record notes.
func TestLatestInterestCopies(t *testing.T) {
	old := byName(t, "versions", "S2A_MSIL1C_20150704T101006_N0204_R022_T32TPS_20150704T101337.SAFE")
	newer := byName(t, "versions", "S2A_MSIL1C_20150704T101006_N0500_R022_T32TPS_20231011T134419.SAFE")
	odd := product{Name: "S2B_MSIL2A_NOT_A_STANDARD_NAME.SAFE"}
	tests := []struct {
		name   string
		stored []product
		latest []string
	}{
		{"older first", []product{old, newer}, []string{
			"created " + old.Name,
			"notice newer_arrived " + old.Name + " by " + newer.Name,
			"created " + newer.Name,
		}},
		{"newer first", []product{newer, old}, []string{
			"created " + newer.Name,
			"notice arrived_older " + old.Name + " by " + newer.Name,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, r := copyEnv(t)
			e.created(t, tt.stored...)
			e.created(t, odd)
			e.store(t, notificationOf(event.Deleted, tt.stored[0], "Data corrupted"))
			reg := e.trackWith(t, r.Latest(&e.route))
			e.caughtUp(t)
			want := append(slices.Clone(tt.latest), "created "+odd.Name, "deleted "+tt.stored[0].Name)
			if got := e.held(t, "s2-latest"); !slices.Equal(got, want) {
				t.Errorf("the latest interest holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			all := []string{"created " + tt.stored[0].Name, "created " + tt.stored[1].Name, "created " + odd.Name, "deleted " + tt.stored[0].Name}
			if got := e.held(t, "s2-all"); !slices.Equal(got, all) {
				t.Errorf("the interest of all versions holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(all, "\n"))
			}
			skipped := 0.0
			if tt.stored[1] == old {
				skipped = 1
			}
			for decision, n := range map[string]float64{"skipped_superseded": skipped, "notice": 1, "unversioned": 1, "deleted": 1, "latest": 2 - skipped} {
				if got := copiesCounted(t, reg, "s2-latest", decision); got != n {
					t.Errorf("copies %s: %v, want %v", decision, got, n)
				}
			}

			// The durable lost, past the duplicate window: a new one
			// takes every product event in again.
			before := len(natstest.StreamMessages(t, e.js, event.DefaultStream))
			e.pastWindow(t)
			// The running tracker makes it again and takes every
			// product event in from the start.
			if err := e.js.DeleteConsumer(context.Background(), event.DefaultStream, topology.VersionsConsumer); err != nil {
				t.Fatal(err)
			}
			e.caughtUp(t)
			var again []string
			for _, m := range natstest.StreamMessages(t, e.js, event.DefaultStream)[before:] {
				if m.Subject != "cdse.interest.probe" {
					again = append(again, m.Subject+" "+m.Header.Get(event.HeaderProductName))
				}
			}
			if want := "cdse.interest.s2-latest.created.SENTINEL-2.S2MSI2A " + odd.Name; len(again) != 1 || again[0] != want {
				t.Errorf("taken in again past the window, stored %q, want %q alone", again, want)
			}
		})
	}
}

// pastWindow waits, at most 20 s, until the duplicate window of the
// stream has passed over what it holds: a probe's id stored again is not
// a duplicate.
func (e *env) pastWindow(t *testing.T) {
	t.Helper()
	first := true
	deadline := time.Now().Add(20 * time.Second)
	for {
		ack, err := e.js.Publish(context.Background(), "cdse.interest.probe", nil, jetstream.WithMsgID("probe"))
		if err != nil {
			t.Fatal(err)
		}
		if !first && !ack.Duplicate {
			return
		}
		first = false
		if time.Now().After(deadline) {
			t.Fatal("the duplicate window did not pass within 20 s")
		}
		time.Sleep(window / 10)
	}
}

// copiesCounted is cdse_receiver_versions_interest_copies_total of one
// interest and decision.
func copiesCounted(t *testing.T, reg *prometheus.Registry, name, decision string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "cdse_receiver_versions_interest_copies_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["interest"] == name && labels["decision"] == decision {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
