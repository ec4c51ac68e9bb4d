package fetcher

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/fetcher/target"
	"github.com/cdse-jetstream/receiver/internal/fetcher/target/file"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// itemGate is a directory target whose STAC items wait for open before
// they are written: it holds a fetch between its download and its event.
// Meanwhile it counts what else asks about the product's archive.
type itemGate struct {
	target.Target
	archive string
	reached chan struct{} // closed when an item's write is held
	open    chan struct{}
	once    sync.Once
	asked   atomic.Int32 // Stat or Delete of the archive while held
}

var _ target.Target = (*itemGate)(nil)

func (g *itemGate) held() bool {
	select {
	case <-g.reached:
		select {
		case <-g.open:
			return false
		default:
			return true
		}
	default:
		return false
	}
}

func (g *itemGate) Open(ctx context.Context, key string, size int64, want target.Stored, opts ...target.OpenOption) (target.Upload, error) {
	if strings.HasSuffix(key, ".json") {
		g.once.Do(func() { close(g.reached) })
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Target.Open(ctx, key, size, want, opts...)
}

func (g *itemGate) Stat(ctx context.Context, key string) (target.Stored, bool, error) {
	if key == g.archive && g.held() {
		g.asked.Add(1)
	}
	return g.Target.Stat(ctx, key)
}

func (g *itemGate) Delete(ctx context.Context, key string) error {
	if key == g.archive && g.held() {
		g.asked.Add(1)
	}
	return g.Target.Delete(ctx, key)
}

// TestDeleteWaitsForTheFetchedEvent: a deleted event taken while the
// product's fetch has stored it but not yet written its item and
// published its event waits for them: the product, its item and its
// archive are removed after, and the fetched event comes before the
// deleted one. (Released after the download, the key let the removal run
// first: the item was then written for a product no longer there, and the
// fetched event named it after the deleted one.)
func TestDeleteWaitsForTheFetchedEvent(t *testing.T) {
	dir := t.TempDir()
	gate := &itemGate{reached: make(chan struct{}), open: make(chan struct{})}
	opened := false
	openGate := func() {
		if !opened {
			opened = true
			close(gate.open)
		}
	}
	t.Cleanup(openGate)
	Schemes["gated"] = Scheme{"gated:///dir", fileCheck, func(_ context.Context, u *url.URL, cfg fetchconfig.Config, _ func(string) string) (target.Target, error) {
		ft, err := file.New(u.Path, cfg.DiskReserve)
		gate.Target = ft
		return gate, err
	}}
	t.Cleanup(func() { delete(Schemes, "gated") })
	b := startBadDayWith(t, dir, cdsesim.Unthrottled, func(c *fetchconfig.Config) {
		c.Target, c.OnDelete = "gated://"+dir, "delete"
	}, func(ctx context.Context, js jetstream.JetStream, cfg fetchconfig.Config, _ *cdsesim.Sim) error {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: cfg.ProductStream.Stream, Subjects: []string{cfg.SubjectPrefix + ".>"}})
		return err
	})
	r := &removals{badDay: b, dir: dir, tg: gate.Target.(*file.Target)}
	p := r.s2Named("T32TPA")
	body := deletedBody(t, p, "", "")
	key, _ := r.keyOfBody(t, body)
	gate.archive = key
	b.publishProduct(t, p)
	select {
	case <-gate.reached:
	case <-time.After(20 * time.Second):
		t.Fatal("the product's item was never written")
	}
	seq := r.deleted(t, body)
	// The deleted event delivered, a removal that does not wait asks
	// about the archive at once: a second is ample for it to show.
	until(t, 10*time.Second, "the deleted event delivered", func() bool {
		c, err := b.js.Consumer(context.Background(), b.cfg.ProductStream.Stream, b.cfg.FetchConsumer)
		if err != nil {
			return false
		}
		info, err := c.Info(context.Background())
		return err == nil && info.Delivered.Stream >= seq
	})
	for end := time.Now().Add(time.Second); time.Now().Before(end) && gate.asked.Load() == 0; time.Sleep(10 * time.Millisecond) {
	}
	if n := gate.asked.Load(); n != 0 {
		t.Errorf("the removal looked at the archive %d times while its fetch was writing the item", n)
	}
	openGate()
	r.handled(t, seq)
	if r.there(t, key) || r.there(t, ItemKey(key)) {
		t.Errorf("left after the removal: archive %t, item %t", r.there(t, key), r.there(t, ItemKey(key)))
	}
	// The only product of the test: its fetched events, in order.
	var got []string
	for _, m := range natstest.StreamMessages(t, b.js, b.cfg.Stream) {
		got = append(got, m.Subject)
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], b.cfg.FetchedPrefix+".created.") || !strings.HasPrefix(got[1], b.cfg.FetchedPrefix+".deleted.") {
		t.Errorf("the fetcher's events %v, want created then deleted", got)
	}
}
