package chaos

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/zeebo/blake3"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/fetcher"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/testkit/natsproc"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/s3test"
	"github.com/cdse-jetstream/receiver/internal/testkit/scrape"
)

// The fetcher's side of a run: two replicas of cmd/fetcher sharing one
// consumer, fetching the SENTINEL-2 products (a quarter of the traffic:
// enough downloads at once for the cap to matter, few enough for two
// loaded cores) into a versitygw process or, every third seed, a
// directory.
const (
	fetchCollection  = "SENTINEL-2"
	fetchAckWait     = 10 * time.Second
	fetchConcurrency = 4
	fetchedStream    = "CDSE_FETCHED"
	fetchPrefix      = "products" // the bucket's prefix
	// fetchRate is each download's rate: a small product takes a fraction
	// of a second and a large one (several S3 parts) two, so that kills
	// and cuts land in the middle of downloads.
	fetchRate = 4 << 20
	// frozenGrace is how long after SIGCONT a frozen replica's open
	// download may last: its heartbeat runs at once and cuts it
	// (fetcher: errLapsed); the simulator sees the connection close a
	// moment later.
	frozenGrace = 2 * time.Second
	// doneSlack is how much later than the client's last read the
	// simulator may note a download's end on a loaded machine.
	doneSlack = 250 * time.Millisecond
)

// fetchUser is replica i's catalogue account: one each, so that the
// simulator's log tells whose download a request was (the frozen
// replica's connections are judged by their own rule).
func fetchUser(i int) string { return fmt.Sprintf("fetcher%d@example.org", i+1) }

// fetchSide is the fetchers, their target and what the run did to them.
type fetchSide struct {
	target   string // FETCH_TARGET
	dir      string // the directory target, "" for S3
	store    *s3test.Server
	replicas []*fetcherReplica
	rng      *rand.Rand // product sizes and faults (the traffic goroutine's)

	mu       sync.Mutex
	products map[string]*fetchProduct
	frozen   []frozen
	s3Down   bool
}

type fetcherReplica struct {
	natsproc.Process
	adminPort int
	proxies   []*tcpProxy
}

// fetchProduct is one routed product and what the simulator does to its
// downloads.
type fetchProduct struct {
	p           *cdsesim.Product
	unfetchable string // the failed event's reason must hold it; "" fetchable
	faults      []string
	deleted     bool
}

// frozen is one SIGSTOP of a replica.
type frozen struct {
	user          string
	from, resumed time.Time
}

// newFetchSide makes the target and the replicas' processes (started by
// start).
func (w *world) newFetchSide(c Config, simURL string) *fetchSide {
	t := w.t
	fs := &fetchSide{products: map[string]*fetchProduct{}, rng: rand.New(rand.NewPCG(uint64(c.Seed), 29))}
	env := map[string]string{}
	if c.Seed%3 == 0 {
		fs.dir = filepath.Join(w.dir, "products")
		if err := os.MkdirAll(fs.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		fs.target = "file://" + fs.dir
		env["FETCH_DISK_RESERVE"] = "16MiB"
	} else {
		fs.store = s3test.Start(t)
		fs.target = "s3://" + fs.store.Bucket + "/" + fetchPrefix
		env = fs.store.Env()
	}
	ports := natstest.FreePorts(t, 2)
	for i := range 2 {
		name := "f" + strconv.Itoa(i+1)
		r := &fetcherReplica{Process: natsproc.Process{Name: name, Path: c.FetcherBin, Log: filepath.Join(w.dir, name+".log")}, adminPort: ports[i]}
		var urls string
		r.proxies, urls = w.natsProxies()
		r.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.dir,
			"NATS_URL=" + urls,
			"FETCH_ADMIN_ADDR=127.0.0.1:" + strconv.Itoa(r.adminPort),
			"FETCH_START=all",
			"FETCH_SUBJECTS=cdse.product.created." + fetchCollection + ".>,cdse.product.modified." + fetchCollection + ".>",
			"FETCH_TARGET=" + fs.target,
			"FETCH_CONCURRENCY=" + strconv.Itoa(fetchConcurrency),
			"FETCH_ACK_WAIT=" + fetchAckWait.String(),
			"FETCH_SHUTDOWN_TIMEOUT=3s",
			"CDSE_USERNAME=" + fetchUser(i), "CDSE_PASSWORD=" + simPass,
			"CDSE_TOKEN_URL=" + simURL + cdsesim.TokenPath,
			"CDSE_CATALOGUE_URL=" + simURL + "/odata/v1",
			"CDSE_DOWNLOAD_URL=" + simURL + "/odata/v1",
			"FETCH_TRUSTED_HOSTS=127.0.0.1",
			"LOG_FORMAT=json",
		}
		for k, v := range env {
			r.Env = append(r.Env, k+"="+v)
		}
		fs.replicas = append(fs.replicas, r)
	}
	return fs
}

