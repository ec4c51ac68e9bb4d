package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/natsproc"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/scrape"
)

const (
	stream           = "CDSE_PRODUCTS"
	quarantineStream = "CDSE_QUARANTINE"
	webhookUser      = "catalogue"
	webhookPass      = "a-long-webhook-password"
	// Two catalogue accounts, as the catalogue allows two running
	// subscriptions per account and created/modified cannot share one with
	// deleted: the first has the PUSH ones, the second the PULL one and
	// the reconciler's login.
	pushUser, pullUser, simPass = "push@example.org", "pull@example.org", "account-pw"
	filter                      = "Collection/Name eq 'SENTINEL-1' or Collection/Name eq 'SENTINEL-2' or Collection/Name eq 'SENTINEL-3' or Collection/Name eq 'SENTINEL-5P'"
)

// Config of a run.
type Config struct {
	Seed     int64
	Duration time.Duration
	Rate     int // product events per second (default 20)
	// ReceiverBin, NATSBin and FetcherBin are the binaries (bins.Build,
	// natsproc.Binary).
	ReceiverBin, NATSBin, FetcherBin string
}

// Report is what a run did and found. Problems is empty when the promise
// held.
type Report struct {
	Seed           int64
	Duration       time.Duration
	Faults         []Fault
	FetchFaults    []Fault        // the fetcher's, on their own schedule
	Events         map[string]int // announced by the simulator, by event
	Stored         map[string]int // on the stream, by Cdse-Source
	Status         map[int]int    // the load balancer's answers to the catalogue
	Acked          int            // product events a replica answered 2xx for
	Pushed         int64          // the simulator's deliveries that got a 2xx
	Dropped        int64          // given up after the retries
	Settle         time.Duration  // from the end of the traffic until the stream held every event
	QuarantineMsgs uint64
	Notices        int // the receiver's notices of supersession on the stream
	Reprocessed    int // Sentinel-3 frames the traffic reprocessed
	Fetch          FetchReport
	Problems       []string
}

func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos run: seed %d, %s of traffic, replay with CHAOS_SEED=%d\n", r.Seed, r.Duration, r.Seed)
	fmt.Fprintf(&b, "faults (%d):\n", len(r.Faults))
	for _, f := range r.Faults {
		rec := "no request until the end"
		if f.Recovery > 0 {
			rec = fmt.Sprintf("next 2xx %.2fs after", f.Recovery.Seconds())
		}
		if f.Ready > 0 {
			rec += fmt.Sprintf(", restarted replica ready in %.2fs", f.Ready.Seconds())
		}
		fmt.Fprintf(&b, "  %s  %s\n", f, rec)
	}
	fmt.Fprintf(&b, "fetcher faults (%d):\n", len(r.FetchFaults))
	for _, f := range r.FetchFaults {
		ready := ""
		if f.Ready > 0 {
			ready = fmt.Sprintf("  restarted replica ready in %.2fs", f.Ready.Seconds())
		}
		fmt.Fprintf(&b, "  %s%s\n", f, ready)
	}
	fmt.Fprintf(&b, "events announced: %s\n", counts(r.Events))
	fmt.Fprintf(&b, "stored, by source: %s\n", counts(r.Stored))
	var st []string
	for _, c := range slices.Sorted(maps.Keys(r.Status)) {
		st = append(st, fmt.Sprintf("%d: %d", c, r.Status[c]))
	}
	fmt.Fprintf(&b, "answers to the catalogue: %s\n", strings.Join(st, ", "))
	fmt.Fprintf(&b, "simulator: %d deliveries acknowledged, %d dropped after 3 retries; %d events acknowledged by a replica\n", r.Pushed, r.Dropped, r.Acked)
	fmt.Fprintf(&b, "settled %.1fs after the traffic stopped; quarantine %d; %d notices of supersession (each once, of the %d frames reprocessed)\n", r.Settle.Seconds(), r.QuarantineMsgs, r.Notices, r.Reprocessed)
	b.WriteString(r.Fetch.String())
	if len(r.Problems) == 0 {
		b.WriteString("every event on the stream exactly once; every routed product stored once, verified, nothing left\n")
	}
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "PROBLEM: %s\n", p)
	}
	return b.String()
}

