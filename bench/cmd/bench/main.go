// Command bench is the benchmark harness behind `make bench`. In one run and
// one process tree it starts a nats-server with JetStream (file store), the
// two reference pipelines (bench/refserver: bare HTTP, and HTTP plus a
// synchronous JetStream publish) and the real receiver binary against that
// server, loads each with the same generator (bench/loadgen), prints
// throughput, latency percentiles, errors and the receiver's peak RSS, the
// ratios to the references, and checks that the stream holds exactly one
// message per acknowledged product. With -soak it instead holds a steady rate
// and watches RSS, goroutines and open files for growth.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/bench/benchkit"
	"github.com/cdse-jetstream/receiver/bench/loadgen"
)

const (
	user     = benchkit.User
	password = benchkit.Password
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type opts struct {
	conns      int
	duration   time.Duration
	dupRatio   float64
	soak       time.Duration
	soakRate   float64
	cpuProfile string
	pacedProf  string
	extraEnv   string
	natsEnv    string
	rounds     int
	compare    string
	// compareEnv, when given, is the compared receiver's extra
	// environment instead of extraEnv's (nil: the same).
	compareEnv *string
}

// median returns the middle element of xs ordered by key (the upper one
// of an even count), or the zero value of an empty xs.
func median[T any, K cmp.Ordered](xs []T, key func(T) K) T {
	if len(xs) == 0 {
		var zero T
		return zero
	}
	sorted := slices.Clone(xs)
	slices.SortFunc(sorted, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
	return sorted[len(sorted)/2]
}

func rps(r loadgen.Result) float64       { return r.RPS() }
func p99(r loadgen.Result) time.Duration { return r.Pct(99) }
func serverCPU(c cpuCost) time.Duration  { return c.server }

// series is one server under one kind of load, run after run.
type series struct {
	label   string
	url     string
	srv     *proc
	results []loadgen.Result
	costs   []cpuCost
}

// run loads the series' server once, with nats-server's CPU time measured
// alongside; with profileTo set, the server (the receiver) is profiled too.
func (s *series) run(ctx context.Context, load loadgen.Options, nats *proc, round int, profileTo string) error {
	load.URL = s.url
	profDone := func() {}
	if profileTo != "" {
		profDone = profile(s.srv, load.Duration, profileTo)
	}
	settle(nats)
	done := meterCPU(s.srv, nats)
	res := loadgen.Run(ctx, load)
	if res.Err != nil {
		return res.Err
	}
	s.costs = append(s.costs, done(res.OK))
	s.results = append(s.results, res)
	fmt.Printf("round %d  %-30s %s\n", round, s.label+":", res)
	profDone()
	return nil
}

func run(ctx context.Context) error {
	var o opts
	flag.IntVar(&o.conns, "conns", 32, "concurrent connections")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "length of each phase")
	flag.Float64Var(&o.dupRatio, "dup-ratio", 0.3, "share of duplicates in the mixed phase")
	flag.DurationVar(&o.soak, "soak", 0, "run a soak test of this length instead of the benchmark")
	flag.Float64Var(&o.soakRate, "soak-rate", 200, "requests/s during the soak")
	flag.IntVar(&o.rounds, "rounds", 4, "rounds of the comparable phases (the medians are compared; the servers that store swap turns every other round, so an even number is fairest)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the receiver under the unique load (first round) to this file, and with -compare the compared receiver's to this file + \".compared\"")
	flag.StringVar(&o.pacedProf, "cpuprofile-paced", "", "write a CPU profile of the receiver at half rate (first round) to this file")
	flag.StringVar(&o.extraEnv, "receiver-env", "", "extra environment of the receiver process only, space-separated KEY=VALUE (e.g. GOGC=200)")
	flag.StringVar(&o.natsEnv, "nats-env", "", "extra environment of the nats-server process, space-separated KEY=VALUE (e.g. GOGC=400)")
	flag.Func("compare-env", "the compared receiver's extra environment instead of -receiver-env's (e.g. \"\" to compare this tree with and without INTERESTS_FILE)", func(v string) error {
		o.compareEnv = &v
		return nil
	})
	flag.StringVar(&o.compare, "compare", "", "another receiver binary (e.g. built from an earlier commit), run side by side and loaded in the same rounds; prints its throughput relative to this tree's")
	flag.Parse()

	tmp, err := os.MkdirTemp("", "cdse-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fmt.Println("building binaries ...")
	if err := benchkit.Build(tmp, benchkit.Bin{Out: "receiver", Pkg: "./cmd/receiver"}, benchkit.Bin{Out: "refserver", Pkg: "./bench/refserver"},
		benchkit.Bin{Out: "nats-server", Pkg: "github.com/nats-io/nats-server/v2"}); err != nil {
		return err
	}
	template, err := benchkit.Template()
	if err != nil {
		return err
	}

	// The NATS server runs in a process of its own, as in production, so
	// that the load generator's garbage collection does not pause it.
	ns, err := startNATS(ctx, tmp, strings.Fields(o.natsEnv))
	if err != nil {
		return err
	}
	defer ns.stop()
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		return err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH_REF", Subjects: []string{"bench.ref.>"}, Storage: jetstream.FileStorage}); err != nil {
		return err
	}
	load := loadgen.Options{User: user, Password: password, Template: template, TemplateID: benchkit.FixtureID, Conns: o.conns, Duration: o.duration}
	fmt.Printf("nats-server %s (JetStream, file store); %d connections, %s per phase; %d-byte notifications; GOMAXPROCS %s\n\n",
		server.VERSION, o.conns, o.duration, len(template), os.Getenv("GOMAXPROCS"))
	fmt.Println("processes: nats-server, two reference servers and the receiver each on their own; the load generator in this one")

	if o.soak > 0 {
		return soak(ctx, tmp, ns.ClientURL(), js, load, o)
	}

	// The three servers run side by side; each is loaded alone, in turn,
	// for several rounds, and the medians are compared, so that a slow
	// moment of this shared machine does not fall on one of them only.
	var refs []*series
	for _, mode := range []string{"bare", "jetstream"} {
		p, err := startProc(ctx, filepath.Join(tmp, "refserver"), []string{"-mode", mode, "-nats", ns.ClientURL()},
			[]string{"REF_USER=" + user, "REF_PASSWORD=" + password}, "listening ")
		if err != nil {
			return err
		}
		defer p.stop()
		refs = append(refs, &series{label: "reference " + mode, srv: p,
			url: "http://" + strings.TrimSpace(strings.TrimPrefix(p.addr, "listening")) + "/"})
	}
	p, err := startReceiver(ctx, filepath.Join(tmp, "receiver"), ns.ClientURL(), o.cpuProfile != "" || o.pacedProf != "", strings.Fields(o.extraEnv)...)
	if err != nil {
		return err
	}
	defer p.stop()
	bare, ref := refs[0], refs[1]
	recv := &series{label: "receiver, unique", url: "http://" + p.addr + "/notifications", srv: p}
	loaded := []*series{bare, ref, recv}

	// The other build has streams and subjects of its own on the same
	// server, so neither can refuse the other's messages or settings.
	var other *series
	if o.compare != "" {
		bin, err := filepath.Abs(o.compare)
		if err != nil {
			return err
		}
		env := o.extraEnv
		if o.compareEnv != nil {
			env = *o.compareEnv
		}
		q, err := startReceiver(ctx, bin, ns.ClientURL(), o.cpuProfile != "", append(strings.Fields(env),
			"NATS_STREAM=BENCH_COMPARE", "NATS_SUBJECT_PREFIX=compare.product", "INTEREST_SUBJECT_PREFIX=compare.interest",
			"QUARANTINE_STREAM=BENCH_COMPARE_QUARANTINE", "QUARANTINE_SUBJECT_PREFIX=compare.quarantine",
			// A receiver of another NATS_STREAM may not use this one's
			// complete stream (older builds ignore the settings).
			"COMPLETE_STREAM=BENCH_COMPARE_COMPLETE", "COMPLETE_SUBJECT_PREFIX=compare.complete",
			// Its notices of supersession too, so that both builds keep
			// their versions as a deployment does.
			"RECEIVER_VERSIONS_SUBJECT_PREFIX=compare.superseded")...)
		if err != nil {
			return fmt.Errorf("-compare %s: %w", o.compare, err)
		}
		defer q.stop()
		other = &series{label: "compared receiver, unique", url: "http://" + q.addr + "/notifications", srv: q}
		loaded = append(loaded, other)
	}

	// Each server is loaded once before the rounds, unmeasured: the first
	// phase of a fresh process (its heap, its connections, the broker's
	// first blocks of its stream) ran a quarter slower, and fell on this
	// tree's receiver (against b8ff6f7: round 1 at 0.710, the other seven
	// at 0.91 to 1.27).
	warm := load
	warm.Duration = min(o.duration, 3*time.Second)
	var warmed []loadgen.Result // the receiver's, for the exactly-once check
	for _, s := range loaded {
		warm.URL = s.url
		res := loadgen.Run(ctx, warm)
		if res.Err != nil {
			return fmt.Errorf("warm-up of %s: %w", s.label, res.Err)
		}
		if s == recv {
			warmed = append(warmed, res)
		}
	}
	fmt.Printf("warmed up: each server loaded for %s, not measured\n", warm.Duration)

	for r := range o.rounds {
		// Each receiver build is loaded right after the bare reference
		// (which stores nothing) in one round and after the JetStream
		// reference in the next: whichever follows a server that stores is
		// slowed by what that one left behind (the broker still writing
		// its messages out), and this way it falls on both builds alike.
		// (Before, the compared build followed the bare reference every
		// other round and this tree never did: against b8ff6f7, 8 rounds,
		// this tree / compared was 1.014 in the rounds where both followed
		// a server that stores and 0.864 in the others.)
		order := []*series{bare, recv, ref}
		if other != nil {
			order = append(order, other)
		}
		if r%2 == 1 {
			order = []*series{bare, ref, recv}
			if other != nil {
				order = []*series{bare, other, ref, recv}
			}
		}
		for _, s := range order {
			prof := ""
			switch {
			case r > 0 || o.cpuProfile == "":
			case s == recv:
				prof = o.cpuProfile
			case s == other:
				prof = o.cpuProfile + ".compared" // the same phase of the other build: go tool pprof -diff_base
			}
			if err := s.run(ctx, load, ns.proc, r+1, prof); err != nil {
				return err
			}
		}
	}
	fmt.Println()
	for _, s := range loaded {
		fmt.Printf("median     %-30s %s\n", s.label+":", median(s.results, rps))
	}
	recvRPS := median(recv.results, rps).RPS()

	// The duplicates are the products of the last round: the most recent,
	// as the catalogue's retries are (the receiver remembers the last
	// 100 000 ids it stored; older duplicates go to JetStream).
	last := recv.results[len(recv.results)-1]
	keys := make([]string, 0, len(last.Acked))
	for k := range last.Acked {
		keys = append(keys, k)
	}
	load.URL = recv.url
	dupLoad := load
	dupLoad.Keys = keys
	dups := loadgen.Run(ctx, dupLoad)
	fmt.Printf("%-28s %s\n", "receiver, duplicates only:", dups)

	mixLoad := load
	mixLoad.DupRatio = o.dupRatio
	mixed := loadgen.Run(ctx, mixLoad)
	fmt.Printf("%-28s %s\n", fmt.Sprintf("receiver, %.0f%% duplicates:", o.dupRatio*100), mixed)

	// Latency at half the receiver's maximum rate, for the receiver and,
	// at the same rate, the HTTP + JetStream reference: the tail that the
	// machine itself gives (HTTP, NATS, two shared cores) without the
	// receiver's work. Interleaved rounds again, medians compared.
	halfLoad := load
	halfLoad.Rate = recvRPS / 2
	half := &series{label: fmt.Sprintf("receiver at %.0f req/s", halfLoad.Rate), url: recv.url, srv: p}
	refHalf := &series{label: "HTTP+JetStream ref, same rate", url: ref.url, srv: ref.srv}
	for r := range o.rounds {
		prof := ""
		if r == 0 {
			prof = o.pacedProf
		}
		first, second := half, refHalf // swapping turns, as above
		if r%2 == 1 {
			first, second = refHalf, half
		}
		for _, s := range []*series{first, second} {
			p := ""
			if s == half {
				p = prof
			}
			if err := s.run(ctx, halfLoad, ns.proc, r+1, p); err != nil {
				return err
			}
		}
	}
	for _, s := range []*series{half, refHalf} {
		fmt.Printf("median p99 %-30s %s\n", s.label+":", median(s.results, p99))
	}
	peak := p.peakRSS()

	perRound := make([]string, len(recv.results))
	ratios := make([]float64, len(recv.results))
	for i := range recv.results {
		ratios[i] = recv.results[i].RPS() / ref.results[i].RPS()
		perRound[i] = fmt.Sprintf("%.2f", ratios[i])
	}
	fmt.Printf("\nreceiver / bare HTTP reference:          %.2f   (medians of %d rounds)\n", recvRPS/median(bare.results, rps).RPS(), o.rounds)
	fmt.Printf("receiver / HTTP+JetStream reference:     %.2f   (target >= 0.80; round by round %s; their geometric mean %.2f)\n",
		recvRPS/median(ref.results, rps).RPS(), strings.Join(perRound, ", "), geomean(ratios))
	if other != nil {
		printCompare(recv, other, ref)
	}
	fmt.Printf("duplicates / unique rate:                %.2f   (target >= 2)\n", dups.RPS()/recvRPS)
	fmt.Printf("p99 at 50%% of the maximum rate:          %s   (target < 10ms; median of %d rounds)\n", median(half.results, p99).Pct(99).Round(time.Microsecond), o.rounds)
	fmt.Printf("  the reference at the same rate:        %s\n", median(refHalf.results, p99).Pct(99).Round(time.Microsecond))
	fmt.Println("CPU per acknowledged request (server + nats-server), medians of the rounds:")
	for _, s := range append(loaded, half, refHalf) {
		fmt.Printf("  %-38s %s\n", s.label, median(s.costs, serverCPU))
	}
	fmt.Printf("receiver peak RSS:                       %.1f MiB   (target < 100 MiB)\n", float64(peak)/(1<<20))

	// Exactly once: every acknowledged product in the stream once, none twice.
	acked := map[string]bool{}
	sent := map[string]bool{}
	for _, r := range slices.Concat(warmed, recv.results, []loadgen.Result{dups, mixed}, half.results) {
		for k := range r.Acked {
			acked[k] = true
		}
		for k := range r.Sent {
			sent[k] = true
		}
	}
	if err := verify(ctx, js, acked, sent); err != nil {
		return fmt.Errorf("FAILED: %w", err)
	}
	fmt.Printf("verified: %d acknowledged products, each exactly once in CDSE_PRODUCTS\n", len(acked))
	return nil
}

// printCompare prints this tree's receiver against the other build. Each
// round loads both within seconds of each other, so the machine's drift
// between runs cancels in their ratio; the builds swap turns every other
// round (each after the bare reference once and after the JetStream one
// once), so the summary is the geometric mean over all rounds, each order
// weighing alike, and the means by order show how large that effect was.
func printCompare(recv, other, ref *series) {
	var all, first, second []float64
	perRound := make([]string, len(recv.results))
	for i := range recv.results {
		r := recv.results[i].RPS() / other.results[i].RPS()
		all = append(all, r)
		if i%2 == 0 {
			first = append(first, r)
		} else {
			second = append(second, r)
		}
		perRound[i] = fmt.Sprintf("%.3f", r)
	}
	refRPS := median(ref.results, rps).RPS()
	fmt.Printf("receiver / compared receiver:            %.3f   (geometric mean of the rounds' ratios; round by round %s)\n",
		geomean(all), strings.Join(perRound, ", "))
	fmt.Printf("  this tree loaded first: %.3f, second: %.3f\n", geomean(first), geomean(second))
	fmt.Printf("  each / HTTP+JetStream reference:       %.2f (this tree), %.2f (compared)\n",
		median(recv.results, rps).RPS()/refRPS, median(other.results, rps).RPS()/refRPS)
}

// geomean is the geometric mean of positive xs (NaN for none).
func geomean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += math.Log(x)
	}
	return math.Exp(sum / float64(len(xs)))
}

