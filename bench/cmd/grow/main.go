// Command grow measures what a growing stream costs (make bench-grow): for
// each stream size it fills the receiver's embedded store with that many
// product messages (the last -window of them carrying Nats-Msg-Ids inside
// the duplicate window, as a day of the catalogue does), restarts the
// receiver and measures the time until /readyz answers 200, the RSS once
// ready and after load, and the webhook's throughput and p99 under load.
// The same store is then opened by an external nats-server process, whose
// start-up and RSS are measured with the receiver against it. With
// -sync it also compares the embedded server's NATS_EMBEDDED_SYNC=always
// with the default on an empty stream.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/bench/benchkit"
	"github.com/cdse-jetstream/receiver/bench/loadgen"
	"github.com/cdse-jetstream/receiver/internal/stream/embedded"
	"github.com/cdse-jetstream/receiver/internal/testkit/natsproc"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "grow:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	sizes := flag.String("sizes", "0,100000,1000000", "stream sizes in messages, comma-separated")
	window := flag.Int("window", 200000, "messages with a Nats-Msg-Id inside the duplicate window (a day of the catalogue)")
	duration := flag.Duration("duration", 10*time.Second, "length of each load")
	conns := flag.Int("conns", 32, "concurrent connections of the load")
	syncCmp := flag.Bool("sync", false, "also compare NATS_EMBEDDED_SYNC=always with the default (empty stream)")
	flag.Parse()

	tmp, err := os.MkdirTemp("", "cdse-grow")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fmt.Println("building binaries ...")
	if err := benchkit.Build(tmp, benchkit.Bin{Out: "receiver", Pkg: "./cmd/receiver"}, benchkit.Bin{Out: "nats-server", Pkg: "github.com/nats-io/nats-server/v2"}); err != nil {
		return err
	}
	template, err := benchkit.Template()
	if err != nil {
		return err
	}
	load := loadgen.Options{User: benchkit.User, Password: benchkit.Password, Template: template, TemplateID: benchkit.FixtureID, Conns: *conns, Duration: *duration}

	if *syncCmp {
		for _, sync := range []string{"2m", "always", "2m", "always"} {
			dir := filepath.Join(tmp, "sync-"+sync)
			r, err := startReceiver(ctx, tmp, dir, "", "NATS_EMBEDDED_SYNC="+sync)
			if err != nil {
				return err
			}
			load.URL = r.webhook
			res := loadgen.Run(ctx, load)
			r.Kill()
			os.RemoveAll(dir)
			fmt.Printf("NATS_EMBEDDED_SYNC=%-7s %s\n", sync, res)
		}
		fmt.Println()
	}

	fmt.Println("embedded: the receiver restarted on the filled store: time to /readyz 200, RSS then, the load's req/s and p99, RSS after it")
	fmt.Println("external: a nats-server process on the same store: time until the stream answers, its RSS; the receiver's time to ready against it, the load's req/s")
	fmt.Printf("%-9s %-8s %-6s | %-8s %-7s %-6s %-7s %-7s | %-8s %-7s %-8s %-6s\n",
		"messages", "store", "fill", "ready", "RSS", "req/s", "p99", "RSS", "ready", "RSS", "receiver", "req/s")
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("-sizes: %w", err)
		}
		dir := filepath.Join(tmp, "size-"+s)
		// Fill through the embedded server of a first receiver.
		r, err := startReceiver(ctx, tmp, dir, "")
		if err != nil {
			return err
		}
		start := time.Now()
		// The stream takes publishes from the receiver's login only.
		login, err := embedded.ReadLogin(dir)
		if err != nil {
			r.Kill()
			return err
		}
		if err := fill(ctx, r.nats, nats.UserInfo(login.User, login.Password), n, *window, template); err != nil {
			r.Kill() // not left running on a store about to be removed
			return err
		}
		fillTime := time.Since(start)
		r.Kill()
		store := du(dir)

		// Restart on the filled store: time to ready, RSS, load.
		start = time.Now()
		r, err = startReceiver(ctx, tmp, dir, "")
		if err != nil {
			return err
		}
		ready := time.Since(start)
		rssReady := rss(r.Process)
		load.URL = r.webhook
		res := loadgen.Run(ctx, load)
		rssLoad := rss(r.Process)
		r.Kill()

		// The same store opened by an external nats-server process.
		ns, nsReady, err := startNATS(ctx, tmp, dir)
		if err != nil {
			return err
		}
		nsRSS := rss(ns.Process)
		start = time.Now()
		r, err = startReceiver(ctx, tmp, filepath.Join(tmp, "ext-"+s), ns.url)
		if err != nil {
			return err
		}
		rReady := time.Since(start)
		load.URL = r.webhook
		extRes := loadgen.Run(ctx, load)
		r.Kill()
		ns.Kill()

		fmt.Printf("%-9d %-8s %-6s | %-8s %-7s %-6.0f %-7s %-7s | %-8s %-7s %-8s %-6.0f\n",
			n, mib(store), fillTime.Round(time.Second), ready.Round(10*time.Millisecond), mib(rssReady), res.RPS(), res.Pct(99).Round(time.Millisecond), mib(rssLoad),
			nsReady.Round(10*time.Millisecond), mib(nsRSS), rReady.Round(10*time.Millisecond), extRes.RPS())
		os.RemoveAll(dir)
	}
	return nil
}

