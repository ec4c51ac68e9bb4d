package app

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/ingest/source"
	"github.com/cdse-jetstream/receiver/internal/platform/buildinfo"
	"github.com/cdse-jetstream/receiver/internal/receiver/status"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
)

// stamped is the publisher a source is given: it notes when JetStream last
// confirmed one of the source's messages (stored or duplicate), for /status
// and cdse_receiver_last_stored_timestamp_seconds (one atomic store per
// publish). Duplicates answered from the local memory of stored ids do not
// count: nothing reached JetStream, which may be down.
//
// It also measures the catalogue's delivery: for every message stored
// (not a duplicate), how long after the event it reached the stream, by
// source and event (cdse_receiver_delivery_delay_seconds). Its count by
// source is what PUSH (and PULL) missed and the reconciler brought.
type stamped struct {
	pub   *publish.Publisher
	last  *atomic.Int64
	delay map[string]prometheus.Observer // by event, of this source
	// interests counts what each interest received (nil without them).
	interests counter
}

// counter is the interests' Router, counting what was stored.
type counter interface {
	Count(msgs []publish.Message, res []publish.Result)
}

func (s stamped) Publish(ctx context.Context, msgs []publish.Message) ([]publish.Result, error) {
	res, err := s.pub.Publish(ctx, msgs)
	if err == nil && publish.Confirmed(res) {
		now := time.Now()
		s.last.Store(now.UnixNano())
		s.observe(msgs, res, now)
		if s.interests != nil {
			s.interests.Count(msgs, res)
		}
	}
	return res, err
}

// observe notes the delivery delay of every message stored now (not the
// duplicates): 45 ns a message (BenchmarkDelayObserve).
func (s stamped) observe(msgs []publish.Message, res []publish.Result, now time.Time) {
	for i, r := range res {
		if m := &msgs[i]; !r.Duplicate && !m.Occurred.IsZero() {
			if o := s.delay[m.Event]; o != nil {
				o.Observe(max(now.Sub(m.Occurred).Seconds(), 0))
			}
		}
	}
}

// stamp is the publisher of one source.
func (a *App) stamp(source string) stamped {
	delay := map[string]prometheus.Observer{}
	for _, ev := range event.Kinds {
		delay[string(ev)] = a.delay.WithLabelValues(source, string(ev))
	}
	s := stamped{pub: a.pub, last: a.lastStored[source], delay: delay}
	if a.interests != nil {
		s.interests = a.interests
	}
	return s
}

// newDelay is the delivery delay histogram, the series of every source
// there from the start (alerts and rules see zeros, not nothing).
func newDelay(sources []string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "cdse_receiver_delivery_delay_seconds",
		Help: "For each product event stored (not a duplicate): when it was stored minus when the catalogue says it happened (PublicationDate for created, ModificationDate for modified, DeletionDate for deleted), by the source that brought it first.",
		// From seconds (PUSH) to days (the reconciler's lookback).
		Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400, 259200},
	}, []string{"source", "event"})
	for _, src := range sources {
		for _, ev := range event.Kinds {
			h.WithLabelValues(src, string(ev))
		}
	}
	return h
}

// newClocks is a clock per source, made before any source runs (the map is
// only read afterwards).
func newClocks(sources []string) map[string]*atomic.Int64 {
	m := make(map[string]*atomic.Int64, len(sources))
	for _, name := range sources {
		m[name] = new(atomic.Int64)
	}
	return m
}