// natsProc is the nats-server process of the benchmark.
type natsProc struct{ *proc }

// ClientURL is where clients connect.
func (n natsProc) ClientURL() string { return "nats://" + n.addr }

func startNATS(ctx context.Context, tmp string, env []string) (natsProc, error) {
	ports, err := benchkit.FreePorts(1)
	if err != nil {
		return natsProc{}, err
	}
	port := ports[0]
	conf := filepath.Join(tmp, "nats-server.conf")
	cfg := fmt.Sprintf("listen: \"127.0.0.1:%s\"\nmax_payload: 8MB\njetstream { store_dir: %q }\n", port, filepath.Join(tmp, "nats"))
	if err := os.WriteFile(conf, []byte(cfg), 0o600); err != nil {
		return natsProc{}, err
	}
	p, err := startProc(ctx, filepath.Join(tmp, "nats-server"), []string{"-c", conf, "-l", filepath.Join(tmp, "nats-server.log")}, env, "")
	if err != nil {
		return natsProc{}, err
	}
	p.addr = "127.0.0.1:" + port
	n := natsProc{p}
	// It logs to stderr; readiness is a connection that works.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		nc, err := nats.Connect(n.ClientURL())
		if err == nil {
			nc.Close()
			return n, nil
		}
		if time.Now().After(deadline) {
			p.stop()
			return natsProc{}, fmt.Errorf("nats-server not ready: %w", err)
		}
	}
}

