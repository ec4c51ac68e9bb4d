package chaos

import (
	"maps"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/natsproc"
)

// TestChaos runs the world under a seeded fault schedule and checks that
// every announced product event is on the stream exactly once, and that
// the fetchers stored every routed product once, verified, leaving
// nothing behind (fetcher_test.go).
//
//	CHAOS_DURATION  traffic time (default 40s, which with the fetchers'
//	                drain takes what 60s took without them; make chaos: 3m)
//	CHAOS_SEED      replay one seed (default: drawn, and printed)
//	CHAOS_RUNS      runs in a row, each with its own seed (default 1)
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: separate processes for a minute; not in -short")
	}
	d := env(t, "CHAOS_DURATION", 40*time.Second, time.ParseDuration)
	runs := env(t, "CHAOS_RUNS", 1, strconv.Atoi)
	seed := env(t, "CHAOS_SEED", time.Now().UnixNano()%1_000_000, func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) })
	rcv := bins.Build(t, "github.com/cdse-jetstream/receiver/cmd/receiver")
	fetcher := bins.Build(t, "github.com/cdse-jetstream/receiver/cmd/fetcher")
	nats := natsproc.Binary(t, natsproc.EmbeddedVersion(t))
	for i := range runs {
		s := seed + int64(i)
		t.Run("seed="+strconv.FormatInt(s, 10), func(t *testing.T) {
			t.Logf("seed %d (replay: CHAOS_SEED=%d)", s, s)
			rep := Run(t, Config{Seed: s, Duration: d, ReceiverBin: rcv, NATSBin: nats, FetcherBin: fetcher})
			t.Log("\n" + rep.String())
			for _, p := range rep.Problems {
				t.Error(p)
			}
			kinds := map[Kind]bool{}
			for _, f := range rep.FetchFaults {
				kinds[f.Kind] = true
			}
			if !kinds[KillFetcher] || !kinds[KillS3] || rep.Fetch.Fetched == 0 {
				t.Errorf("fetcher faults %v, %d fetched events: the run needs a fetcher replica killed, the S3 server killed and products fetched to prove anything", slices.Collect(maps.Keys(kinds)), rep.Fetch.Fetched)
			}
			if rep.Status[503] == 0 {
				t.Error("no request was answered 503: the faults did not make the stream unavailable, so the run proved less than it should")
			}
		})
	}
}

// env reads the setting k with parse, def when it is unset.
func env[T any](t *testing.T, k string, def T, parse func(string) (T, error)) T {
	v := os.Getenv(k)
	if v == "" {
		return def
	}
	x, err := parse(v)
	if err != nil {
		t.Fatalf("%s: %v", k, err)
	}
	return x
}