// Status is what GET /status answers.
func (a *App) Status(ctx context.Context) status.Receiver {
	cfg := a.cfg
	st := status.Receiver{Version: buildinfo.Get().Version, Sources: []status.Source{}}
	if err := a.Ready(ctx); err != nil {
		st.NotReady = err.Error()
	} else {
		st.Ready = true
	}
	if cfg.Webhook {
		st.Webhook = &status.Webhook{Path: cfg.Path, Username: cfg.Username, TLS: cfg.TLSCertFile != "" || cfg.ACMEDomains != ""}
	}
	var (
		watermarks []watermarker
		ranges     *completeRanges // nil without the reconciler
	)
	for _, r := range a.sources {
		s := status.Source{Name: r.Name()}
		if sub, ok := r.Source.(source.Subscriber); ok {
			s.Subscription = sub.Subscription()
		}
		if ns := a.lastStored[r.Name()].Load(); ns != 0 {
			t := time.Unix(0, ns).UTC()
			s.LastStored = &t
		}
		if err := r.err(); err != nil {
			s.Stopped = err.Error()
		}
		if w, ok := r.Source.(watermarker); ok {
			watermarks = append(watermarks, w)
		}
		if rs, ok := r.Source.(reconcileSource); ok {
			ranges = rs.ranges
		}
		st.Sources = append(st.Sources, s)
	}
	if a.watch != nil {
		st.Subscription = a.watch.Status()
	}
	if a.interests != nil {
		set := a.interests.Current()
		c := set.Compile()
		in := &status.Interests{Count: set.Len(), Filter: c.Filter}
		for _, e := range c.SubscriptionEvents() {
			in.Events = append(in.Events, string(e))
		}
		st.Interests = in
	}
	if ranges == nil {
		st.Complete = noComplete(a.cfg, a.interests)
	}
	if a.pub == nil {
		return st
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if ranges != nil {
		st.Complete = ranges.status(ctx)
	}
	if a.versions != nil {
		v := a.versions.State(ctx)
		st.Versions = &status.Versions{Running: v.Running, Pending: v.Pending, LastDecision: v.LastDecision, Notices: v.Notices, Undecided: v.Undecided, Stopped: v.Stopped}
	}
	st.Stream = a.streamState(ctx, cfg.Stream)
	st.Quarantine = a.streamState(ctx, cfg.QuarantineStream)
	for _, w := range watermarks {
		for ev, t := range w.Watermarks(ctx) {
			if st.Watermarks == nil {
				st.Watermarks = map[string]time.Time{}
			}
			st.Watermarks[string(ev)] = t.UTC()
		}
	}
	return st
}

// watermarker is a source that keeps watermarks (the reconciler).
type watermarker interface {
	Watermarks(ctx context.Context) map[event.Kind]time.Time
}

// streamState is a stream's size as JetStream reports it now; nil when it
// cannot be read (NATS away, the stream missing).
func (a *App) streamState(ctx context.Context, name string) *status.Stream {
	s, err := a.pub.JetStream().Stream(ctx, name)
	if err != nil {
		return nil
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil
	}
	return &status.Stream{Name: name, Messages: info.State.Msgs, Bytes: info.State.Bytes, LastTime: info.State.LastTime.UTC()}
}

// lastStoredAny is when JetStream last confirmed a message of any source:
// the newest of the sources' clocks, or the process's start before the
// first (so that a receiver that has never stored anything is silent from
// its start, not from 1970).
func (a *App) lastStoredAny() time.Time {
	newest := a.started
	for _, c := range a.lastStored {
		if ns := c.Load(); ns > newest.UnixNano() {
			newest = time.Unix(0, ns)
		}
	}
	return newest
}

func (a *App) statusHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(a.Status(r.Context()))
}

// streamCollector exports the sizes of the product stream and the
// quarantine, read from JetStream at each scrape (two stream lookups), so
// that dashboards need no NATS exporter for them.
type streamCollector struct {
	a               *App
	messages, bytes *prometheus.Desc
}

func newStreamCollector(a *App) *streamCollector {
	return &streamCollector{a: a,
		messages: prometheus.NewDesc("cdse_receiver_stream_messages", "Messages in the stream (the product stream and the quarantine), read from JetStream at scrape time.", []string{"stream"}, nil),
		bytes:    prometheus.NewDesc("cdse_receiver_stream_bytes", "Bytes in the stream (the product stream and the quarantine), read from JetStream at scrape time.", []string{"stream"}, nil),
	}
}

func (c *streamCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.messages
	ch <- c.bytes
}

func (c *streamCollector) Collect(ch chan<- prometheus.Metric) {
	if c.a.pub == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, name := range []string{c.a.cfg.Stream, c.a.cfg.QuarantineStream} {
		if st := c.a.streamState(ctx, name); st != nil {
			ch <- prometheus.MustNewConstMetric(c.messages, prometheus.GaugeValue, float64(st.Messages), name)
			ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(st.Bytes), name)
		}
	}
}