type proc struct {
	cmd   *exec.Cmd
	addr  string
	admin string
	peak  atomic.Int64
	done  chan struct{}
}

// startProc runs bin and waits for a stdout line containing marker; p.addr
// is then that whole line, for the caller to take the address from. An
// empty marker waits for nothing.
func startProc(ctx context.Context, bin string, args, env []string, marker string) (*proc, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		// Up to the marker line; the rest (a line per request) is discarded
		// unread, so this process spends nothing on it.
		for sc.Scan() {
			if line := sc.Bytes(); bytes.Contains(line, []byte(marker)) {
				found <- string(line)
				break
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	go p.sampleRSS()
	if marker == "" {
		return p, nil
	}
	select {
	case a := <-found:
		p.addr = strings.TrimSpace(a)
		return p, nil
	case <-time.After(30 * time.Second):
		p.stop()
		return nil, fmt.Errorf("%s did not start", bin)
	}
}

func startReceiver(ctx context.Context, bin, natsURL string, pprof bool, extraEnv ...string) (*proc, error) {
	env := []string{
		"RECEIVER_USERNAME=" + user, "RECEIVER_PASSWORD=" + password,
		"RECEIVER_ADDR=127.0.0.1:0", "RECEIVER_ADMIN_ADDR=127.0.0.1:0",
		"NATS_URL=" + natsURL, // logs as in production: JSON, info, a line per request
	}
	if pprof {
		env = append(env, "RECEIVER_PPROF=true")
	}
	env = append(env, extraEnv...)
	p, err := startProc(ctx, bin, nil, env, `"msg":"receiver started"`)
	if err != nil {
		return nil, err
	}
	// The JSON log line "receiver started" carries the addresses.
	var fields map[string]any
	if err := json.Unmarshal([]byte(p.addr), &fields); err != nil {
		p.stop()
		return nil, fmt.Errorf("start-up line: %w", err)
	}
	str := func(k string) string { v, _ := fields[k].(string); return v }
	p.addr, p.admin = str("webhook_addr"), str("admin_addr")
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + p.admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p, nil
			}
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, errors.New("receiver not ready")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *proc) sampleRSS() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
			if rss := benchkit.ProcStatus(p.cmd.Process.Pid, "VmRSS:"); rss > p.peak.Load() {
				p.peak.Store(rss)
			}
		}
	}
}

