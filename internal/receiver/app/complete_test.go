package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/ingest/interest"
	"github.com/cdse-jetstream/receiver/internal/receiver/status"
	"github.com/cdse-jetstream/receiver/internal/stream/complete"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// TestStatusSaysWhyNoCompleteRange: without the reconciler, /status has no
// complete range and says so for the product stream and each interest;
// with a RECONCILE_FILTER set by hand that is not the interests' union,
// the interests have none and /status says why, the product stream's
// awaits its first pass.
func TestStatusSaysWhyNoCompleteRange(t *testing.T) {
	file := filepath.Join(t.TempDir(), "interests.yaml")
	if err := os.WriteFile(file, []byte("interests:\n  - name: a\n    filter: Collection/Name eq 'SENTINEL-1'\n  - name: b\n    filter: Collection/Name eq 'SENTINEL-2'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reasons := func(c *status.Complete) map[string]string {
		out := map[string]string{}
		for _, n := range c.NoRange {
			out[n.Interest] = n.Reason
		}
		return out
	}

	c := testConfig(t, t.TempDir())
	c.InterestsFile = file
	a, _ := startApp(t, c)
	st := a.Status(context.Background()).Complete
	if st == nil || len(st.Ranges) != 0 || st.Outcome() != "skip" {
		t.Fatalf("without the reconciler: %+v", st)
	}
	for _, name := range []string{event.CompleteProducts, "a", "b"} {
		if r := reasons(st)[name]; !strings.Contains(r, "RECONCILE_INTERVAL is off") {
			t.Errorf("%s: %q", name, r)
		}
	}
	_ = a.Shutdown(context.Background())

	c = testConfig(t, t.TempDir())
	c.InterestsFile = file
	c.ReconcileInterval, c.ReconcileFilter = time.Hour, "Collection/Name eq 'SENTINEL-2'"
	c.CDSEUsername, c.CDSEPassword = "u", "pw"
	c.CDSETokenURL, c.CDSECatalogueURL = "http://127.0.0.1:1/token", "http://127.0.0.1:1/odata/v1"
	a, _ = startApp(t, c)
	st = a.Status(context.Background()).Complete
	if st == nil || st.Outcome() != "skip" {
		t.Fatalf("with a hand-set filter: %+v", st)
	}
	rs := reasons(st)
	for _, name := range []string{"a", "b"} {
		if !strings.Contains(rs[name], "RECONCILE_FILTER is set by hand") {
			t.Errorf("%s: %q", name, rs[name])
		}
	}
	if !strings.Contains(rs[event.CompleteProducts], "no reconcile pass") {
		t.Errorf("%s: %q", event.CompleteProducts, rs[event.CompleteProducts])
	}
}

// TestReloadDuringAPassLeavesTheInterests: a reload during a pass, even
// one that keeps the union (an interest renamed), leaves the interests'
// ranges to the next pass: what the pass stored before it was routed with
// the old set (no copy on the new name's subjects). The product stream's
// range advances.
func TestReloadDuringAPassLeavesTheInterests(t *testing.T) {
	file := filepath.Join(t.TempDir(), "interests.yaml")
	write := func(name string) {
		t.Helper()
		if err := os.WriteFile(file, []byte("interests:\n  - name: "+name+"\n    filter: Collection/Name eq 'SENTINEL-1'\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a")
	log, _ := test.NewNullLogger()
	router, err := interest.NewRouter(file, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	srv := natstest.RunJetStream(t)
	js, closeNC := natstest.JetStream(t, srv.ClientURL())
	defer closeNC()
	topo := topology.New(js, topology.Options{Stream: "P", SubjectPrefix: "p", Duplicates: time.Minute})
	c := testConfig(t, t.TempDir())
	c.ReconcileInterval = time.Hour
	ranges, err := newCompleteRanges(Deps{Config: c, Interests: router, Topology: topo, Registry: prometheus.NewRegistry(), Log: log}, []event.Kind{event.Created})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	kv, err := topo.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	has := func(name string) bool {
		_, err := kv.Get(ctx, complete.Key(name, event.Created))
		return err == nil
	}
	now := time.Now()
	pass := func(reload func()) {
		t.Helper()
		filter := ranges.filterOf()
		if filter != "Collection/Name eq 'SENTINEL-1'" {
			t.Fatalf("the listing filter: %q", filter)
		}
		if reload != nil {
			reload()
		}
		now = now.Add(time.Minute)
		if err := ranges.listed(ctx, event.Created, filter, now.Add(-time.Hour), now); err != nil {
			t.Fatal(err)
		}
	}
	pass(nil)
	if !has("a") || !has(event.CompleteProducts) {
		t.Fatal("no range after a pass")
	}
	pass(func() {
		write("b")
		if changed, err := router.Reload(false); !changed || err != nil {
			t.Fatalf("reload: %v %v", changed, err)
		}
	})
	if has("b") {
		t.Error("b got a range from a pass that routed with a")
	}
	pass(nil)
	if !has("b") {
		t.Error("b has no range after a pass that listed it")
	}
}