// fill publishes n messages to the product stream as fast as JetStream
// takes them; the last window carry a Nats-Msg-Id (the duplicate window
// holds them), the older ones not (their ids would have left it).
func fill(ctx context.Context, url string, login nats.Option, n, window int, body []byte) error {
	nc, err := nats.Connect(url, login)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		return err
	}
	for i := range n {
		m := &nats.Msg{Subject: "cdse.product.created.SENTINEL-2.S2MSI2A", Data: body, Header: nats.Header{}}
		m.Header.Set("Cdse-Event", "created")
		if i >= n-window {
			m.Header.Set(jetstream.MsgIDHeader, "created:"+uuid.NewString())
		}
		if _, err := js.PublishMsgAsync(m); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		// Wait for the acknowledgements batch by batch: once the page
		// cache is full the disk sets the pace, and too many outstanding
		// publishes stall.
		if i%4000 == 3999 {
			select {
			case <-js.PublishAsyncComplete():
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	select {
	case <-js.PublishAsyncComplete():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type receiver struct {
	*natsproc.Process
	webhook, nats string
}

// startReceiver runs the receiver binary on dir (embedded NATS) or
// against natsURL, and waits until /readyz answers 200.
func startReceiver(ctx context.Context, tmp, dir, natsURL string, env ...string) (*receiver, error) {
	ports, err := benchkit.FreePorts(3)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := &natsproc.Process{Name: "receiver", Path: filepath.Join(tmp, "receiver"), Log: filepath.Join(dir, "receiver.log"),
		Env: append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + tmp,
			"RECEIVER_ADDR=127.0.0.1:" + ports[0], "RECEIVER_ADMIN_ADDR=127.0.0.1:" + ports[1],
			"NATS_EMBEDDED_ADDR=127.0.0.1:" + ports[2], "RECEIVER_DATA_DIR=" + dir, "NATS_URL=" + natsURL,
			"RECEIVER_USERNAME=" + benchkit.User, "RECEIVER_PASSWORD=" + benchkit.Password, "LOG_LEVEL=warn"}, env...)}
	if err := p.Start(); err != nil {
		return nil, err
	}
	nurl := natsURL
	if nurl == "" {
		nurl = "nats://127.0.0.1:" + ports[2]
	}
	r := &receiver{Process: p, webhook: "http://127.0.0.1:" + ports[0] + "/notifications", nats: nurl}
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get("http://127.0.0.1:" + ports[1] + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil || !p.Running() {
			p.Kill()
			return nil, fmt.Errorf("receiver not ready:\n%s", p.LogTail(20))
		}
	}
}

type natsServer struct {
	*natsproc.Process
	url string
}

// startNATS opens the embedded store of dir with a nats-server process and
// returns the time until it answered a JetStream request.
func startNATS(ctx context.Context, tmp, dir string) (*natsServer, time.Duration, error) {
	ports, err := benchkit.FreePorts(1)
	if err != nil {
		return nil, 0, err
	}
	ns := &natsServer{Process: &natsproc.Process{Name: "nats-server", Path: filepath.Join(tmp, "nats-server"), Log: filepath.Join(tmp, "nats-server.log"),
		Args: []string{"-a", "127.0.0.1", "-p", ports[0], "-js", "-sd", dir}}, url: "nats://127.0.0.1:" + ports[0]}
	start := time.Now()
	if err := ns.Start(); err != nil {
		return nil, 0, err
	}
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if nc, err := nats.Connect(ns.url); err == nil {
			js, _ := jetstream.New(nc)
			_, err = js.Stream(ctx, "CDSE_PRODUCTS")
			nc.Close()
			if err == nil {
				return ns, time.Since(start), nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			ns.Kill()
			return nil, 0, fmt.Errorf("nats-server not ready:\n%s", ns.LogTail(20))
		}
	}
}

// rss is the process's resident set in bytes, 0 when unknown.
func rss(p *natsproc.Process) int64 { return benchkit.ProcStatus(p.Pid(), "VmRSS:") }

// du is the size of the files under dir.
func du(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += info.Size()
		}
		return nil
	})
	return n
}

func mib(n int64) string { return fmt.Sprintf("%.0fMiB", float64(n)/(1<<20)) }