func (p *proc) peakRSS() int64 {
	if hwm := benchkit.ProcStatus(p.cmd.Process.Pid, "VmHWM:"); hwm > 0 {
		return hwm
	}
	return p.peak.Load()
}

func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	close(p.done)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Wait()
}

// procStatus reads a kB field of /proc/<pid>/status, in bytes.
// profile starts a CPU profile of the receiver for a phase of length d;
// the function it returns waits for it and reports where it went.
func profile(p *proc, d time.Duration, file string) func() {
	done := make(chan error, 1)
	go func() {
		done <- fetch("http://"+p.admin+"/debug/pprof/profile?seconds="+strconv.Itoa(max(int(d.Seconds())-1, 1)), file)
	}()
	return func() {
		if err := <-done; err != nil {
			fmt.Println("cpu profile:", err)
		} else {
			fmt.Println("cpu profile written to", file)
		}
	}
}

// settle waits until the previous phase's messages are written out, so
// that they do not slow the next phase's server: the page cache flushed to
// the disk (sync(2); the kernel's writeback of the broker's files is CPU no
// process is charged for), then, at most 10 s, until nats-server has gone
// a fifth of a second with at most one clock tick (10 ms) of CPU.
func settle(nats *proc) {
	syscall.Sync()
	deadline := time.Now().Add(10 * time.Second)
	last := cpuTime(nats.cmd.Process.Pid)
	for time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		now := cpuTime(nats.cmd.Process.Pid)
		if now-last <= 10*time.Millisecond {
			return
		}
		last = now
	}
}