func counts[K comparable](m map[K]int) string {
	var parts []string
	total := 0
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%v %d", k, v))
		total += v
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, ", "))
}

// world is everything a run starts.
type world struct {
	t        testing.TB
	dir      string
	nodes    []*natsproc.Server
	replicas []*replica
	sim      *cdsesim.Sim
	front    *front
	fetch    *fetchSide

	mu       sync.Mutex
	expected map[string]string // dedupe key → event
	// Reprocessings: each Sentinel-3 frame the traffic reprocessed (its
	// NT version generated after its NR one), new id → original id, and
	// the products it deleted; what the check holds the notices to.
	reprocessed map[string]string
	deleted     map[string]bool
}

// Run starts the world, runs traffic and faults for c.Duration, heals
// everything and checks the stream. It fails t only when the world cannot
// be set up; what the check finds is in the report.
func Run(t testing.TB, c Config) Report {
	t.Helper()
	if c.Rate <= 0 {
		c.Rate = 20
	}
	w := &world{t: t, dir: t.TempDir(), expected: map[string]string{}, reprocessed: map[string]string{}, deleted: map[string]bool{}}
	rep := Report{Seed: c.Seed, Duration: c.Duration, Faults: Schedule(c.Seed, c.Duration), FetchFaults: FetchSchedule(c.Seed, c.Duration, fetchAckWait),
		Events: map[string]int{}, Stored: map[string]int{}, Status: map[int]int{}}

	w.nodes = natsproc.StartCluster(t, c.NATSBin, filepath.Join(w.dir, "nats"), 3)
	// Downloads: no cap per account (the check counts them across the
	// replicas, whose accounts differ), at fetchRate each.
	w.sim = cdsesim.New(cdsesim.Options{Users: map[string]cdsesim.User{pushUser: {Password: simPass}, pullUser: {Password: simPass},
		fetchUser(0): {Password: simPass}, fetchUser(1): {Password: simPass}},
		Journal: w.journal, MaxRunning: 2, MaxDownloads: -1, DownloadRate: fetchRate, Seed: uint64(c.Seed) + 1})
	simSrv := httptest.NewServer(w.sim.Handler())
	t.Cleanup(func() { simSrv.Close(); w.sim.Close() })
	w.fetch = w.newFetchSide(c, simSrv.URL)

	var backends []string
	ports := natstest.FreePorts(t, 4)
	for i := range 2 {
		name := "r" + strconv.Itoa(i+1)
		r := &replica{Process: natsproc.Process{Name: name, Path: c.ReceiverBin, Log: filepath.Join(w.dir, name+".log")},
			dir: filepath.Join(w.dir, name), webhookPort: ports[2*i], adminPort: ports[2*i+1]}
		if err := os.MkdirAll(r.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var urls string
		r.proxies, urls = w.natsProxies()
		r.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.dir,
			"RECEIVER_ADDR=127.0.0.1:" + strconv.Itoa(r.webhookPort),
			"RECEIVER_ADMIN_ADDR=127.0.0.1:" + strconv.Itoa(r.adminPort),
			"RECEIVER_USERNAME=" + webhookUser, "RECEIVER_PASSWORD=" + webhookPass,
			"RECEIVER_DATA_DIR=" + r.dir,
			"RECEIVER_PUBLISH_TIMEOUT=2s",
			"NATS_URL=" + urls,
			"NATS_STREAM_REPLICAS=3",
			"LOG_FORMAT=json",
		}
		backends = append(backends, "http://127.0.0.1:"+strconv.Itoa(r.webhookPort)+"/notifications")
		w.replicas = append(w.replicas, r)
	}
	w.front = newFront(backends)
	frontSrv := httptest.NewServer(w.front)
	t.Cleanup(frontSrv.Close)

	env := map[string]string{
		"CDSE_USERNAME": pushUser, "CDSE_PASSWORD": simPass,
		"CDSE_TOKEN_URL":     simSrv.URL + cdsesim.TokenPath,
		"CDSE_CATALOGUE_URL": simSrv.URL + "/odata/v1",
		"RECEIVER_USERNAME":  webhookUser, "RECEIVER_PASSWORD": webhookPass,
	}
	for _, events := range []string{"created,modified", "deleted"} {
		// Two running subscriptions of one user (deleted cannot share one):
		// the interface description's limit, which the simulator is given.
		registerCmd(t, env, "create", "--endpoint", frontSrv.URL+"/notifications", "--insecure-endpoint", "--filter", filter, "--events", events, "--max-running", "2", "--skip-preflight")
	}
	env["CDSE_USERNAME"] = pullUser
	var subs []struct{ Id string }
	out := registerCmd(t, env, "-o", "json", "create", "--type", "pull", "--filter", filter, "--events", "created,modified")
	if err := json.Unmarshal([]byte(out), &subs); err != nil || len(subs) != 1 {
		t.Fatalf("register create --type pull: %q: %v", out, err)
	}
	// PULL and the reconciler on the first replica only, as a deployment
	// runs them (one reader of the queue).
	w.replicas[0].Env = append(w.replicas[0].Env,
		"CDSE_USERNAME="+pullUser, "CDSE_PASSWORD="+simPass,
		"CDSE_TOKEN_URL="+env["CDSE_TOKEN_URL"], "CDSE_CATALOGUE_URL="+env["CDSE_CATALOGUE_URL"],
		"PULL_SUBSCRIPTION_ID="+subs[0].Id, "PULL_INTERVAL=200ms",
		"RECONCILE_INTERVAL=1m", "RECONCILE_LOOKBACK=1h", "RECONCILE_FILTER="+filter)
	for _, r := range w.replicas {
		if err := r.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Kill)
	}
	for _, r := range w.replicas {
		if err := r.waitReady(60 * time.Second); err != nil {
			t.Fatalf("%v\n%s", err, r.LogTail(30))
		}
	}
	w.fetch.start(t)
	for _, r := range w.fetch.replicas {
		t.Cleanup(r.Kill)
	}
	w.sim.SetDuplicateSends(true)

	// Traffic and faults.
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), c.Duration)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); w.traffic(ctx, c.Seed, c.Rate) }()
	go func() { defer wg.Done(); w.injectFetch(start, rep.FetchFaults) }()
	heals := w.inject(start, rep.Faults)
	wg.Wait()
	trafficEnd := time.Now()

	// Heal whatever is left (nothing, by the schedule's construction), let
	// the simulator finish its retries, and wait for the stream to hold
	// every event.
	w.healAll()
	w.sim.WaitPushes()
	js, closeNC := natstest.JetStream(t, clusterURL(w.nodes))
	defer closeNC()
	msgs := w.settle(js, 3*time.Minute) // a deleted event both PUSH sends of which were dropped waits for the next reconcile pass (every minute)
	rep.Settle = time.Since(trafficEnd)
	// A PULL read or a late retry after that must not add anything: watch
	// the stream a little longer.
	msgs = w.stable(js, msgs, 3*time.Second)
	// The fetchers: every routed product event's outcome. A product event
	// given back with a delay (a long Retry-After, a transient error's
	// backoff of 5 s doubling) or held by a replica killed or frozen
	// (FETCH_ACK_WAIT) takes a while.
	routed := map[[2]string]int{}
	for _, m := range msgs {
		if isRouted(m.Subject) {
			routed[[2]string{m.Header.Get("Cdse-Product-Id"), m.Header.Get("Cdse-Event")}]++
		}
	}
	fetchedMsgs := w.settleFetch(js, routed, 4*time.Minute)
	rep.Fetch.Settle = time.Since(trafficEnd)

	acked, answers := w.front.snapshot()
	for _, a := range answers {
		rep.Status[a.status]++
	}
	for i := range rep.Faults {
		end := heals[i]
		for _, a := range answers {
			if a.at.After(end) && a.status/100 == 2 {
				rep.Faults[i].Recovery = a.at.Sub(end)
				break
			}
		}
	}
	st := w.sim.Stats()
	rep.Pushed, rep.Dropped, rep.Acked = st.Pushed, st.PushDropped, len(acked)
	rep.QuarantineMsgs = streamMsgs(js, quarantineStream)
	// The notices come after the events, from the versions consumer (one
	// event at a time, backed off through the faults): read the stream
	// again once it has decided every event.
	if err := versionsDrained(js, 2*time.Minute); err != nil {
		rep.Problems = append(rep.Problems, err.Error())
	}
	msgs = natstest.StreamMessages(t, js, stream)
	rep.Problems = append(rep.Problems, w.check(msgs, acked, &rep)...)
	w.checkFetch(start, msgs, fetchedMsgs, &rep)
	if rep.QuarantineMsgs != 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d bodies quarantined", rep.QuarantineMsgs))
	}
	for code := range rep.Status {
		if code/100 != 2 && code != http.StatusServiceUnavailable && code != http.StatusBadGateway {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%d answers with status %d (only 2xx, 503 and the balancer's 502 are expected)", rep.Status[code], code))
		}
	}
	if len(rep.Problems) > 0 {
		for _, r := range w.replicas {
			t.Logf("%s log tail:\n%s", r.Name, r.LogTail(30))
		}
		for _, r := range w.fetch.replicas {
			t.Logf("%s log tail:\n%s", r.Name, r.LogTail(30))
		}
	}
	return rep
}

