package backfill_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/cdse/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdselogin"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/ingest/backfill"
	"github.com/cdse-jetstream/receiver/internal/ingest/interest"
	"github.com/cdse-jetstream/receiver/internal/stream/supersede"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/interesttest"
	"github.com/cdse-jetstream/receiver/internal/testkit/publishtest"
	"github.com/cdse-jetstream/receiver/internal/testkit/versionstest"
)

// TestBackfillLatestInterest: the backfill of an interest that takes the
// latest versions only applies the versions consumer's rule to each
// product it takes, as the versions bucket stands: no copy of a product
// superseded when the consumer decided it, nor of one older than a version
// the bucket knows though the bucket has never seen it (listed by the
// interest's backfill only), and says how many it skipped. Two real
// versions of one Sentinel-2 acquisition
// (internal/cdse/versions/testdata/names.json) and a product of another;
// a plain backfill (which makes no copy for that interest: the versions
// consumer would) stores those of the products listed up to stored, the
// versions consumer takes them in, then the interest's backfill lists
// them all.
func TestBackfillLatestInterest(t *testing.T) {
	const (
		older = "S2A_MSIL1C_20150704T101006_N0204_R022_T32TPS_20150704T101337.SAFE"
		newer = "S2A_MSIL1C_20150704T101006_N0500_R022_T32TPS_20231011T134419.SAFE"
	)
	tests := []struct {
		name string
		// order is the products' order in the catalogue's listing;
		// stored, how many of them the plain backfill stores.
		order  []string
		stored int
		want   []string // the products copied
	}{
		{"both known, older first", []string{older, "other", newer}, 3, []string{"other", newer}},
		{"the newer known, the older listed after it", []string{newer, "other", older}, 2, []string{newer, "other"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := cdsesim.NewClock(time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC))
			sim := cdsesim.New(cdsesim.Options{Users: map[string]cdsesim.User{"u": {Password: "pw"}}, Now: clock.Now})
			srv := httptest.NewServer(sim.Handler())
			t.Cleanup(func() { srv.Close(); sim.Close() })
			api := catalogclient.New(srv.URL+"/odata/v1", cdselogin.NewPasswordSource(cdselogin.PasswordConfig{TokenURL: srv.URL + cdsesim.TokenPath, Username: "u", Password: "pw"}), nil)
			ids := map[string]string{}
			var storedUntil time.Time
			for i, name := range tt.order {
				var p *cdsesim.Product
				if name == "other" {
					p = sim.Generate(cdsesim.Sentinel2, 1)[0]
				} else {
					p = sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) { p.Name = name })[0]
				}
				ids[name] = p.ID
				clock.Add(time.Minute)
				if i == tt.stored-1 {
					storedUntil = clock.Now()
				}
			}

			env := publishtest.New(t, nil)
			opts := publishtest.Topology
			opts.InterestPrefix, opts.SupersededPrefix = "cdse.interest", "cdse.superseded"
			st := topology.New(env.JS, opts)
			ctx := context.Background()
			if _, err := st.EnsureProduct(ctx); err != nil {
				t.Fatal(err)
			}
			router := routerOf(t, "interests:\n  - name: newest\n    versions: latest\n    filter: Collection/Name eq 'SENTINEL-2'\n")
			route := ingest.Route{Prefix: "cdse.product", Interests: router, InterestPrefix: "cdse.interest"}
			since := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
			run := runner(t, api, env, st)
			in := &router.Current().Interests[0]
			if sent, _ := run(backfill.Options{Filter: in.Filter.String(), Since: since, Until: storedUntil, Events: in.Events, Route: route}); len(sent) != tt.stored {
				t.Fatalf("the plain backfill sent %v, want the %d product messages alone", sent, tt.stored)
			}

			// The versions consumer decides.
			versionstest.Run(t, st, supersede.Options{})
			versionstest.Decided(t, st, uint64(tt.stored))
			kv, err := env.JS.KeyValue(ctx, st.VersionsBucket())
			if err != nil {
				t.Fatal(err)
			}

			sent, sum := run(backfill.Options{Filter: in.Filter.String(), Since: since, Events: in.Events, Route: route, Interest: in, Versions: kv})
			var want []string
			for _, name := range tt.want {
				want = append(want, "interest/newest/created:"+ids[name])
			}
			var got []string
			for _, s := range sent {
				_, id, _ := strings.Cut(s, " ")
				got = append(got, id)
			}
			if !slices.Equal(got, want) || sum.Events[0].Superseded != 1 || sum.Events[0].Published != 2 {
				t.Errorf("the interest's backfill sent %v, want %v (%v); %+v", got, want, tt.want, sum)
			}
		})
	}
}

// routerOf is the Router of an interests file holding content.
func routerOf(t *testing.T, content string) *interest.Router {
	t.Helper()
	r, _ := interesttest.Router(t, content)
	return r
}

// runner runs backfills listing api into env's stream through st, each
// returning what it sent ("subject Nats-Msg-Id", copies included) and its
// summary.
func runner(t *testing.T, api catalogclient.Lists, env *publishtest.Env, st *topology.Topology) func(backfill.Options) ([]string, backfill.Summary) {
	log, _ := test.NewNullLogger()
	return func(o backfill.Options) ([]string, backfill.Summary) {
		t.Helper()
		rec := &recorder{BatchPublisher: env.Publisher}
		sum, err := backfill.New(o, catalogclient.NewLister(api, 10, 1000), rec, env.Quarantine, st, log).Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return rec.sent, sum
	}
}