// cpuCost is the CPU time per acknowledged request of a server process
// and of nats-server, over one phase.
type cpuCost struct{ server, nats time.Duration }

func (c cpuCost) String() string {
	return fmt.Sprintf("%6.1f µs + nats-server %5.1f µs", float64(c.server.Nanoseconds())/1e3, float64(c.nats.Nanoseconds())/1e3)
}

// meterCPU starts measuring the CPU time of server and nats; the function
// it returns ends the measurement and divides by the requests served.
func meterCPU(server, nats *proc) func(requests int) cpuCost {
	s0, n0 := cpuTime(server.cmd.Process.Pid), cpuTime(nats.cmd.Process.Pid)
	return func(requests int) cpuCost {
		if requests == 0 {
			return cpuCost{}
		}
		s1, n1 := cpuTime(server.cmd.Process.Pid), cpuTime(nats.cmd.Process.Pid)
		return cpuCost{(s1 - s0) / time.Duration(requests), (n1 - n0) / time.Duration(requests)}
	}
}

// cpuTime is the user + system CPU time pid has used (/proc/<pid>/stat,
// fields 14 and 15, in ticks of USER_HZ = 100 on Linux: 10 ms resolution,
// ample over a phase of seconds).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: count from after it.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

func openFDs(pid int) int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents)
}