// natsProxies are one process's way to the NATS nodes, a proxy each (to
// cut it), and their URLs for NATS_URL.
func (w *world) natsProxies() ([]*tcpProxy, string) {
	var proxies []*tcpProxy
	var urls []string
	for _, n := range w.nodes {
		p, err := newTCPProxy("127.0.0.1:" + strconv.Itoa(n.Port))
		if err != nil {
			w.t.Fatal(err)
		}
		w.t.Cleanup(p.close)
		proxies = append(proxies, p)
		urls = append(urls, p.URL())
	}
	return proxies, strings.Join(urls, ",")
}

func registerCmd(t testing.TB, env map[string]string, args ...string) string {
	t.Helper()
	code, out, errOut := bins.Run(t, bins.Register(t), env, args...)
	if code != 0 {
		t.Fatalf("register %v: exit %d: %s", args, code, errOut)
	}
	return out
}

func clusterURL(nodes []*natsproc.Server) string {
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.URL())
	}
	return strings.Join(urls, ",")
}

// journal is the simulator's ground truth: the dedupe key the receiver
// must store each event under.
func (w *world) journal(ev string, p cdsesim.Product) {
	key := notification.DedupeKey(event.Kind(ev), p.ID, p.ModificationDate)
	w.mu.Lock()
	w.expected[key] = ev
	w.mu.Unlock()
}

