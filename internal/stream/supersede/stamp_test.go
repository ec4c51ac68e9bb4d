package supersede_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/stream/supersede"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/interesttest"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// interestsOf is an interests file of one interest x over Sentinel-2
// products, taking every version ("all"), the latest only ("latest"), or
// absent (""), beside an interest of every version that keeps the file
// never empty.
func interestsOf(mode string) string {
	f := "interests:\n  - name: keep\n    filter: Collection/Name eq 'SENTINEL-1'\n"
	if mode != "" {
		f += "  - name: x\n    versions: " + mode + "\n    filter: Collection/Name eq 'SENTINEL-2'\n"
	}
	return f
}

// TestLatestInterestsStampedAtIngest: the interests that take the latest
// versions only are the ones the ingest path routed a product event to
// when it stored it (its Cdse-Latest-Interests), not those in force when
// the versions consumer, which trails, reads it: an interest switched
// from latest to all while the consumer is behind still gets its copy (the
// ingest path made none), one switched from all to latest gets none from
// the consumer past the duplicate window (the ingest path made it), and an
// interest of the latest versions added later does not get the products
// stored before it (a new durable would otherwise copy 90 days of them).
func TestLatestInterestsStampedAtIngest(t *testing.T) {
	p := byName(t, "versions", "S2A_MSIL1C_20150704T101006_N0500_R022_T32TPS_20231011T134419.SAFE")
	tests := []struct {
		name         string
		stored, read string // x's mode when the ingest path stores, when the consumer reads
		pastWindow   bool
		want         []string // what x's subjects hold
	}{
		{"latest, then all", "latest", "all", false, []string{"created " + p.Name}},
		{"all, then latest, past the window", "all", "latest", true, []string{"created " + p.Name}},
		{"added as latest later", "", "latest", false, nil},
		{"latest, then removed", "latest", "", false, nil},
		{"latest throughout", "latest", "latest", false, []string{"created " + p.Name}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnvWith(t, window, event.DefaultInterestPrefix)
			r, path := interesttest.Router(t, interestsOf(tt.stored))
			e.route.Interests, e.route.InterestPrefix = r, event.DefaultInterestPrefix
			e.created(t, p)
			msgs := natstest.StreamMessages(t, e.js, event.DefaultStream)
			stamp := msgs[0].Header.Get(event.HeaderLatestInterests)
			if want := map[bool]string{true: "x"}[tt.stored == "latest"]; stamp != want {
				t.Errorf("the product message's %s %q, want %q", event.HeaderLatestInterests, stamp, want)
			}
			for _, m := range msgs[1:] {
				if m.Header.Get(event.HeaderLatestInterests) != "" {
					t.Errorf("the copy %s carries %s", m.Subject, event.HeaderLatestInterests)
				}
			}
			if tt.pastWindow {
				e.pastWindow(t)
			}
			interesttest.Reload(t, r, path, interestsOf(tt.read))
			e.trackWith(t, r.Latest(&e.route))
			e.caughtUp(t)
			if got := e.held(t, "x"); !slices.Equal(got, tt.want) {
				t.Errorf("x holds %q, want %q", strings.Join(got, "; "), strings.Join(tt.want, "; "))
			}
		})
	}
}

// TestNoticesGoToTheLatestInterestsInForce: a notice is copied to the
// interests of its products that take the latest versions only in the set
// in force when it is published, not to those the versions bucket noted
// when the products were taken in: an interest switched to all, or
// removed, since then gets no notice on its subjects.
func TestNoticesGoToTheLatestInterestsInForce(t *testing.T) {
	older := byName(t, "versions", "S2A_MSIL1C_20150704T101006_N0204_R022_T32TPS_20150704T101337.SAFE")
	newer := byName(t, "versions", "S2A_MSIL1C_20150704T101006_N0500_R022_T32TPS_20231011T134419.SAFE")
	tests := []struct {
		then string // x's mode when the newer version arrives
		want []string
	}{
		{"latest", []string{"created " + older.Name, "notice newer_arrived " + older.Name + " by " + newer.Name, "created " + newer.Name}},
		{"all", []string{"created " + older.Name, "created " + newer.Name}},
		{"", []string{"created " + older.Name}},
	}
	for _, tt := range tests {
		t.Run("then "+map[bool]string{true: "removed", false: tt.then}[tt.then == ""], func(t *testing.T) {
			e := newEnvWith(t, window, event.DefaultInterestPrefix)
			r, path := interesttest.Router(t, interestsOf("latest"))
			e.route.Interests, e.route.InterestPrefix = r, event.DefaultInterestPrefix
			e.trackWith(t, r.Latest(&e.route))
			e.created(t, older)
			e.caughtUp(t)
			interesttest.Reload(t, r, path, interestsOf(tt.then))
			e.created(t, newer)
			e.caughtUp(t)
			if got := e.held(t, "x"); !slices.Equal(got, tt.want) {
				t.Errorf("x holds %q, want %q", strings.Join(got, "; "), strings.Join(tt.want, "; "))
			}
		})
	}
}

// TestACopyThatCannotBeMadeIsCounted: a product message routed to an
// interest that takes the latest versions only whose copy the Copier's
// route cannot make (its subject is not under the route's product
// subjects: NATS_SUBJECT_PREFIX changed under a consumer that trails) is
// counted as dropped for that interest, not only logged.
func TestACopyThatCannotBeMadeIsCounted(t *testing.T) {
	p := byName(t, "versions", "S2A_MSIL1C_20150704T101006_N0500_R022_T32TPS_20231011T134419.SAFE")
	e := newEnvWith(t, window, event.DefaultInterestPrefix)
	r, _ := interesttest.Router(t, interestsOf("latest"))
	e.route.Interests, e.route.InterestPrefix = r, event.DefaultInterestPrefix
	e.created(t, p)
	other := e.route
	other.Prefix = "cdse.elsewhere"
	reg := e.trackWith(t, r.Latest(&other))
	e.caughtUp(t)
	if got := copiesCounted(t, reg, "x", "dropped"); got != 1 {
		t.Errorf("copies dropped %v, want 1", got)
	}
	if got := e.held(t, "x"); len(got) != 0 {
		t.Errorf("x holds %q", got)
	}
}

// TestStoppedForGoodIsVisible: when the product stream does not take the
// notices' subjects (a setting to change), the versions consumer stops,
// and what it says of itself (for /status) says so and why: the
// interests that take the latest versions only get no copy until the
// setting is changed, which an operator must see beside the log line.
func TestStoppedForGoodIsVisible(t *testing.T) {
	srv := natstest.RunJetStream(t)
	js, closeNC := natstest.JetStream(t, srv.ClientURL())
	defer closeNC()
	topo := topology.New(js, topology.Options{Stream: event.DefaultStream, SubjectPrefix: event.DefaultPrefix, Duplicates: window})
	if _, err := topo.EnsureProduct(context.Background()); err != nil {
		t.Fatal(err)
	}
	log, _ := test.NewNullLogger()
	tr, err := supersede.New(supersede.Options{MaxAge: time.Hour}, topo, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := tr.Run(ctx); err != nil || ctx.Err() != nil {
		t.Fatalf("Run: %v (context: %v), want it to stop by itself", err, ctx.Err())
	}
	st := tr.State(context.Background())
	if st.Running || !strings.Contains(st.Stopped, "does not take the notices") {
		t.Errorf("state %+v: want stopped, saying why", st)
	}
}
