package binary_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// TestBinaryCompleteRanges (issue 32, "a complete range, per interest"):
// the receiver's reconciler, every minute with a minute's overlap, keeps a
// range per interest (and the product stream's, _products) of the created
// events. It is announced on cdse.complete.<interest>.created, kept in
// the state bucket and shown by /status and the gauges; it advances with
// each pass and is never ahead of what is stored: at each announcement,
// every product of the interest's filter with its PublicationDate in the
// range (some a second before it) is on the interest's subjects — a
// product the catalogue lists late, by less than the overlap, included.
// The range survives a restart; a reload that changes an interest's
// filter starts a new range for it, the other's goes on; a backfill of
// that interest, from before its new range, extends it back.
func TestBinaryCompleteRanges(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const overlap = time.Minute
	clock := cdsesim.NewClock(time.Now().Add(-2 * time.Hour))
	sim := cdsesim.New(cdsesim.Options{Users: map[string]cdsesim.User{"op@example.org": {Password: "account-password"}}, Now: clock.Now})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); sim.Close() })
	var products []*cdsesim.Product
	for range 60 {
		products = append(products, sim.Generate(cdsesim.Sentinel2, 3)...)
		products = append(products, sim.Generate(cdsesim.Sentinel1, 2)...)
		clock.Add(time.Minute)
	}
	// at creates a product of m published at when (listed from now on).
	at := func(m cdsesim.Mission, when time.Time) {
		products = append(products, sim.GenerateWith(m, 1, func(p *cdsesim.Product) {
			p.OriginDate, p.PublicationDate, p.ModificationDate = when, when, when
		})...)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "interests.yaml")
	const s1, s2 = "  - name: s1\n    filter: Collection/Name eq 'SENTINEL-1'\n", "  - name: s2\n    filter: Collection/Name eq 'SENTINEL-2'\n"
	writeFile(t, file, "interests:\n"+s1+s2)
	data := t.TempDir()
	env := []string{"RECONCILE_INTERVAL=1m", "RECONCILE_OVERLAP=1m", "RECONCILE_LOOKBACK=3h", "RECONCILE_EVENTS=created",
		"INTERESTS_FILE=" + file,
		"CDSE_USERNAME=op@example.org", "CDSE_PASSWORD=account-password",
		"CDSE_TOKEN_URL=" + srv.URL + cdsesim.TokenPath, "CDSE_CATALOGUE_URL=" + srv.URL + "/odata/v1"}
	p := startReceiver(t, data, env...)

	// announcements are the complete messages as they come; the test reads
	// them in its own goroutine.
	announcements := make(chan event.Complete, 64)
	var (
		js      jetstream.JetStream
		closeNC func()
	)
	connect := func() {
		js, closeNC = natstest.JetStream(t, p.natsURL)
		sub, err := js.Conn().Subscribe(event.CompletePrefix+".>", func(m *nats.Msg) {
			c, err := event.DecodeCompleteData(m.Data, m.Header)
			if err != nil || m.Subject != event.CompleteSubject(c.Interest, c.Event) {
				t.Errorf("complete message on %s: %v %+v", m.Subject, err, c)
				return
			}
			if h := m.Header.Get(event.HeaderCompleteUntil); h != c.Until.Format(time.RFC3339Nano) {
				t.Errorf("%s: header until %s, body %s", m.Subject, h, c.Until)
			}
			announcements <- *c
		})
		if err != nil {
			t.Fatal(err)
		}
		_ = sub
	}
	connect()
	defer func() { closeNC() }()

	// stored are the ids on the subjects of a range: an interest's copies,
	// or the product messages (_products), of created events.
	stored := func() map[string]map[string]bool {
		out := map[string]map[string]bool{}
		for _, m := range natstest.StreamMessages(t, js, "CDSE_PRODUCTS") {
			name := ""
			switch tok := strings.Split(m.Subject, "."); {
			case strings.HasPrefix(m.Subject, "cdse.product.created."):
				name = event.CompleteProducts
			case strings.HasPrefix(m.Subject, "cdse.interest.") && tok[3] == "created":
				name = tok[2]
			default:
				continue
			}
			if out[name] == nil {
				out[name] = map[string]bool{}
			}
			out[name][m.Header.Get(event.HeaderProductID)] = true
		}
		return out
	}
	collection := map[string]string{"s1": "SENTINEL-1", "s2": "SENTINEL-2", event.CompleteProducts: ""}
	// holds checks that a range is not ahead of the stream: every product
	// of its filter with its date in it is stored.
	holds := func(c event.Complete, have map[string]map[string]bool) {
		t.Helper()
		want, n := collection[c.Interest], 0
		for _, pr := range products {
			if (want == "" || pr.Collection == want) && c.Covers(pr.PublicationDate) {
				n++
				if !have[c.Interest][pr.ID] {
					t.Errorf("%s %s announced complete until %s, but %s published %s is not on its subjects", c.Interest, c.Event, c.Until, pr.ID, pr.PublicationDate.Format(time.RFC3339Nano))
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no product in [%s, %s]: the check proves nothing", c.Interest, c.From, c.Until)
		}
	}
	// next waits for the announcements of one pass (the three ranges),
	// checking each against the stream as soon as it comes.
	next := func(what string) map[string]event.Complete {
		t.Helper()
		got := map[string]event.Complete{}
		timeout := time.After(150 * time.Second)
		for len(got) < 3 {
			select {
			case c := <-announcements:
				holds(c, stored())
				got[c.Interest] = c
			case <-timeout:
				t.Fatalf("%s: announcements %v; logs:\n%s", what, got, tail(p.logs.String()))
			}
		}
		return got
	}
	// The first pass may have been announced before the subscription:
	// read the stream's last message of each subject.
	last := func() map[string]event.Complete {
		t.Helper()
		out := map[string]event.Complete{}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for name := range collection {
			for {
				st, err := js.Stream(ctx, event.CompleteStream)
				var m *jetstream.RawStreamMsg
				if err == nil {
					m, err = st.GetLastMsgForSubject(ctx, event.CompleteSubject(name, event.Created))
				}
				if err == nil {
					c, err := event.DecodeCompleteData(m.Data, m.Header)
					if err != nil {
						t.Fatal(err)
					}
					out[name] = *c
					break
				}
				select {
				case <-ctx.Done():
					t.Fatalf("no complete range of %s: %v; logs:\n%s", name, err, tail(p.logs.String()))
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
		return out
	}
	first := last()
	have := stored()
	for name, c := range first {
		holds(c, have)
		if lag := time.Since(c.Until); lag < overlap || lag > overlap+time.Minute {
			t.Errorf("%s: until %s is %s behind now; want about the overlap (%s)", name, c.Until, lag, overlap)
		}
	}
	for len(announcements) > 0 {
		<-announcements // the first pass's, if the subscription saw them
	}

	// Before the second pass: products published a second before now -
	// the overlap (inside its range), and one the catalogue lists late,
	// by less than the overlap: published between the first range's
	// until and that pass's listing. The first range does not claim it;
	// the second, which lists its date again, does.
	at(cdsesim.Sentinel2, time.Now().Add(-overlap-time.Second))
	at(cdsesim.Sentinel1, time.Now().Add(-overlap-time.Second))
	at(cdsesim.Sentinel2, first["s2"].Until.Add(20*time.Second))
	holds(first["s2"], stored())
	second := next("the second pass")
	for name, c := range second {
		if !c.From.Equal(first[name].From) || !c.Until.After(first[name].Until) {
			t.Errorf("%s: the second pass made [%s, %s] of [%s, %s]", name, c.From, c.Until, first[name].From, first[name].Until)
		}
	}

	// The gauge, the state bucket's key, /status.
	metrics := scrapeMetrics(t, "http://"+p.admin+"/metrics")
	if !strings.Contains(metrics, `cdse_receiver_complete_until_seconds{event="created",interest="s2"}`) {
		t.Errorf("no until gauge of s2:\n%s", metrics)
	}
	kv, err := js.KeyValue(context.Background(), "CDSE_PRODUCTS_STATE")
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(context.Background(), "complete.s2.created")
	if err != nil || !strings.Contains(string(e.Value()), second["s2"].Until.Format(time.RFC3339Nano)) {
		t.Errorf("the state bucket's key of s2: %v %s; want until %s", err, e.Value(), second["s2"].Until.Format(time.RFC3339Nano))
	}
	checkStatus := func(want map[string]event.Complete) {
		t.Helper()
		st := getStatus(t, p)
		if st.Complete == nil || len(st.Complete.Ranges) != 3 {
			t.Fatalf("/status complete: %+v", st.Complete)
		}
		for _, r := range st.Complete.Ranges {
			if w := want[r.Interest]; !r.From.Equal(w.From) || r.Until.Before(w.Until) || r.Event != "created" {
				t.Errorf("/status: %+v, want from %s until at least %s", r, w.From, w.Until)
			}
		}
	}
	checkStatus(second)

	// A restart: the ranges are where they were, and go on.
	p.stop(t)
	closeNC()
	p = startReceiver(t, data, env...)
	connect()
	checkStatus(second)
	third := next("the pass after a restart")
	for name, c := range third {
		if !c.From.Equal(first[name].From) || c.Until.Before(second[name].Until) {
			t.Errorf("%s after the restart: [%s, %s], before it [%s, %s]", name, c.From, c.Until, second[name].From, second[name].Until)
		}
	}

	// A reload that changes s1's filter: s1's range starts anew (and the
	// product stream's, whose filter is the union); s2's goes on.
	writeFile(t, file, "interests:\n  - name: s1\n    filter: Collection/Name eq 'SENTINEL-1' or Collection/Name eq 'SENTINEL-3'\n"+s2)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	fourth := next("the pass after a reload")
	if c := fourth["s1"]; !c.From.After(first["s1"].From.Add(time.Hour)) {
		t.Errorf("s1 after its filter changed: [%s, %s]; it kept [%s, ...]", c.From, c.Until, third["s1"].From)
	}
	if c := fourth["s2"]; !c.From.Equal(first["s2"].From) {
		t.Errorf("s2 after s1's filter changed: [%s, %s], from %s before", c.From, c.Until, first["s2"].From)
	}

	// `receiver backfill --interest s1` from before its new range, with
	// its own filter, extends the range back to --since.
	since := fourth["s1"].From.Add(-3 * time.Hour).Truncate(time.Second).UTC()
	out, errOut, code := command(t, append([]string{"RECEIVER_DATA_DIR=" + data}, env...),
		"backfill", "--interest", "s1", "--since", since.Format(time.RFC3339), "--rate", "100", "-o", "json")
	if code != 0 || !strings.Contains(errOut, "complete range extended back") {
		t.Fatalf("backfill --interest s1: exit %d\nstdout %s\nstderr %s", code, out, tail(errOut))
	}
	extended := last()
	if c := extended["s1"]; !c.From.Equal(since) || !c.Until.Equal(fourth["s1"].Until) {
		t.Errorf("s1 after its backfill: [%s, %s], want [%s, %s]", c.From, c.Until, since, fourth["s1"].Until)
	}
	holds(extended["s1"], stored())
	if c := extended["s2"]; !c.From.Equal(first["s2"].From) {
		t.Errorf("s2 after s1's backfill: from %s, want %s", c.From, first["s2"].From)
	}
}

// scrapeMetrics reads a Prometheus text page.
func scrapeMetrics(t *testing.T, url string) string {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
