package interest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/cdse/productfilter"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/publishtest"
)

// TestRouterReload: a changed file is taken at the next reload; a broken
// one is refused (counted) and the last good set stays in force; SIGHUP's
// forced reload reads the file whatever its time.
func TestRouterReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "interests.yaml")
	write := func(s string, at time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	write("interests:\n  - name: a\n    filter: Name eq 'x'\n", time.Now())
	log, _ := test.NewNullLogger()
	reg := prometheus.NewRegistry()
	r, err := NewRouter(path, reg, log)
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := r.Reload(false); changed || err != nil {
		t.Fatalf("an unchanged file reloaded: %v %v", changed, err)
	}
	write("interests:\n  - name: a\n    filter: Name eq 'x'\n  - name: b\n    filter: Name eq 'y'\n", time.Now().Add(time.Second))
	if changed, err := r.Reload(false); !changed || err != nil || r.Current().Len() != 2 {
		t.Fatalf("reload: %v %v, %d interests", changed, err, r.Current().Len())
	}
	write("interests:\n  - name: c\n    filter: Name gt 'x' and\n", time.Now().Add(2*time.Second))
	if changed, err := r.Reload(false); changed || err == nil || r.Current().Len() != 2 {
		t.Fatalf("a broken file: %v %v, %d interests in force", changed, err, r.Current().Len())
	}
	if got := testutil.ToFloat64(r.reloads.WithLabelValues("failed")); got != 1 {
		t.Errorf("failed reloads counted %v", got)
	}
	if changed, err := r.Reload(true); changed || err == nil {
		t.Errorf("forced reload of the broken file: %v %v", changed, err)
	}
	write("interests:\n  - name: d\n    filter: Name eq 'z'\n", time.Now().Add(2*time.Second)) // same time as the broken one
	if changed, err := r.Reload(true); !changed || err != nil || r.Current().Interests[0].Name != "d" {
		t.Errorf("forced reload: %v %v", changed, err)
	}
}