// traffic creates, modifies and deletes products at rate per second until
// ctx ends.
func (w *world) traffic(ctx context.Context, seed int64, rate int) {
	r := rand.New(rand.NewPCG(uint64(seed)+1, 7))
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	var (
		live   []string
		frames []*cdsesim.Product // S3 NR frames not reprocessed yet
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		switch x := r.Float64(); {
		case x < 0.25 && len(live) > 0:
			_ = w.sim.ModifyProduct(live[r.IntN(len(live))])
		case x < 0.35 && len(live) > 0:
			i := r.IntN(len(live))
			w.fetch.deleted(live[i]) // before the event: the fetcher may meet the 404 at once
			w.mu.Lock()
			w.deleted[live[i]] = true
			w.mu.Unlock()
			_ = w.sim.DeleteProduct(live[i], "Corrupted product")
			live = slices.Delete(live, i, i+1)
		case x < 0.40 && len(frames) > 0:
			// A reprocessing: the frame's non-time-critical version,
			// which the versions consumer must announce as superseding
			// it, once.
			i := r.IntN(len(frames))
			old := frames[i]
			frames = slices.Delete(frames, i, i+1)
			p := w.sim.GenerateWith(cdsesim.Sentinel3, 1, func(p *cdsesim.Product) { p.Name = reprocessedS3(old.Name, p.Name) })[0]
			w.mu.Lock()
			w.reprocessed[p.ID] = old.ID
			w.mu.Unlock()
			live = append(live, p.ID)
		default:
			m := cdsesim.Missions[r.IntN(len(cdsesim.Missions))]
			var adjust func(*cdsesim.Product)
			if m == cdsesim.Sentinel2 { // fetchCollection
				adjust = w.fetch.adjust(w.sim)
			}
			p := w.sim.GenerateWith(m, 1, adjust)[0]
			live = append(live, p.ID)
			if m == cdsesim.Sentinel3 {
				frames = append(frames, p)
			}
		}
	}
}

