// Package loadgen posts notifications to a webhook with a fixed number of
// connections, for a fixed time or at a fixed rate, and reports throughput,
// latency percentiles and errors. Every request carries Basic auth and a
// realistic notification (a testdata fixture) with a fresh ProductId, or, in
// the given ratio, the ProductId of an earlier request (a duplicate). It
// speaks HTTP/1.1 over keep-alive connections with a client of its own (see
// conn), because it shares the machine's cores with the servers it measures.
package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Options of one run.
type Options struct {
	URL, User, Password string
	Template            []byte // a notification; its TemplateID is replaced per request
	TemplateID          string
	Conns               int
	Duration            time.Duration
	// Rate > 0 paces the requests (requests/s over all connections): an
	// open-loop load for latency at a given throughput.
	Rate float64
	// DupRatio is the share of requests that repeat an earlier ProductId.
	DupRatio float64
	// Keys, when set, are the ProductIds to send (cycled): for a run of pure
	// duplicates of what an earlier run stored.
	Keys []string
}

// Result of a run.
type Result struct {
	Requests, OK, Errors int
	Status               map[int]int
	Elapsed              time.Duration
	Latencies            []time.Duration // sorted
	// Acked are the ProductIds that got a 2xx.
	Acked map[string]bool
	Sent  map[string]bool
	// Err is set when the run could not start (a bad URL).
	Err error
}

// RPS is the rate of successful requests.
func (r Result) RPS() float64 { return float64(r.OK) / r.Elapsed.Seconds() }

// Pct returns the p-th percentile latency (0 < p <= 100).
func (r Result) Pct(p float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	i := int(float64(len(r.Latencies))*p/100+0.5) - 1
	return r.Latencies[min(max(i, 0), len(r.Latencies)-1)]
}

func (r Result) String() string {
	if r.Err != nil {
		return "run failed: " + r.Err.Error()
	}
	return fmt.Sprintf("%8.0f req/s  p50 %7s  p90 %7s  p99 %7s  ok %d  errors %d  statuses %v",
		r.RPS(), r.Pct(50).Round(time.Microsecond), r.Pct(90).Round(time.Microsecond), r.Pct(99).Round(time.Microsecond), r.OK, r.Errors, r.Status)
}

type worker struct {
	lat         []time.Duration
	ok, errs    int
	status      map[int]int
	acked, sent []string
}

// Run executes the load and returns when Duration has passed and every
// request in flight has been answered.
func Run(ctx context.Context, o Options) Result {
	t, err := newTarget(o.URL, o.User, o.Password)
	if err != nil {
		return Result{Err: err, Elapsed: time.Nanosecond}
	}
	// The template cut where its ProductId stands: a body is its parts
	// joined by a fresh id, built in a buffer of the worker's own.
	parts := [][]byte{o.Template}
	if o.TemplateID != "" {
		parts = bytes.Split(o.Template, []byte(o.TemplateID))
	}
	ctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()

	var tokens chan struct{}
	if o.Rate > 0 {
		tokens = make(chan struct{}, o.Conns)
		go pace(ctx, o.Rate, tokens)
	}
	var (
		mu     sync.Mutex
		recent []string // ProductIds already sent, for duplicates
	)
	workers := make([]*worker, o.Conns)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		wk := &worker{status: map[int]int{}}
		workers[w] = wk
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), uint64(start.UnixNano())))
			c := &conn{timeout: 30 * time.Second}
			defer c.close()
			var body []byte
			for i := 0; ; i++ {
				if tokens != nil {
					select {
					case <-tokens:
					case <-ctx.Done():
						return
					}
				} else if ctx.Err() != nil {
					return
				}
				var id string
				switch {
				case len(o.Keys) > 0:
					id = o.Keys[(w+i*o.Conns)%len(o.Keys)]
				case o.DupRatio > 0 && r.Float64() < o.DupRatio:
					mu.Lock()
					if len(recent) > 0 {
						id = recent[r.IntN(len(recent))]
					}
					mu.Unlock()
				}
				if id == "" {
					id = uuid.NewString()
					if o.DupRatio > 0 {
						mu.Lock()
						if len(recent) < 100_000 {
							recent = append(recent, id)
						} else {
							recent[r.IntN(len(recent))] = id
						}
						mu.Unlock()
					}
				}
				body = append(body[:0], parts[0]...)
				for _, p := range parts[1:] {
					body = append(append(body, id...), p...)
				}
				wk.sent = append(wk.sent, id)
				t0 := time.Now()
				code, err := c.do(t, body)
				if err != nil {
					wk.errs++
					continue
				}
				wk.lat = append(wk.lat, time.Since(t0))
				wk.status[code]++
				if code/100 == 2 {
					wk.ok++
					wk.acked = append(wk.acked, id)
				} else {
					wk.errs++
				}
			}
		}()
	}
	wg.Wait()
	res := Result{Elapsed: time.Since(start), Status: map[int]int{}, Acked: map[string]bool{}, Sent: map[string]bool{}}
	for _, wk := range workers {
		res.Latencies = append(res.Latencies, wk.lat...)
		res.OK += wk.ok
		res.Errors += wk.errs
		for k, v := range wk.status {
			res.Status[k] += v
		}
		for _, id := range wk.acked {
			res.Acked[id] = true
		}
		for _, id := range wk.sent {
			res.Sent[id] = true
		}
	}
	res.Requests = res.OK + res.Errors
	slices.Sort(res.Latencies)
	return res
}

// pace puts rate tokens a second into ch until ctx ends.
func pace(ctx context.Context, rate float64, ch chan<- struct{}) {
	// Fine-grained, so that requests are spread rather than sent in bursts
	// (a 5 ms tick at 3 500 req/s sent 17 at once and inflated the tail).
	const tick = time.Millisecond
	t := time.NewTicker(tick)
	defer t.Stop()
	start := time.Now()
	issued := 0
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			due := int(now.Sub(start).Seconds() * rate)
			for ; issued < due; issued++ {
				select {
				case ch <- struct{}{}:
				default: // all connections busy: the load is open-loop, drop
				}
			}
		}
	}
}