func fetch(url, path string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}

// verify reads the Cdse-Product-Id of every message (headers only) and
// checks it against what the load generator saw acknowledged.
func verify(ctx context.Context, js jetstream.JetStream, acked, sent map[string]bool) error {
	s, err := js.Stream(ctx, "CDSE_PRODUCTS")
	if err != nil {
		return err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return err
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{HeadersOnly: true})
	if err != nil {
		return err
	}
	seen := make(map[string]int, info.State.Msgs)
	copies := map[string]int{}
	read := uint64(0)
	for read < info.State.Msgs {
		// No more than remain: a short batch would wait out FetchMaxWait.
		batch, err := cons.Fetch(int(min(1000, info.State.Msgs-read)), jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return err
		}
		n := 0
		for m := range batch.Messages() {
			// A named interest's copy (-receiver-env INTERESTS_FILE=...)
			// is counted apart: each interest stores a product once too.
			if name := m.Headers().Get("Cdse-Interest"); name != "" {
				copies[name+" "+m.Headers().Get("Cdse-Product-Id")]++
			} else {
				seen[m.Headers().Get("Cdse-Product-Id")]++
			}
			n++
		}
		if n == 0 {
			return fmt.Errorf("read %d of %d messages", read, info.State.Msgs)
		}
		read += uint64(n)
	}
	var problems []string
	for k := range acked {
		if seen[k] != 1 {
			problems = append(problems, fmt.Sprintf("acknowledged %s stored %d times", k, seen[k]))
		}
	}
	for k, n := range seen {
		if n > 1 || !sent[k] {
			problems = append(problems, fmt.Sprintf("%s stored %d times (sent: %v)", k, n, sent[k]))
		}
	}
	for k, n := range copies {
		if _, id, _ := strings.Cut(k, " "); n > 1 || seen[id] != 1 {
			problems = append(problems, fmt.Sprintf("interest copy %s stored %d times (its product %d times)", k, n, seen[id]))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d problems, first: %s", len(problems), problems[0])
	}
	if len(copies) > 0 {
		fmt.Printf("interest copies:                          %d, each once, each of a product stored once\n", len(copies))
	}
	return nil
}