// reprocessedS3 is the non-time-critical version of the near-real-time
// Sentinel-3 frame named old: its name with the creation time of fresh
// (a name the simulator just generated) and timeliness NT
// (versions.identifyS3: the same frame, a later version).
func reprocessedS3(old, fresh string) string {
	return old[:48] + fresh[48:63] + old[63:88] + "NT" + old[90:]
}

// inject runs the schedule and returns when each fault was healed.
func (w *world) inject(start time.Time, faults []Fault) []time.Time {
	heals := make([]time.Time, len(faults))
	for i, f := range faults {
		time.Sleep(time.Until(start.Add(f.At)))
		w.t.Logf("fault %s", f)
		end := time.Now().Add(f.For)
		switch f.Kind {
		case KillReceiver:
			r := w.replicas[f.Receiver]
			r.Kill()
			time.Sleep(time.Until(end))
			if err := r.Start(); err != nil {
				w.t.Error(err)
			}
			started := time.Now()
			if err := r.waitReady(30 * time.Second); err != nil {
				w.t.Error(err)
			}
			faults[i].Ready = time.Since(started)
		case CutNATS:
			for _, p := range w.replicas[f.Receiver].proxies {
				p.setCut(true)
			}
			time.Sleep(time.Until(end))
			for _, p := range w.replicas[f.Receiver].proxies {
				p.setCut(false)
			}
		case KillNode, LoseQuorum:
			for _, n := range f.Nodes {
				w.nodes[n].Kill()
			}
			time.Sleep(time.Until(end))
			for _, n := range f.Nodes {
				if err := w.nodes[n].Restart(); err != nil {
					w.t.Error(err)
				}
			}
		case PauseNode, FreezeQuorum:
			for _, n := range f.Nodes {
				w.nodes[n].Stop()
			}
			time.Sleep(time.Until(end))
			for _, n := range f.Nodes {
				w.nodes[n].Continue()
			}
		case SlowNode:
			n := w.nodes[f.Nodes[0]]
			for time.Now().Before(end) {
				n.Stop()
				time.Sleep(100 * time.Millisecond)
				n.Continue()
				time.Sleep(100 * time.Millisecond)
			}
		}
		heals[i] = time.Now()
	}
	return heals
}

// healAll makes sure every process runs and every link is up.
func (w *world) healAll() {
	for _, n := range w.nodes {
		if !n.Running() {
			if err := n.Restart(); err != nil {
				w.t.Error(err)
			}
		}
		n.Continue()
	}
	for _, r := range w.replicas {
		for _, p := range r.proxies {
			p.setCut(false)
		}
		if !r.Running() {
			if err := r.Start(); err != nil {
				w.t.Error(err)
			}
		}
	}
	w.fetch.heal(w.t)
}

// settle waits until the stream holds every expected event (or d passed)
// and returns its messages.
func (w *world) settle(js jetstream.JetStream, d time.Duration) []natstest.Msg {
	w.mu.Lock()
	want := uint64(len(w.expected))
	w.mu.Unlock()
	deadline := time.Now().Add(d)
	for streamMsgs(js, stream)-notices(js) < want && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	return natstest.StreamMessages(w.t, js, stream)
}