func (fs *fetchSide) start(t interface{ Fatal(...any) }) {
	for _, r := range fs.replicas {
		if err := r.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range fs.replicas {
		if err := r.waitReady(60 * time.Second); err != nil {
			t.Fatal(fmt.Errorf("%w\n%s", err, r.LogTail(30)))
		}
	}
}

func (r *fetcherReplica) waitReady(d time.Duration) error {
	if err := scrape.Status("http://127.0.0.1:"+strconv.Itoa(r.adminPort)+"/readyz", http.StatusOK, d); err != nil {
		return fmt.Errorf("%s: %w", r.Name, err)
	}
	return nil
}

// adjust sizes a new routed product and draws what the download service
// does to it, before it is announced: most download at once, some meet
// one fault the fetcher must get past, a few can never be fetched (the
// failed event must say why).
func (fs *fetchSide) adjust(sim *cdsesim.Sim) func(*cdsesim.Product) {
	return func(p *cdsesim.Product) {
		r := fs.rng
		p.ContentLength = 256<<10 + r.Int64N(768<<10)
		if r.IntN(8) == 0 {
			p.ContentLength = 6<<20 + r.Int64N(2<<20) // two S3 parts
		}
		size := p.ContentLength
		fp := &fetchProduct{p: p}
		add := func(f cdsesim.Fault, what string) {
			f.Product = p.ID
			if err := sim.AddFault(f); err != nil {
				panic(err) // a fault of this file's own making
			}
			fp.faults = append(fp.faults, what)
		}
		switch x := r.Float64(); {
		case x < 0.03:
			p.Offline = true
			fp.unfetchable, fp.faults = "online", []string{"offline"}
		case x < 0.06:
			add(cdsesim.Fault{Kind: cdsesim.FaultCorrupt, Offset: size / 2}, "corrupt byte, always")
			fp.unfetchable = "checksum"
		case x < 0.12:
			add(cdsesim.Fault{Kind: cdsesim.FaultStatus, Status: 429, RetryAfter: 1, Count: 1}, "429 Retry-After 1")
		case x < 0.17:
			// Over a quarter of the ack wait: given back with NakWithDelay.
			add(cdsesim.Fault{Kind: cdsesim.FaultStatus, Status: 429, RetryAfter: 4, Count: 1}, "429 Retry-After 4")
		case x < 0.23:
			add(cdsesim.Fault{Kind: cdsesim.FaultStatus, Status: 503, Count: 2}, "503 twice")
		case x < 0.29:
			add(cdsesim.Fault{Kind: cdsesim.FaultCut, After: size / 2, Count: 1}, "cut mid-body")
		case x < 0.34:
			add(cdsesim.Fault{Kind: cdsesim.FaultCorrupt, Offset: size / 3, Count: 1}, "corrupt byte, once")
		case x < 0.40:
			add(cdsesim.Fault{Kind: cdsesim.FaultTokenExpiry, After: size / 2, Count: 1}, "token expires mid-body")
		}
		fs.mu.Lock()
		fs.products[p.ID] = fp
		fs.mu.Unlock()
	}
}

func (fs *fetchSide) deleted(id string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fp := fs.products[id]; fp != nil {
		fp.deleted = true
	}
}

// injectFetch runs the fetcher's schedule, noting how long each
// restarted replica took to be ready.
func (w *world) injectFetch(start time.Time, faults []Fault) {
	fs := w.fetch
	for i, f := range faults {
		time.Sleep(time.Until(start.Add(f.At)))
		w.t.Logf("fault %s", f)
		end := time.Now().Add(f.For)
		r := fs.replicas[f.Receiver]
		switch f.Kind {
		case KillFetcher:
			r.Kill()
			time.Sleep(time.Until(end))
			if err := r.Start(); err != nil {
				w.t.Error(err)
			}
			// A minute: a replica that starts while the cluster has no
			// quorum retries its declarations with a backoff of up to
			// 30 s (fetcher setUp).
			started := time.Now()
			if err := r.waitReady(time.Minute); err != nil {
				w.t.Error(err)
			}
			faults[i].Ready = time.Since(started)
		case KillS3:
			fs.mu.Lock()
			fs.s3Down = true
			fs.mu.Unlock()
			if fs.store != nil {
				fs.store.Kill()
			}
			time.Sleep(time.Until(end))
			fs.restartS3(w.t)
		case CutFetcherNATS:
			for _, p := range r.proxies {
				p.setCut(true)
			}
			time.Sleep(time.Until(end))
			for _, p := range r.proxies {
				p.setCut(false)
			}
		case PauseFetcher:
			from := time.Now()
			if err := r.Stop(); err != nil {
				w.t.Error(err)
			}
			time.Sleep(time.Until(end))
			if err := r.Continue(); err != nil {
				w.t.Error(err)
			}
			fs.mu.Lock()
			fs.frozen = append(fs.frozen, frozen{user: fetchUser(f.Receiver), from: from, resumed: time.Now()})
			fs.mu.Unlock()
		}
	}
}

// restartS3 starts the store again on its port and data, when it is down.
func (fs *fetchSide) restartS3(t interface{ Error(...any) }) {
	fs.mu.Lock()
	down := fs.s3Down
	fs.s3Down = false
	fs.mu.Unlock()
	if down && fs.store != nil {
		if err := fs.store.StartAgain(); err != nil {
			t.Error(err)
		}
	}
}

// heal makes sure every fetcher runs and reaches NATS, and the store runs.
func (fs *fetchSide) heal(t interface{ Error(...any) }) {
	fs.restartS3(t)
	for _, r := range fs.replicas {
		for _, p := range r.proxies {
			p.setCut(false)
		}
		if r.Running() {
			r.Continue()
			continue
		}
		if err := r.Start(); err != nil {
			t.Error(err)
		}
	}
}

// FetchReport is what the fetcher side did and found.
type FetchReport struct {
	Target          string
	Routed          int            // product events on the fetcher's subjects
	Fetched, Failed int            // events on its stream
	Reasons         map[string]int // failed events by reason, shortened
	Objects         int
	Uploads, Parts  int // multipart uploads and partial files left before the sweep
	Swept           int
	Downloads       int // bodies begun by the download service
	Faulted         int // requests the download service faulted on purpose
	Peak            int // most downloads at once, from the simulator's log
	UserPeaks       []int
	Excused         int // download records of a frozen replica open across its SIGSTOP
	Settle          time.Duration
	Last            string // the product whose outcome came last, and why it was late
}

func (r FetchReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fetcher (2 replicas, FETCH_CONCURRENCY=%d, FETCH_ACK_WAIT=%s) into %s:\n", fetchConcurrency, fetchAckWait, r.Target)
	fmt.Fprintf(&b, "  %d product events routed: %d fetched events, %d failed (%s); %d objects stored; settled %.1fs after the traffic\n",
		r.Routed, r.Fetched, r.Failed, counts(r.Reasons), r.Objects, r.Settle.Seconds())
	fmt.Fprintf(&b, "  the last outcome: %s\n", r.Last)
	fmt.Fprintf(&b, "  downloads: %d bodies begun, %d requests faulted on purpose; peak %d at once (simulator's per-account peaks %v); %d records excused as open across a SIGSTOP\n",
		r.Downloads, r.Faulted, r.Peak, r.UserPeaks, r.Excused)
	fmt.Fprintf(&b, "  left before the sweep: %d multipart uploads, %d partial files; the sweep removed %d\n", r.Uploads, r.Parts, r.Swept)
	return b.String()
}

// settleFetch waits until every routed product event has its outcome on
// the fetcher's stream (or d passed), then a little longer for anything
// more, and returns that stream's messages.
func (w *world) settleFetch(js jetstream.JetStream, routed map[[2]string]int, d time.Duration) []natstest.Msg {
	done := func(msgs []natstest.Msg) bool {
		fetched, failed := map[[2]string]int{}, map[[2]string]int{}
		for _, m := range msgs {
			k := [2]string{m.Header.Get("Cdse-Product-Id"), m.Header.Get("Cdse-Event")}
			if strings.HasPrefix(m.Subject, "cdse.fetched.") {
				fetched[k]++
			} else {
				failed[k]++
			}
		}
		for k, n := range routed {
			if fetched[k] == 0 && failed[k] < n {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(d)
	for {
		msgs := natstest.StreamMessages(w.t, js, fetchedStream)
		if done(msgs) || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	return w.stableOn(js, fetchedStream, 3*time.Second)
}

// stableOn is stable for another stream: its messages once d passed
// without a new one.
func (w *world) stableOn(js jetstream.JetStream, name string, d time.Duration) []natstest.Msg {
	n := streamMsgs(js, name)
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && streamMsgs(js, name) == n {
		time.Sleep(200 * time.Millisecond)
	}
	return natstest.StreamMessages(w.t, js, name)
}

// checkFetch holds the fetchers' work to the promise: per routed product
// event one fetched event (or, for a product that cannot be fetched, one
// failed event with the reason), one object per product with the
// simulator's bytes, nothing partial left once swept, the cap kept and no
// product downloaded twice at once.
func (w *world) checkFetch(start time.Time, productMsgs, fetchedMsgs []natstest.Msg, rep *Report) {
	fs := w.fetch
	fr := &rep.Fetch
	fr.Target, fr.Reasons = fs.target, map[string]int{}
	problem := func(id, format string, a ...any) {
		msg := fmt.Sprintf(format, a...)
		if id != "" {
			msg += "\n" + w.timeline(start, id, rep)
		}
		rep.Problems = append(rep.Problems, msg)
	}

	routed := map[[2]string]int{}
	for _, m := range productMsgs {
		if isRouted(m.Subject) {
			routed[[2]string{m.Header.Get("Cdse-Product-Id"), m.Header.Get("Cdse-Event")}]++
			fr.Routed++
		}
	}
	fetched, failed := map[[2]string][]natstest.Msg{}, map[[2]string][]natstest.Msg{}
	for _, m := range fetchedMsgs {
		k := [2]string{m.Header.Get("Cdse-Product-Id"), m.Header.Get("Cdse-Event")}
		if strings.HasPrefix(m.Subject, "cdse.fetched.") {
			fetched[k] = append(fetched[k], m)
			fr.Fetched++
		} else {
			failed[k] = append(failed[k], m)
			fr.Failed++
			fr.Reasons[shortReason(m.Header.Get("Cdse-Fetch-Error"))]++
		}
	}
	fs.mu.Lock()
	products := fs.products
	if n := len(fetchedMsgs); n > 0 {
		m := fetchedMsgs[n-1]
		id := m.Header.Get("Cdse-Product-Id")
		fr.Last = fmt.Sprintf("%s %s on %s", id, m.Header.Get("Cdse-Event"), m.Subject)
		if fp := products[id]; fp != nil {
			fr.Last += fmt.Sprintf(" (%d bytes, download faults %v, deleted %v)", fp.p.ContentLength, fp.faults, fp.deleted)
		}
	}
	fs.mu.Unlock()
	if n := len(fetchedMsgs); n > 0 {
		w.t.Logf("the last outcome's product:\n%s", w.timeline(start, fetchedMsgs[n-1].Header.Get("Cdse-Product-Id"), rep))
	}

	// Events.
	keyOf := map[string]string{} // product id → its object's URL
	for k, n := range routed {
		id := k[0]
		fp := products[id]
		if fp == nil {
			problem("", "routed product %s was not generated by the traffic", id)
			continue
		}
		fe, fa := fetched[k], failed[k]
		switch {
		case fp.unfetchable != "":
			if len(fe) != 0 {
				problem(id, "%s %s: fetched, but the simulator never serves it whole (%s)", id, k[1], fp.faults)
			}
			if len(fa) != n {
				problem(id, "%s %s: %d failed events for %d product events", id, k[1], len(fa), n)
			}
			for _, m := range fa {
				if r := m.Header.Get("Cdse-Fetch-Error"); !strings.Contains(strings.ToLower(r), fp.unfetchable) && !fp.deleted {
					problem(id, "%s %s: failed with %q, want a reason about %q", id, k[1], r, fp.unfetchable)
				}
			}
		case len(fe) == n && len(fa) == 0 && distinctIDs(fe):
			// One outcome for each product event (two modified events
			// of the same bytes are two events, each answered).
		case len(fe) == 0 && len(fa) == n && fp.deleted:
			// Deleted in the catalogue before its download.
			for _, m := range fa {
				if r := m.Header.Get("Cdse-Fetch-Error"); !strings.Contains(r, "not found") {
					problem(id, "%s %s: deleted, failed with %q, want not found", id, k[1], r)
				}
			}
		default:
			problem(id, "%s %s: %d fetched and %d failed events (%v), want one fetched event (distinct ids) for each of its %d product events", id, k[1], len(fe), len(fa), reasons(fa), n)
		}
		for _, m := range fe {
			url := m.Header.Get("Cdse-Object-Url")
			if prev, ok := keyOf[id]; ok && prev != url {
				problem(id, "%s: fetched into two objects, %s and %s", id, prev, url)
			}
			keyOf[id] = url
			md5sum, b3 := fp.p.Checksums()
			if m.Header.Get("Cdse-Checksum-MD5") != md5sum || m.Header.Get("Cdse-Checksum-BLAKE3") != b3 {
				problem(id, "%s %s: the fetched event's checksums are not the simulator's", id, k[1])
			}
		}
	}

	// Objects: exactly the fetched products', with their bytes.
	objects, err := fs.objects()
	if err != nil {
		problem("", "listing the target: %v", err)
	}
	fr.Objects = len(objects)
	byURL := map[string]string{}
	for id, url := range keyOf {
		byURL[url] = id
	}
	for url := range objects {
		if product, ok := strings.CutSuffix(url, ".json"); ok {
			// A STAC item, beside its product: the fetched event
			// names both.
			if _, ok := byURL[product]; !ok {
				problem("", "STAC item %s stored without its product's fetched event", url)
			}
			continue
		}
		if _, ok := byURL[url]; !ok {
			problem("", "object %s stored without a fetched event", url)
		}
		if !objects[url+".json"] {
			problem(byURL[url], "object %s stored without its STAC item", url)
		}
	}
	for url, id := range byURL {
		if _, ok := objects[url]; !ok {
			problem(id, "%s: its fetched event names %s, which is not in the target", id, url)
			continue
		}
		md5sum, b3, err := fs.sums(url)
		want5, want3 := products[id].p.Checksums()
		if err != nil || md5sum != want5 || b3 != want3 {
			problem(id, "%s: the object %s does not hold the simulator's bytes (%v)", id, url, err)
		}
	}

	// Leftovers, then the sweep.
	if err := w.stopFetchers(); err != nil {
		problem("", "%v", err)
	}
	left, err := fs.leftovers()
	if err != nil {
		problem("", "listing the leftovers: %v", err)
	}
	for _, l := range left {
		if strings.HasPrefix(l, "upload ") {
			fr.Uploads++
			continue
		}
		fr.Parts++
		// A product given up never resumes: its partial goes with it
		// (a killed replica's or a cut one's is resumed by the
		// redelivery, or left to the sweep).
		if f := fs.fate(l, fetched, failed); strings.Contains(f, " failed: ") && !strings.Contains(f, " fetched") {
			problem("", "%s left by a product given up: %s", l, f)
		}
	}
	if len(left) > 0 {
		var lines []string
		for _, l := range left {
			lines = append(lines, l+"\n      "+fs.fate(l, fetched, failed))
		}
		w.t.Logf("left before the sweep:\n  %s", strings.Join(lines, "\n  "))
	}
	fr.Swept, err = fs.sweep()
	if err != nil {
		problem("", "the sweep: %v", err)
	}
	if left, err := fs.leftovers(); err != nil || len(left) > 0 {
		problem("", "left after the sweep (%v):\n  %s", err, strings.Join(left, "\n  "))
	}

	w.checkDownloads(start, rep, problem)
}

// distinctIDs says whether the events have distinct message ids: each
// answers a product event of its own, none a redelivery's second answer.
func distinctIDs(ms []natstest.Msg) bool {
	seen := map[string]bool{}
	for _, m := range ms {
		id := m.Header.Get("Nats-Msg-Id")
		if seen[id] {
			return false
		}
		seen[id] = true
	}
	return true
}

// checkDownloads reads the simulator's log of downloads: never more than
// FETCH_CONCURRENCY at once, never one product on two connections at
// once. A frozen replica cannot close its connections: one open across
// its SIGSTOP counts until the stop and again from frozenGrace after the
// SIGCONT (by then the replica must have cut it).
// No exception: a download holds its key's lease across replicas (the
// fetcher's KV bucket), so a product's created and modified events taken
// by the two replicas at once, or a redelivery meeting the running
// download, wait for it.
func (w *world) checkDownloads(start time.Time, rep *Report, problem func(id, format string, a ...any)) {
	fs := w.fetch
	fr := &rep.Fetch
	st := w.sim.DownloadStats()
	for i := range fs.replicas {
		fr.UserPeaks = append(fr.UserPeaks, st.Users[fetchUser(i)].Peak)
	}
	type span struct {
		from, to time.Time
		rec      cdsesim.DownloadRecord
	}
	var spans []span
	for _, r := range w.sim.DownloadLog() {
		if r.Fault != "" {
			fr.Faulted++
		}
		if r.Method != http.MethodGet || (r.Status != http.StatusOK && r.Status != http.StatusPartialContent) {
			continue
		}
		fr.Downloads++
		from, to := r.At, r.Done
		excused := false
		for _, f := range fs.frozen {
			if f.user == r.User && from.Before(f.from) && to.After(f.from) {
				excused = true
				spans = append(spans, span{from, f.from, r})
				from = f.resumed.Add(frozenGrace)
			}
		}
		if excused {
			fr.Excused++
		}
		if to.After(from) {
			spans = append(spans, span{from, to, r})
		}
	}
	// The peak: +1 at each start, -1 at each end, ends first at a tie.
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	for _, s := range spans {
		edges = append(edges, edge{s.from, 1}, edge{s.to, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at.Equal(edges[j].at) {
			return edges[i].d < edges[j].d
		}
		return edges[i].at.Before(edges[j].at)
	})
	n := 0
	for _, e := range edges {
		n += e.d
		if n > fr.Peak {
			fr.Peak = n
			if n == fetchConcurrency+1 {
				problem("", "%d downloads at once at %.1fs, over FETCH_CONCURRENCY (%d)", n, e.at.Sub(start).Seconds(), fetchConcurrency)
			}
		}
	}
	byProduct := map[string][]span{}
	for _, s := range spans {
		byProduct[s.rec.Product] = append(byProduct[s.rec.Product], s)
	}
	for id, ss := range byProduct {
		sort.Slice(ss, func(i, j int) bool { return ss[i].from.Before(ss[j].from) })
		for i := 1; i < len(ss); i++ {
			// The simulator notes a request's end when its handler
			// returns, which may follow the client's read of the last
			// byte and its next request (a resume, a second download
			// after a mismatch) by a moment.
			if ss[i].from.Before(ss[i-1].to.Add(-doneSlack)) && ss[i].rec != ss[i-1].rec {
				problem(id, "%s downloaded on two connections at once (%s from %.1fs, %s from %.1fs)", id,
					ss[i-1].rec.User, ss[i-1].from.Sub(start).Seconds(), ss[i].rec.User, ss[i].from.Sub(start).Seconds())
				break
			}
		}
	}
}

// timeline is what happened around one product: its download requests
// and the faults of both schedules from 20 s before the first to the last.
func (w *world) timeline(start time.Time, id string, rep *Report) string {
	var b strings.Builder
	var first, last time.Time
	for _, r := range w.sim.DownloadLog() {
		if r.Product != id {
			continue
		}
		if first.IsZero() {
			first = r.At
		}
		last = r.Done
		fmt.Fprintf(&b, "    %6.1fs–%6.1fs %s %s %s %d, %d bytes %s\n", r.At.Sub(start).Seconds(), r.Done.Sub(start).Seconds(), r.User, r.Method, r.Range, r.Status, r.Bytes, r.Fault)
	}
	w.fetch.mu.Lock()
	if fp := w.fetch.products[id]; fp != nil {
		fmt.Fprintf(&b, "    product of %d bytes, download faults %v, deleted %v\n", fp.p.ContentLength, fp.faults, fp.deleted)
	}
	w.fetch.mu.Unlock()
	if first.IsZero() {
		return b.String() + "    (never downloaded)\n"
	}
	for _, f := range slices.Concat(rep.Faults, rep.FetchFaults) {
		at := start.Add(f.At)
		if at.Add(f.For).After(first.Add(-20*time.Second)) && at.Before(last) {
			fmt.Fprintf(&b, "    fault %s\n", f)
		}
	}
	return b.String()
}

// fate says what became of the product whose leftover l is.
func (fs *fetchSide) fate(l string, fetched, failed map[[2]string][]natstest.Msg) string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for id, fp := range fs.products {
		if !strings.Contains(l, "/"+fp.p.Name+".zip") {
			continue
		}
		var out []string
		for _, ev := range []string{"created", "modified"} {
			k := [2]string{id, ev}
			if len(fetched[k]) > 0 {
				out = append(out, ev+" fetched")
			}
			for _, m := range failed[k] {
				out = append(out, ev+" failed: "+m.Header.Get("Cdse-Fetch-Error"))
			}
		}
		return fmt.Sprintf("%s: %s; faults %v, deleted %v", id, strings.Join(out, ", "), fp.faults, fp.deleted)
	}
	return "no routed product of that name"
}

func isRouted(subject string) bool {
	for _, ev := range []string{"created", "modified"} {
		if strings.HasPrefix(subject, "cdse.product."+ev+"."+fetchCollection+".") {
			return true
		}
	}
	return false
}

// shortReason is a failed event's reason without its product's names.
func shortReason(r string) string {
	low := strings.ToLower(r)
	for _, k := range []string{"online", "checksum", "not found"} {
		if strings.Contains(low, k) {
			return k
		}
	}
	return r
}

func reasons(ms []natstest.Msg) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Header.Get("Cdse-Fetch-Error"))
	}
	return out
}

// stopFetchers ends the replicas with SIGTERM, so that what is left in the
// target is what kills and cuts left.
func (w *world) stopFetchers() error {
	var errs []error
	for _, r := range w.fetch.replicas {
		errs = append(errs, r.Terminate(20*time.Second))
	}
	return errors.Join(errs...)
}

// objects are the stored products, by URL (as the fetched events name
// them): the bucket's objects under the prefix, or the directory's files
// outside .partial and .sums (the checksums' sidecars).
func (fs *fetchSide) objects() (map[string]bool, error) {
	out := map[string]bool{}
	if fs.dir != "" {
		err := filepath.WalkDir(fs.dir, func(p string, d iofs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == ".partial" || d.Name() == ".sums") {
				return filepath.SkipDir
			}
			if !d.IsDir() {
				out["file://"+p] = true
			}
			return nil
		})
		return out, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := s3.NewListObjectsV2Paginator(fs.store.Client(), &s3.ListObjectsV2Input{Bucket: aws.String(fs.store.Bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return out, fmt.Errorf("listing the bucket: %w", err)
		}
		for _, o := range page.Contents {
			out["s3://"+fs.store.Bucket+"/"+aws.ToString(o.Key)] = true
		}
	}
	return out, nil
}

// sums are the MD5 and BLAKE3 of a stored object.
func (fs *fetchSide) sums(url string) (string, string, error) {
	var body io.ReadCloser
	if path, ok := strings.CutPrefix(url, "file://"); ok {
		f, err := os.Open(path)
		if err != nil {
			return "", "", err
		}
		body = f
	} else {
		key := strings.TrimPrefix(url, "s3://"+fs.store.Bucket+"/")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := fs.store.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(fs.store.Bucket), Key: aws.String(key)})
		if err != nil {
			return "", "", fmt.Errorf("get %s: %w", key, err)
		}
		body = out.Body
	}
	defer body.Close()
	m, b := md5.New(), blake3.New()
	if _, err := io.Copy(io.MultiWriter(m, b), body); err != nil {
		return "", "", fmt.Errorf("reading %s: %w", url, err)
	}
	return hex.EncodeToString(m.Sum(nil)), hex.EncodeToString(b.Sum(nil)), nil
}

// leftovers are the unfinished downloads in the target: multipart
// uploads, or any file under .partial (partials, their ETags).
func (fs *fetchSide) leftovers() ([]string, error) {
	var out []string
	if fs.dir != "" {
		err := filepath.WalkDir(filepath.Join(fs.dir, ".partial"), func(p string, d iofs.DirEntry, err error) error {
			if errors.Is(err, iofs.ErrNotExist) {
				return nil
			}
			if err == nil && !d.IsDir() {
				out = append(out, "partial "+p)
			}
			return err
		})
		return out, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ups, err := fs.store.Client().ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(fs.store.Bucket)})
	if err != nil {
		return nil, fmt.Errorf("listing the multipart uploads: %w", err)
	}
	for _, u := range ups.Uploads {
		out = append(out, "upload "+aws.ToString(u.Key))
	}
	return out, nil
}

// sweep runs the fetcher's own sweep of stale partials (target.Target's
// SweepPartials, which a replica runs at start and hourly) over the
// target, with every replica stopped: FETCH_PARTIAL_MAX_AGE cannot be
// under an hour, so a replica's start would sweep nothing this young;
// with none running, every leftover is stale.
func (fs *fetchSide) sweep() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env := map[string]string{}
	if fs.store != nil {
		env = fs.store.Env()
	}
	cfg := fetchconfig.Default()
	cfg.Target = fs.target
	tgt, err := fetcher.OpenTarget(ctx, cfg, func(k string) string { return env[k] })
	if err != nil {
		return 0, err
	}
	return tgt.SweepPartials(ctx, 0)
}