// TestRouterReloadFollowsAConfigMapMount: the kubelet updates a mounted
// ConfigMap by writing a new timestamped directory and swapping the
// ..data symlink; the file's own path never changes and the new file may
// carry the old one's time. The change is taken at the next check.
func TestRouterReloadFollowsAConfigMapMount(t *testing.T) {
	dir := t.TempDir()
	at := time.Now().Add(-time.Hour)
	version := func(n int, content string) string {
		t.Helper()
		d := fmt.Sprintf("..2026_11_23_17_00_%02d.000000001", n)
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, d, "interests.yaml")
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f, at, at); err != nil { // the same time for every version
			t.Fatal(err)
		}
		return d
	}
	swap := func(d string) {
		t.Helper()
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(d, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	swap(version(1, "interests:\n  - name: a\n    filter: Name eq 'x'\n"))
	path := filepath.Join(dir, "interests.yaml")
	if err := os.Symlink(filepath.Join("..data", "interests.yaml"), path); err != nil {
		t.Fatal(err)
	}
	log, _ := test.NewNullLogger()
	r, err := NewRouter(path, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	swap(version(2, "interests:\n  - name: b\n    filter: Name eq 'y'\n"))
	if changed, err := r.Reload(false); !changed || err != nil || r.Current().Interests[0].Name != "b" {
		t.Fatalf("after the ConfigMap changed: reloaded %v, %v, in force %q", changed, err, r.Current().Interests[0].Name)
	}
	if changed, err := r.Reload(false); changed || err != nil {
		t.Errorf("unchanged since: reloaded %v %v", changed, err)
	}
}

// TestCountAfterAPartialPublish: a publish that stored the product message
// but not its copy fails, and the retry finds the product message a
// duplicate while it stores the copy: the copy is counted then, once, and
// not again when the catalogue resends.
func TestCountAfterAPartialPublish(t *testing.T) {
	path := filepath.Join(t.TempDir(), "interests.yaml")
	if err := os.WriteFile(path, []byte("interests:\n  - name: a\n    filter: Name eq 'x'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	log, _ := test.NewNullLogger()
	r, err := NewRouter(path, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	env := publishtest.New(t, nil)
	id, copyID := "created:k1", ingest.InterestMsgID("a", "created:k1")
	product := publish.Message{Subject: "cdse.product.created.SENTINEL-2.S2MSI2A", MsgID: id, Header: map[string][]string{"Nats-Msg-Id": {id}}, Data: []byte(`{}`), Event: "created"}
	withCopy := product
	withCopy.Copies = []publish.Message{{Subject: "cdse.product.copies.a", MsgID: copyID, Header: map[string][]string{"Nats-Msg-Id": {copyID}}, Data: []byte(`{}`)}}
	publishCount := func(m publish.Message) []publish.Result {
		t.Helper()
		res, err := env.Publisher.Publish(context.Background(), []publish.Message{m})
		if err != nil {
			t.Fatal(err)
		}
		r.Count([]publish.Message{m}, res)
		return res
	}
	publishCount(product) // the first attempt: only the product message was stored
	if res := publishCount(withCopy); !res[0].Duplicate || len(res[0].CopiesStored) != 1 || !res[0].CopiesStored[0] {
		t.Fatalf("the retry: %+v", res[0])
	}
	publishCount(withCopy) // the catalogue's resend
	if got := testutil.ToFloat64(r.routed.WithLabelValues("a")); got != 1 {
		t.Errorf("routed to a: %v, want 1", got)
	}
	if got := testutil.ToFloat64(r.unmatched.WithLabelValues("created")); got != 1 {
		t.Errorf("unmatched: %v, want 1 (the first attempt's message, stored without a copy)", got)
	}
}

// TestRouterFailsOpenOnAnUnusableFootprint (issue 29, defect 1): a product
// whose footprint has a longitude of 1e300 (which pinned a core forever)
// is answered at once and routed to every interest whose other terms it
// matches: the copy of an interest with an area says the area was not
// evaluated (Cdse-Area-Unevaluated), which is counted by reason and
// logged once, with the product's id and not its body. The same product
// with its real footprint is routed by its area, unmarked.
func TestRouterFailsOpenOnAnUnusableFootprint(t *testing.T) {
	const alps = "OData.CSC.Intersects(area=geography'SRID=4326;POLYGON((5.9 44.9,16.2 44.9,16.2 48.0,5.9 48.0,5.9 44.9))')"
	const iberia = "OData.CSC.Intersects(area=geography'SRID=4326;POLYGON((-9 36,3 36,3 44,-9 44,-9 36))')"
	path := filepath.Join(t.TempDir(), "interests.yaml")
	file := "interests:\n" +
		"  - name: s2-alps\n    filter: \"Collection/Name eq 'SENTINEL-2' and " + alps + "\"\n" +
		"  - name: s2-iberia\n    filter: \"Collection/Name eq 'SENTINEL-2' and " + iberia + "\"\n" +
		"  - name: s1-alps\n    filter: \"Collection/Name eq 'SENTINEL-1' and " + alps + "\"\n" +
		"  - name: s2\n    filter: \"Collection/Name eq 'SENTINEL-2'\"\n"
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	log, hook := test.NewNullLogger()
	r, err := NewRouter(path, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	raw := fixtures.Notification(t, "created-s2.json")
	huge := []byte(strings.Replace(string(raw), "POLYGON ((11.5 45.0,", "POLYGON ((1e300 45.0,", 1))
	if string(huge) == string(raw) {
		t.Fatal("the fixture's footprint changed: no longitude replaced")
	}
	const why = string(productfilter.LongitudeOutOfRange)
	for _, tt := range []struct {
		name   string
		raw    []byte
		want   []ingest.Routed
		counts float64
	}{
		{"real footprint", raw, []ingest.Routed{{Name: "s2-alps"}, {Name: "s2"}}, 0},
		{"longitude 1e300", huge, []ingest.Routed{{Name: "s2-alps", AreaUnevaluated: why}, {Name: "s2-iberia", AreaUnevaluated: why}, {Name: "s2"}}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hook.Reset()
			ns, err := notification.Parse(tt.raw, 1000)
			if err != nil {
				t.Fatal(err)
			}
			route := &ingest.Route{Prefix: event.DefaultPrefix, Interests: r, InterestPrefix: event.DefaultInterestPrefix}
			msgs := ingest.Messages(ns, route, ingest.SourcePush)
			copies := returns(t, msgs[0].MakeCopies)
			var got []ingest.Routed
			for _, c := range copies {
				name, _ := ingest.CopyInterest(c.MsgID)
				h := c.MessageHeader()
				if h[event.HeaderInterest][0] != name {
					t.Errorf("%s: Cdse-Interest %v", name, h[event.HeaderInterest])
				}
				to := ingest.Routed{Name: name}
				if v := h[event.HeaderAreaUnevaluated]; v != nil {
					to.AreaUnevaluated = v[0]
				}
				got = append(got, to)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("copies %v, want %v", got, tt.want)
			}
			if c := testutil.ToFloat64(r.unevaluated.WithLabelValues(why)); c != tt.counts {
				t.Errorf("counted %v, want %v", c, tt.counts)
			}
			var warned []string
			for _, e := range hook.AllEntries() {
				if strings.Contains(e.Message, "not tested against the interests' areas") {
					warned = append(warned, fmt.Sprintf("%v %v %v", e.Data["product_id"], e.Data["reason"], e.Data["interests"]))
					if len(e.Message)+len(fmt.Sprint(e.Data)) > 1000 {
						t.Errorf("a log line of %d bytes: the body logged?", len(e.Message)+len(fmt.Sprint(e.Data)))
					}
				}
			}
			wantLog := 0
			if tt.counts > 0 {
				wantLog = 1
				if w := ns[0].ProductID + " " + why + " s2-alps,s2-iberia"; len(warned) != 1 || warned[0] != w {
					t.Errorf("logged %q, want %q", warned, w)
				}
			}
			if len(warned) != wantLog {
				t.Errorf("%d log lines, want %d", len(warned), wantLog)
			}
		})
	}
	// interests check says the same.
	ns, err := notification.Parse(huge, 1000)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := productfilter.FromNotification(&ns[0], &productfilter.Everything)
	for _, v := range r.Current().Evaluate(event.Created, &p, time.Now()) {
		if want := v.Name == "s2-alps" || v.Name == "s2-iberia"; v.Matches != (v.Name != "s1-alps") || (v.AreaUnevaluated == why) != want {
			t.Errorf("interests check: %+v", v)
		}
	}
}

// returns runs f and fails the test when it has not returned within a
// bound far above what evaluating interests takes (microseconds): it
// turns a hang into a failure.
func returns[T any](t *testing.T, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(20 * time.Second):
		t.Fatal("no answer within 20s: the evaluation does not terminate")
	}
	panic("unreachable")
}
