package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/bench/benchkit"
	"github.com/cdse-jetstream/receiver/bench/loadgen"
)

// soak holds a steady rate well below capacity and samples the receiver's
// RSS, goroutines and open files every 10 s; it fails on any error, on
// growth between the first and the last third, or on a stream that does
// not hold exactly the acknowledged products.
func soak(ctx context.Context, tmp, natsURL string, js jetstream.JetStream, load loadgen.Options, o opts) error {
	p, err := startReceiver(ctx, filepath.Join(tmp, "receiver"), natsURL, false, strings.Fields(o.extraEnv)...)
	if err != nil {
		return err
	}
	defer p.stop()
	load.URL = "http://" + p.addr + "/notifications"
	load.Duration = o.soak
	load.Rate = o.soakRate
	load.DupRatio = 0.2

	type sample struct {
		at              time.Duration
		rss             int64
		goroutines, fds int
	}
	var samples []sample
	done := make(chan loadgen.Result, 1)
	start := time.Now()
	go func() { done <- loadgen.Run(ctx, load) }()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	fmt.Printf("soak: %s at %.0f req/s (20%% duplicates)\n%8s %10s %11s %5s\n", o.soak, o.soakRate, "elapsed", "RSS MiB", "goroutines", "fds")
	var res loadgen.Result
loop:
	for {
		select {
		case res = <-done:
			break loop
		case <-tick.C:
			s := sample{at: time.Since(start).Round(time.Second), rss: benchkit.ProcStatus(p.cmd.Process.Pid, "VmRSS:"), goroutines: goroutines(p.admin), fds: openFDs(p.cmd.Process.Pid)}
			samples = append(samples, s)
			fmt.Printf("%8s %10.1f %11d %5d\n", s.at, float64(s.rss)/(1<<20), s.goroutines, s.fds)
		}
	}
	fmt.Printf("%-28s %s\n", "soak load:", res)
	var problems []string
	if res.Errors > 0 {
		problems = append(problems, fmt.Sprintf("%d errors", res.Errors))
	}
	if n := len(samples); n >= 3 {
		// The first sample includes warm-up; compare the second to the last.
		base, last := samples[1], samples[n-1]
		if float64(last.rss) > float64(base.rss)*1.25+8<<20 {
			problems = append(problems, fmt.Sprintf("RSS grew from %.1f to %.1f MiB", float64(base.rss)/(1<<20), float64(last.rss)/(1<<20)))
		}
		if last.goroutines > base.goroutines+20 {
			problems = append(problems, fmt.Sprintf("goroutines grew from %d to %d", base.goroutines, last.goroutines))
		}
		if last.fds > base.fds+20 {
			problems = append(problems, fmt.Sprintf("open files grew from %d to %d", base.fds, last.fds))
		}
	}
	if err := verify(ctx, js, res.Acked, res.Sent); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return fmt.Errorf("soak FAILED: %s", strings.Join(problems, "; "))
	}
	fmt.Printf("soak passed: flat RSS, goroutines and files; %d products, each once in the stream\n", len(res.Acked))
	return nil
}

// goroutines reads go_goroutines from the receiver's /metrics.
func goroutines(admin string) int {
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return int(n)
		}
	}
	return -1
}