// versionsDrained waits, at most d, until the receiver's versions
// consumer has decided every product event on the stream.
func versionsDrained(js jetstream.JetStream, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var info *jetstream.ConsumerInfo
		c, err := js.Consumer(ctx, stream, topology.VersionsConsumer)
		if err == nil {
			info, err = c.Info(ctx)
		}
		cancel()
		if err == nil && info.NumPending == 0 && info.NumAckPending == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("the versions consumer after %v: %w", d, err)
			}
			return fmt.Errorf("the versions consumer after %v: %d events not decided, %d pending", d, info.NumPending, info.NumAckPending)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// notices are the receiver's notices of supersession on the stream (not
// events the catalogue announced).
func notices(js jetstream.JetStream) uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return 0
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(event.DefaultSupersededPrefix+".>"))
	if err != nil {
		return 0
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}

// stable reads the stream again after d and returns the later reading;
// the check then sees anything added meanwhile.
func (w *world) stable(js jetstream.JetStream, msgs []natstest.Msg, d time.Duration) []natstest.Msg {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if streamMsgs(js, stream) != uint64(len(msgs)) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return natstest.StreamMessages(w.t, js, stream)
}

func streamMsgs(js jetstream.JetStream, name string) uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, name)
	if err != nil {
		return 0
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0
	}
	return info.State.Msgs
}

// check compares the stream with the simulator's journal and the
// balancer's ledger.
func (w *world) check(msgs []natstest.Msg, acked map[string]bool, rep *Report) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ev := range w.expected {
		rep.Events[ev]++
	}
	var problems []string
	seen := map[string]int{}
	noticed := map[string]bool{} // reprocessed products a notice named
	for _, m := range msgs {
		id := m.Header.Get("Nats-Msg-Id")
		seen[id]++
		rep.Stored[m.Header.Get("Cdse-Source")]++
		if seen[id] == 2 {
			problems = append(problems, "stored twice: "+id)
		}
		if m.Header.Get(event.HeaderNotice) != "" {
			// The receiver's own notice that one product supersedes
			// another (two versions of an acquisition in the traffic):
			// once each, as every message, and only of a pair the
			// traffic made.
			rep.Notices++
			n, err := event.DecodeSupersededData(m.Data, m.Header)
			switch {
			case err != nil:
				problems = append(problems, fmt.Sprintf("notice %s: %v", id, err))
			case w.reprocessed[n.By.ID] != n.Superseded.ID:
				problems = append(problems, fmt.Sprintf("notice %s (%s): %s superseded by %s, which the traffic did not reprocess from it", id, n.Reason, n.Superseded.Name, n.By.Name))
			default:
				noticed[n.By.ID] = true
			}
			continue
		}
		if _, ok := w.expected[id]; !ok && seen[id] == 1 {
			problems = append(problems, "stored but never announced: "+id)
		}
	}
	var missing, ackedMissing int
	for id := range w.expected {
		if seen[id] == 0 {
			missing++
			if acked[id] {
				ackedMissing++
			}
			if missing <= 10 {
				problems = append(problems, "announced, not on the stream: "+id)
			}
		}
	}
	if missing > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d events missing, %d of them acknowledged with a 2xx", missing, len(w.expected), ackedMissing))
	}
	// A pair neither of whose products was deleted is announced whatever
	// order its events reached the stream in (newer_arrived or
	// arrived_older); a deletion may make the consumer forget one first.
	rep.Reprocessed = len(w.reprocessed)
	for nw, old := range w.reprocessed {
		if !noticed[nw] && !w.deleted[nw] && !w.deleted[old] {
			problems = append(problems, fmt.Sprintf("no notice that %s supersedes %s", nw, old))
		}
	}
	return problems
}

// replica is one receiver process.
type replica struct {
	natsproc.Process
	dir                    string
	webhookPort, adminPort int
	proxies                []*tcpProxy
}

func (r *replica) waitReady(d time.Duration) error {
	if err := scrape.Status("http://127.0.0.1:"+strconv.Itoa(r.adminPort)+"/readyz", http.StatusOK, d); err != nil {
		return fmt.Errorf("%s: %w", r.Name, err)
	}
	return nil
}
