package fetcher

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/cdse-jetstream/receiver/internal/fetcher/fetch"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchstatus"
	"github.com/cdse-jetstream/receiver/internal/platform/buildinfo"
)

// lastStoredKept is how many stored products /status lists.
const lastStoredKept = 10

// tracked is the engine as /status sees it: every Fetch goes through it,
// so the downloads under way, the products stored and the failures are
// known where they happen, without a word in the consume loop.
type tracked struct {
	Engine
	mu       sync.Mutex
	next     int
	running  map[int]fetch.Progress
	stored   []fetchstatus.Stored // newest first
	failures map[string]int64
}

func newTracked(e Engine) *tracked {
	return &tracked{Engine: e, running: map[int]fetch.Progress{}, failures: map[string]int64{}}
}

// Fetch is the engine's, recorded.
func (t *tracked) Fetch(ctx context.Context, p fetch.Product, key string, progress func(fetch.Progress)) (fetch.Result, error) {
	t.mu.Lock()
	id := t.next
	t.next++
	t.running[id] = fetch.Progress{ProductID: p.ID, Name: p.Name, Key: key, Total: p.ContentLength, Started: time.Now(), Waiting: "starting"}
	t.mu.Unlock()
	res, err := t.Engine.Fetch(ctx, p, key, func(pr fetch.Progress) {
		t.mu.Lock()
		t.running[id] = pr
		t.mu.Unlock()
		if progress != nil {
			progress(pr)
		}
	})
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.running, id)
	if err != nil {
		t.failures[fetch.Outcome(res, err)]++
		return res, err
	}
	s := fetchstatus.Stored{ProductID: p.ID, Name: p.Name, URL: res.URL, Size: res.Size, Verified: len(res.Verified) > 0,
		At: time.Now().UTC(), Took: res.Took.Round(time.Millisecond).String(), AlreadyThere: res.AlreadyThere}
	t.stored = append([]fetchstatus.Stored{s}, t.stored[:min(len(t.stored), lastStoredKept-1)]...)
	return res, err
}

// view is the downloads under way (oldest first), the last stored and
// the failures.
func (t *tracked) view() ([]fetchstatus.Download, []fetchstatus.Stored, map[string]int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	downloads := []fetchstatus.Download{}
	for _, p := range t.running {
		d := fetchstatus.Download{ProductID: p.ProductID, Name: p.Name, Key: p.Key, Bytes: p.Held, Size: p.Total,
			ResumedAt: p.From, Rate: p.Rate, Started: p.Started.UTC(), Waiting: p.Waiting}
		if p.ETA > 0 {
			d.ETA = p.ETA.String()
		}
		downloads = append(downloads, d)
	}
	slices.SortFunc(downloads, func(a, b fetchstatus.Download) int { return a.Started.Compare(b.Started) })
	return downloads, slices.Clone(t.stored), maps.Clone(t.failures)
}

// statusTimeout bounds what /status asks NATS: it answers with what it
// has rather than hang on a server out of reach.
const statusTimeout = 2 * time.Second

// Status is what the fetcher says about itself on /status.
func (a *App) Status(ctx context.Context) fetchstatus.Fetcher {
	st := fetchstatus.Fetcher{Version: buildinfo.Get().Version, NotReady: a.health.report(), LastStored: []fetchstatus.Stored{}}
	st.Ready = len(st.NotReady) == 0
	st.Downloads, st.LastStored, st.Failures = a.track.view()
	if st.LastStored == nil {
		st.LastStored = []fetchstatus.Stored{}
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	if a.js == nil {
		st.ConsumerError = "not connected to NATS yet"
		return st
	}
	c, err := a.js.Consumer(ctx, a.cfg.ProductStream.Stream, a.cfg.FetchConsumer)
	if err == nil {
		info := c.CachedInfo()
		st.Consumer = &fetchstatus.FetchConsumer{Stream: a.cfg.ProductStream.Stream, Name: a.cfg.FetchConsumer, Waiting: info.NumPending, InFlight: info.NumAckPending}
	} else {
		st.ConsumerError = err.Error()
	}
	return st
}

func (a *App) serveStatus(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(a.Status(r.Context()))
}
