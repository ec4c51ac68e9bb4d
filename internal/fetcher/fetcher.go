// Package fetcher is the fetcher's lifecycle: it consumes the receiver's
// product stream with one durable consumer shared by every replica,
// downloads each product with internal/fetcher/fetch into the target, and
// publishes what became of it (fetched, or given up) on a stream of its
// own, acking the product message only after that event's PubAck. It
// serves /healthz, /readyz and /metrics, and stops within a bound.
package fetcher

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"
	"golang.org/x/sync/errgroup"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdselogin"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetch"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/fetcher/target"
	"github.com/cdse-jetstream/receiver/internal/platform/retry"
	"github.com/cdse-jetstream/receiver/internal/stream/natsconn"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
)

// engineAttempts are the tries of one delivery inside the engine (a cut
// download resumes); FETCH_MAX_ATTEMPTS counts deliveries.
const engineAttempts = 3

// Engine is what the fetcher needs of internal/fetcher/fetch (a *fetch.Fetcher).
type Engine interface {
	Fetch(ctx context.Context, p fetch.Product, key string, progress func(fetch.Progress)) (fetch.Result, error)
	// Find says what is stored under key of a product (id, name), and
	// Remove removes what Find found of it (fetch.Found).
	Find(ctx context.Context, key, id, name string) (fetch.Found, error)
	Remove(ctx context.Context, found fetch.Found) error
	SweepPartials(ctx context.Context, maxAge time.Duration) (int, error)
}

// Parts are what a fetcher runs with; Build makes them from the settings.
type Parts struct {
	Engine Engine
	Target target.Target
	// Catalogue reads a product's entity (fetcher get).
	Catalogue *catalogclient.Client
	// Files is which files of each product are stored (FETCH_FILES,
	// and the interests file's files: lists the command loads).
	Files Selection
}

// Build makes the engine, the target and the catalogue client of cfg;
// getenv reads the AWS_* settings of an S3 target; tune adjusts the
// engine's options (fetcher get's progress interval).
func Build(ctx context.Context, cfg fetchconfig.Config, getenv func(string) string, reg prometheus.Registerer, log logrus.FieldLogger, tune ...func(*fetch.Options)) (Parts, error) {
	target, err := OpenTarget(ctx, cfg, getenv)
	if err != nil {
		return Parts{}, err
	}
	if l, ok := target.(interface{ SetLog(logrus.FieldLogger) }); ok {
		l.SetLog(log) // what the S3 target says of its store's rules
	}
	tokens := cdselogin.NewPasswordSource(cdselogin.FromSettings(cfg.Login))
	cat := catalogclient.New(cfg.CDSECatalogueURL, tokens, nil)
	o := fetch.Options{
		DownloadURL: cfg.DownloadURL, TrustedHosts: cfg.TrustedHostList(), IdleTimeout: cfg.IdleTimeout,
		MaxAttempts: engineAttempts, RequireChecksum: cfg.RequireChecksum, Entity: cat.GetProduct,
		MaxRetryAfter: cfg.MaxRetryAfter, MaxHold: cfg.AckWait / 4, LockWait: cfg.AckWait,
		MinRate: cfg.MinRate, MinRateWindow: cfg.MinRateWindow, MaxUnknownSize: cfg.MaxUnknownSize,
	}
	for _, t := range tune {
		t(&o)
	}
	eng, err := fetch.New(o, tokens, target, reg, log)
	if err != nil {
		return Parts{}, err
	}
	return Parts{Engine: eng, Target: target, Catalogue: cat, Files: Selection{Default: cfg.FileList()}}, nil
}

// NATSOptions is how the fetcher (and its commands) reach NATS: one place
// for the settings' mapping, the permission hint included.
func NATSOptions(cfg fetchconfig.Config) natsconn.Options {
	o := natsconn.FromSettings(cfg.NATS)
	o.PermissionHint = PermissionHint
	return o
}

// App is one running fetcher.
type App struct {
	cfg   fetchconfig.Config
	parts Parts
	reg   *prometheus.Registry
	log   logrus.FieldLogger

	nc       *nats.Conn
	natsOpts natsconn.Options
	js       jetstream.JetStream
	health   *health
	spaceMu  sync.Mutex // one pause for a full target at a time
	probed   time.Time  // the last probe write that succeeded (checks only)
	outcomes *prometheus.CounterVec
	running  prometheus.Gauge
	oldest   prometheus.Gauge
	restored *prometheus.CounterVec
	// consumerEvery is how often the consumer is compared with what
	// declare sets (consumerCheckEvery; tests shorten it); checkNow
	// has it compared at once, when a pull is answered that the consumer
	// was deleted.
	consumerEvery time.Duration
	checkNow      chan struct{}
	// track is parts.Engine as /status sees it (status.go).
	track *tracked
	// now, once closed, cuts the running downloads of a shutdown at
	// once rather than at FETCH_SHUTDOWN_TIMEOUT (StopNowOn); nil never.
	now  <-chan struct{}
	keys keyLocks // the keys this replica is fetching
	// leases are the keys downloaded across replicas (lease.go); set
	// by declare.
	leases *leases
	// versions is the receiver's versions bucket as this fetcher reads
	// it, and what it decided (notices.go).
	versions versionsReader
}

// keyLocks lets one fetch of a key run at a time in this replica.
type keyLocks struct {
	mu   sync.Mutex
	held map[string]chan struct{} // closed when the key is released
}

// lock waits until no other fetch of key runs here (or ctx ends) and
// returns the release.
func (k *keyLocks) lock(ctx context.Context, key string) (func(), error) {
	for {
		k.mu.Lock()
		if k.held == nil {
			k.held = map[string]chan struct{}{}
		}
		busy, ok := k.held[key]
		if !ok {
			done := make(chan struct{})
			k.held[key] = done
			k.mu.Unlock()
			return func() {
				k.mu.Lock()
				delete(k.held, key)
				k.mu.Unlock()
				close(done)
			}, nil
		}
		k.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// StopNowOn has a shutdown cut the running downloads as soon as now is
// closed (the second Ctrl-C or SIGTERM), not at FETCH_SHUTDOWN_TIMEOUT:
// a user who asks twice means now.
func (a *App) StopNowOn(now <-chan struct{}) { a.now = now }

// New is a fetcher of cfg (validated) over parts; reg serves /metrics.
func New(cfg fetchconfig.Config, parts Parts, reg *prometheus.Registry, log logrus.FieldLogger) (*App, error) {
	a := &App{cfg: cfg, parts: parts, reg: reg, log: log,
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cdse_fetcher_events_total",
			Help: "Product events handled, by outcome: fetched, unchanged, deleted, kept, failed (given up), retried, deferred, skipped (superseded, not downloaded); and the receiver's notices: superseded (a superseded product removed), notice (acked, nothing to do)."}, []string{"outcome"}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cdse_fetcher_running", Help: "Product events being handled by this replica."}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cdse_fetcher_oldest_unfetched_age_seconds",
			Help: "Age of the oldest product event the fetcher's consumer has not acknowledged (stored in the stream that long ago), 0 when none: how far the fetchers are behind, whatever the cause."}),
		restored: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cdse_fetcher_consumer_restored_total",
			Help: "Times this replica found the fetcher's consumer changed (its filter, acks, max_ack_pending, max_deliver) or gone, and declared it again."}, []string{"found"}),
		consumerEvery: consumerCheckEvery,
		checkNow:      make(chan struct{}, 1),
	}
	a.versions.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cdse_fetcher_versions_total",
		Help: "Products of a known acquisition (a Cdse-Acquisition) looked up in the versions bucket before their download (FETCH_VERSIONS=latest, FETCH_ON_SUPERSEDED=delete), by decision: fetched (the latest known), skipped (superseded), unknown (not in the bucket yet, or no bucket: downloaded), undecided (its version not ordered with the latest: downloaded)."}, []string{"decision"})
	h, err := newHealth(reg)
	if err != nil {
		return nil, err
	}
	a.health = h
	a.track = newTracked(parts.Engine)
	a.parts.Engine = a.track
	h.set(checkConsumer, "stream and consumer not set up yet", false)
	h.set(checkNATS, "not connected yet", false)
	h.set(checkTarget, "not probed yet", false)
	if err := errors.Join(reg.Register(a.outcomes), reg.Register(a.running), reg.Register(a.oldest), reg.Register(a.restored), reg.Register(a.versions.decisions)); err != nil {
		return nil, err
	}
	return a, nil
}

// Run serves until ctx ends, then stops taking work and gives running
// downloads FETCH_SHUTDOWN_TIMEOUT before cutting them (or less: see
// StopNowOn); their messages are redelivered, and resume from the partial
// bytes where the target keeps them (a directory, not S3).
func (a *App) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", a.cfg.AdminAddr)
	if err != nil {
		// The setting to change, not only the address: a second fetcher
		// beside the first (or the receiver's port) is the usual cause.
		if errors.Is(err, syscall.EADDRINUSE) {
			err = fmt.Errorf("%w (another process listens there: set FETCH_ADMIN_ADDR to a free address)", err)
		}
		return fmt.Errorf("admin listener, FETCH_ADMIN_ADDR %s: %w", a.cfg.AdminAddr, err)
	}
	a.natsOpts = NATSOptions(a.cfg)
	nc, err := natsconn.Connect(a.natsOpts, a.log)
	if err != nil {
		ln.Close()
		return err
	}
	defer nc.Close()
	a.nc = nc
	if a.js, err = jetstream.New(nc); err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: a.admin(), ReadHeaderTimeout: 5 * time.Second}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("admin server: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	})
	g.Go(func() error { return a.consume(gctx) })
	g.Go(func() error { a.sweep(gctx); return nil })
	g.Go(func() error { a.checks(gctx); return nil })
	g.Go(func() error { a.watchNATS(gctx); return nil })
	return g.Wait()
}

// sweepEvery is how often the target's stale partials are looked for
// after the sweep at start.
const sweepEvery = time.Hour

// sweep removes what unfinished downloads left in the target for
// FETCH_PARTIAL_MAX_AGE (a replica killed mid-download, a product no
// longer fetched), at start and every sweepEvery, until ctx ends. Each
// replica sweeps; an upload another one removed first is not counted.
func (a *App) sweep(ctx context.Context) {
	retry.Every(ctx, sweepEvery, true, func() {
		n, err := a.parts.Engine.SweepPartials(ctx, a.cfg.PartialMaxAge)
		switch {
		case err != nil && ctx.Err() == nil:
			a.log.WithError(err).Warn("cannot sweep the target's stale partial downloads; trying again later")
		case n > 0:
			a.log.WithFields(logrus.Fields{"removed": n, "older_than": a.cfg.PartialMaxAge.String()}).Info("stale partial downloads removed from the target")
		}
	})
}

// setNotReady has /readyz answer 503 with why on the consumer check; ""
// makes it pass.
func (a *App) setNotReady(why string) { a.health.set(checkConsumer, why, false) }

// PermissionHint is what to fix when NATS refuses the fetcher (or its
// failed verbs) a right.
const PermissionHint = "the fetcher's NATS user lacks a right it needs: beside the receiver's embedded NATS, set NATS_EMBEDDED_FETCHER_USER and NATS_EMBEDDED_FETCHER_PASSWORD on the receiver and the same as NATS_USER and NATS_PASSWORD on the fetcher; on your own NATS, grant this user the fetcher's rights (docs/fetching.md)"

// setUp declares the fetcher's stream and its consumer on the product
// stream, retrying until NATS answers or ctx ends.
func (a *App) setUp(ctx context.Context) (jetstream.Consumer, error) {
	b := retry.Backoff{First: time.Second, Max: 30 * time.Second}
	for {
		c, err := a.declare(ctx, 0)
		if err == nil {
			return c, nil
		}
		if errors.Is(err, topology.ErrNotOwner) {
			return nil, err // a setting to change, not a failure to retry
		}
		err = natsconn.Explain(a.nc, a.natsOpts, err)
		if a.nc.IsClosed() {
			// The client gave up (the login refused twice): only a
			// restart with other settings can change that.
			return nil, err
		}
		a.log.WithError(err).Warn("cannot set up the fetcher's stream and consumer; retrying")
		if err := retry.Sleep(ctx, b.Next()); err != nil {
			return nil, err
		}
	}
}

// declare creates or updates the fetcher's stream and its consumer. A
// consumer that does not exist starts at FETCH_START, or at stream
// sequence resumeAt when not 0: where one that was lost had got to.
func (a *App) declare(ctx context.Context, resumeAt uint64) (jetstream.Consumer, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// The stream records the product stream it serves, as the receiver's
	// complete stream does: a second deployment (staging's receiver and
	// fetcher beside production's) left with the default FETCH_STREAM is
	// refused instead of mixing its fetched events into the first one's.
	_, err := topology.EnsureOwned(ctx, a.js, jetstream.StreamConfig{
		Name:        a.cfg.Stream,
		Description: "the fetcher's events: products stored, product events given up",
		Subjects:    []string{a.cfg.FetchedPrefix + ".>", a.cfg.FailedPrefix + ".>"},
		Storage:     jetstream.FileStorage,
		Duplicates:  a.cfg.DedupeWindow,
	}, a.cfg.ProductStream.Stream, "FETCH_STREAM, FETCH_FETCHED_PREFIX and FETCH_FAILED_PREFIX to a stream and subjects of this fetcher's own")
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", a.cfg.Stream, err)
	}
	if err := a.declareLeases(ctx); err != nil {
		return nil, err
	}
	a.checkNotices(ctx)
	cc := a.consumerConfig()
	old, err := a.js.Consumer(ctx, a.cfg.ProductStream.Stream, a.cfg.FetchConsumer)
	switch {
	case err == nil:
		// Where a consumer starts cannot change: FETCH_START applies to
		// its creation only (resumeAt to its re-creation).
		info := old.CachedInfo()
		cc.DeliverPolicy, cc.OptStartTime, cc.OptStartSeq = info.Config.DeliverPolicy, info.Config.OptStartTime, info.Config.OptStartSeq
	case errors.Is(err, jetstream.ErrConsumerNotFound) && resumeAt > 0:
		cc.DeliverPolicy, cc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, resumeAt
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		at, _ := a.cfg.StartTime()
		switch a.cfg.Start {
		case "new":
			cc.DeliverPolicy = jetstream.DeliverNewPolicy
			if s, err := a.js.Stream(ctx, a.cfg.ProductStream.Stream); err == nil {
				a.log.WithField("messages_left", s.CachedInfo().State.Msgs).Info("FETCH_START=new: the product events already on the stream are not fetched (FETCH_START=all or a time fetches them)")
			}
		case "all":
			cc.DeliverPolicy = jetstream.DeliverAllPolicy
		default:
			cc.DeliverPolicy, cc.OptStartTime = jetstream.DeliverByStartTimePolicy, &at
		}
	default:
		return nil, fmt.Errorf("consumer %s: %w", a.cfg.FetchConsumer, err)
	}
	c, err := a.js.CreateOrUpdateConsumer(ctx, a.cfg.ProductStream.Stream, cc)
	if err != nil {
		return nil, fmt.Errorf("consumer %s on %s: %w", a.cfg.FetchConsumer, a.cfg.ProductStream.Stream, err)
	}
	return c, nil
}

// consumerConfig is the fetcher's consumer as declare sets it, but where
// it starts.
func (a *App) consumerConfig() jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:        a.cfg.FetchConsumer,
		Description:    "fetcher: downloads each product event",
		FilterSubjects: ConsumerSubjects(a.cfg),
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        a.cfg.AckWait,
		// The deployment-wide cap on downloads: NATS delivers no more
		// unacked messages than this to all replicas together.
		MaxAckPending: a.cfg.Concurrency,
		MaxDeliver:    -1, // attempts are counted by NumDelivered, to publish the given-up event
	}
}

// ConsumerSubjects are the fetcher consumer's filter subjects: the product
// subjects of FETCH_SUBJECTS (or their default), the consumer's retry
// subject, <event.FetchRetryPrefix>.<NATS_STREAM>.<FETCH_CONSUMER>.>, where `fetcher
// failed retry` puts given-up events back, and with
// FETCH_ON_SUPERSEDED=delete the receiver's notices,
// <RECEIVER_VERSIONS_SUBJECT_PREFIX>.> (each unless a subject listed
// already covers it: NATS refuses overlapping filters).
func ConsumerSubjects(cfg fetchconfig.Config) []string {
	subjects := cfg.SubjectList()
	more := []string{event.FetchRetrySubjects(cfg.ProductStream.Stream) + "." + cfg.FetchConsumer + ".>"}
	if cfg.ReadsNotices() {
		more = append(more, cfg.VersionsPrefix+".>")
	}
	for _, m := range more {
		if !slices.ContainsFunc(subjects, func(s string) bool { return event.SubjectCovers(s, m) }) {
			subjects = append(subjects, m)
		}
	}
	return subjects
}

// consume takes product events until ctx ends; each runs in its own
// goroutine, at most FETCH_CONCURRENCY at once here (NATS caps them across
// replicas).
func (a *App) consume(ctx context.Context) error {
	c, err := a.setUp(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // ctx ended first
		}
		return err // the stream is another deployment's: the fetcher stops, never ready
	}
	a.health.set(checkConsumer, "", false)
	defer a.health.set(checkConsumer, "stopping", false)
	go a.watchBacklog(ctx, c)
	// work outlives ctx by FETCH_SHUTDOWN_TIMEOUT: running downloads may
	// end after SIGTERM, and are cut after that.
	work, cut := context.WithCancel(context.WithoutCancel(ctx))
	defer cut()
	sem := make(chan struct{}, a.cfg.Concurrency)
	var wg sync.WaitGroup
	var busy atomic.Int64 // handlers running, for the shutdown's countdown
	handler := func(m jetstream.Msg) {
		if ctx.Err() != nil {
			_ = m.Nak() // buffered while stopping: to another replica at once
			return
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			_ = m.Nak()
			return
		}
		wg.Add(1)
		busy.Add(1)
		go func() {
			defer func() { <-sem; busy.Add(-1); wg.Done() }()
			a.running.Inc()
			defer a.running.Dec()
			a.handle(work, m)
		}()
	}
	opts := []jetstream.PullConsumeOpt{jetstream.PullMaxMessages(a.cfg.Concurrency), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		a.log.WithError(err).Debug("consumer")
		if errors.Is(err, jetstream.ErrConsumerDeleted) {
			// This consumption has ended: the watch restores the
			// consumer now rather than at its next look.
			select {
			case a.checkNow <- struct{}{}:
			default:
			}
		}
	})}
	cc, err := c.Consume(handler, opts...)
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	// A consumer deleted (and re-created) ends the consumption of the old
	// one: the watch has it started again on the new one. Only the watch
	// changes cc, and it has returned before the drain below reads it.
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		a.watchConsumer(ctx, c, func(c jetstream.Consumer) error {
			cc.Stop()
			next, err := c.Consume(handler, opts...)
			if err != nil {
				return fmt.Errorf("consume: %w", err)
			}
			cc = next
			return nil
		})
	}()
	<-ctx.Done()
	<-watched
	// Drain hands the messages already buffered to the callback, which
	// Naks them (rather than leaving them to AckWait); no new ones come.
	cc.Drain()
	select {
	case <-cc.Closed():
	case <-time.After(5 * time.Second):
		cc.Stop()
	}
	a.log.Info("stopping: no new product events; waiting for the running downloads")
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	a.waitOrCut(done, busy.Load, cut)
	return nil
}

// countdownEvery is how often a shutdown says what it waits for.
const countdownEvery = 5 * time.Second

// waitOrCut waits for done (the running handlers ended) until
// FETCH_SHUTDOWN_TIMEOUT or a.now, then cuts them. Meanwhile it says,
// every countdownEvery, how many are running, when they are cut, and
// how to stop at once: a silent wait of 30 s after Ctrl-C looks hung.
func (a *App) waitOrCut(done <-chan struct{}, running func() int64, cut func()) {
	deadline := time.Now().Add(a.cfg.ShutdownTimeout)
	timeout := time.NewTimer(a.cfg.ShutdownTimeout)
	defer timeout.Stop()
	tick := time.NewTicker(countdownEvery)
	defer tick.Stop()
	say := func() {
		n := running()
		if n == 0 {
			return // ending: done is near
		}
		left := time.Until(deadline).Round(time.Second)
		a.log.WithFields(logrus.Fields{"running": n, "cut_in": left.String()}).
			Infof("stopping: %d %s running, cut in %ds; Ctrl-C again to stop now", n, plural(n, "download", "downloads"), int(left.Seconds()))
	}
	say()
	for waiting := true; waiting; {
		select {
		case <-done:
			return
		case <-tick.C:
			say()
		case <-timeout.C:
			a.log.Warn("running downloads cut at FETCH_SHUTDOWN_TIMEOUT; " + a.onRedelivery())
			waiting = false
		case <-a.now:
			a.log.Warn("stopping now (a second signal): running downloads cut; " + a.onRedelivery())
			waiting = false
		}
	}
	cut()
	// A cut download ends at once; S3's abort of its multipart upload
	// takes a request, well within this.
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		a.log.Error("downloads did not end after being cut")
	}
}

// onRedelivery says what becomes of a cut download, as the target keeps
// partial bytes across processes or not.
func (a *App) onRedelivery() string {
	if a.parts.Target != nil {
		if _, keeps := a.parts.Target.Partial(""); !keeps {
			return "their multipart uploads are aborted (S3 keeps no partial upload): each product restarts from the start on redelivery"
		}
	}
	return "their partial files are kept: each download resumes from there on redelivery"
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// backlogEvery is how often the oldest unfetched event is looked up.
const backlogEvery = 15 * time.Second

// watchBacklog keeps cdse_fetcher_oldest_unfetched_age_seconds until ctx
// ends.
func (a *App) watchBacklog(ctx context.Context, c jetstream.Consumer) {
	retry.Every(ctx, backlogEvery, true, func() {
		if age, err := a.oldestUnfetched(ctx, c); err != nil {
			a.log.WithError(err).Debug("cannot look up the oldest unfetched event")
		} else {
			a.oldest.Set(age.Seconds())
		}
	})
}

// oldestUnfetched is the age of the first message after the consumer's ack
// floor on its filter subjects: the oldest one not acknowledged (waiting,
// being fetched, or Nak'd to be tried later); 0 when none is. Every
// replica reports the same consumer's; the alert takes the maximum.
func (a *App) oldestUnfetched(ctx context.Context, c jetstream.Consumer) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	info, err := c.Info(ctx)
	if err != nil {
		return 0, err
	}
	if info.NumPending == 0 && info.NumAckPending == 0 {
		return 0, nil
	}
	s, err := a.js.Stream(ctx, a.cfg.ProductStream.Stream)
	if err != nil {
		return 0, err
	}
	subjects := info.Config.FilterSubjects
	if len(subjects) == 0 {
		subjects = []string{cmp.Or(info.Config.FilterSubject, ">")}
	}
	var first time.Time
	for _, subj := range subjects {
		// The next message on subj from the ack floor on (a direct
		// get's next_by_subj: one message, whatever the backlog).
		m, err := s.GetMsg(ctx, info.AckFloor.Stream+1, jetstream.WithGetMsgSubject(subj))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if first.IsZero() || m.Time.Before(first) {
			first = m.Time
		}
	}
	if first.IsZero() {
		return 0, nil
	}
	return max(time.Since(first), 0), nil
}

// handle is one product event, to its ack: fetched (or deleted) and its
// event published, given up and published as failed, or Nak'd to be
// tried again later.
func (a *App) handle(ctx context.Context, m jetstream.Msg) {
	md, err := m.Metadata()
	if err != nil {
		a.log.WithError(err).Error("product message without metadata")
		_ = m.Term()
		return
	}
	log := a.log.WithFields(logrus.Fields{"stream_seq": md.Sequence.Stream, "delivery": md.NumDelivered})
	n, err := event.Decode(m)
	if errors.Is(err, event.ErrNotice) {
		// A notice of the receiver's (notices.go): never a product to
		// download, nor one to give up.
		a.handleNotice(ctx, log, m, md)
		return
	}
	if err != nil {
		a.giveUp(ctx, log, m, md, nil, "undecodable: "+err.Error())
		return
	}
	log = log.WithFields(logrus.Fields{"product_id": n.ProductID, "product_name": n.ProductName, "event": n.Event})
	key := Key(a.cfg.KeyTemplate, n)
	var pub *nats.Msg
	// release ends the hold on the key (once; the fetch or the removal
	// gives it). The key stays held until the product's event is
	// published and its message acked: a fetch and a removal of one
	// product never interleave between the work and its event. Before a
	// message is given back (Nak, a failure's delay), the hold ends
	// first: its heartbeat's in-progress ack after the Nak would reset
	// the redelivery's delay to the ack wait.
	release := func() {}
	defer func() { release() }()
	switch n.Event {
	case event.Deleted:
		if a.cfg.OnDelete != "delete" {
			a.outcomes.WithLabelValues("kept").Inc()
			_ = m.Ack()
			return
		}
		url, kept, rel, err := a.removeDeleted(ctx, log, m, n, key)
		release = sync.OnceFunc(rel)
		switch {
		case err != nil: // an unsafe name is permanent: no retry makes it one
			a.failed(ctx, log, m, md, n, err, "removal of a deleted product", release)
			return
		case kept:
			a.outcomes.WithLabelValues("kept").Inc()
			_ = m.Ack()
			return
		}
		a.outcomes.WithLabelValues("deleted").Inc()
		pub = deletedMsg(a.cfg.FetchedPrefix, a.cfg.FetchConsumer, n, m.Headers(), url)
	default:
		res, rel, err := a.fetch(ctx, log, m, n, key)
		release = sync.OnceFunc(rel)
		if skipped := (*skipError)(nil); errors.As(err, &skipped) {
			// Superseded: nothing downloaded, and said so in its
			// fetched event (published and acked below).
			a.outcomes.WithLabelValues("skipped").Inc()
			log.WithFields(logrus.Fields{"superseded_by": skipped.by.ID, "superseded_by_name": skipped.by.Name}).Info("product superseded: not downloaded")
			pub = skippedMsg(a.cfg.FetchedPrefix, a.cfg.FetchConsumer, n, m.Headers(), skipped.by)
			break
		}
		var deferred *fetch.DeferError
		switch {
		case err != nil && errors.As(err, &deferred):
			// A long Retry-After: the product's message goes back
			// with that wait and the slot is free meanwhile.
			a.outcomes.WithLabelValues("deferred").Inc()
			log.WithError(err).WithField("retry_in", deferred.Wait.Round(time.Second).String()).Warn("the download service asks to wait; the product event is given back until then")
			release()
			_ = m.NakWithDelay(deferred.Wait)
			return
		case err != nil: // a download stopped keeps its partial
			a.failed(ctx, log, m, md, n, err, "download", release)
			return
		}
		outcome := "fetched"
		if res.AlreadyThere {
			outcome = "unchanged"
		}
		a.outcomes.WithLabelValues(outcome).Inc()
		stored := log.WithFields(logrus.Fields{"url": res.URL, "size": res.Size, "took": res.Took.String(), "already_there": res.AlreadyThere})
		if res.Unverified != "" {
			// Said apart: a product stored without a checksum is not
			// what "stored" means everywhere else.
			stored.WithField("unverified", res.Unverified).Warn("product stored unverified")
		} else {
			stored.Info("product stored")
		}
		item, err := a.writeItem(ctx, n, key, res)
		if err != nil {
			// The product is stored; the redelivery finds it unchanged
			// and writes its item then.
			release()
			a.retryLater(ctx, log, m, md, n, err)
			return
		}
		pub = fetchedMsg(a.cfg.FetchedPrefix, a.cfg.FetchConsumer, n, m.Headers(), res, item)
	}
	// The ack only after the PubAck: a crash between them redelivers the
	// product event, whose event the stream then drops as a duplicate.
	if err := a.publish(ctx, pub); err != nil {
		release()
		a.retryLater(ctx, log, m, md, n, err)
		return
	}
	if err := m.DoubleAck(ctx); err != nil {
		log.WithError(err).Warn("ack not confirmed; the event may be redelivered (its fetched event is deduplicated)")
	}
}

// failed ends the handling of m, whose work (what: a download, a
// removal) ended in err: stopped, when NATS or the key's lease was lost
// (not acknowledged either way: NATS gives it, or gave it already, to a
// replica that can reach it); given up, when no retry mends it; else
// given back to be tried later. The hold ends (release) before the
// message is given back or up.
func (a *App) failed(ctx context.Context, log logrus.FieldLogger, m jetstream.Msg, md *jetstream.MsgMetadata, n *event.Notification, err error, what string, release func()) {
	switch {
	case errors.Is(err, errCutOff), errors.Is(err, errLapsed), errors.Is(err, errLeaseLost):
		log.WithError(err).Error(what + " stopped")
	case fetch.Permanent(err):
		release()
		a.giveUp(ctx, log, m, md, n, err.Error())
	default:
		release()
		a.retryLater(ctx, log, m, md, n, err)
	}
}

// removeDeleted removes the product stored under key (a deleted event,
// removeStored): kept says that only another product's is stored there
// (the name re-published with a new id), and nothing was removed. url
// names what was removed, as the product's fetched event named it (the
// folder's with a trailing /, else the archive's); the archive's when
// nothing was there (a redelivery after the removal, whose event is
// published all the same).
func (a *App) removeDeleted(ctx context.Context, log logrus.FieldLogger, m jetstream.Msg, n *event.Notification, key string) (url string, kept bool, release func(), err error) {
	found, release, err := a.removeStored(ctx, log, m, key, n.ProductID, n.ProductName, "deleted")
	if err != nil {
		return "", false, release, err
	}
	if !found.Any() && len(found.Others) > 0 {
		return "", true, release, nil
	}
	return cmp.Or(found.URL(), a.parts.Target.URL(key)), false, release, nil
}

// removeStored removes what is stored under key of product id (named
// name): a deleted product, or a superseded one (what says which, for the
// log). It holds the key as a download does: a download of it under way,
// here or in another replica, ends first; removed meanwhile, its verified
// files would be followed by the rest and the manifest, a folder that
// says complete and is not. The archive and the folder are each removed
// only when they record the product's id (fetch.Find); what a download of
// the key cut short left goes all the same. The STAC item goes first,
// unless only another product is stored there (the item is then its): a
// removal cut midway leaves the product, found and removed again on
// redelivery, never an item naming nothing. The item recording another
// product's id is that product's: kept.
//
// release ends the hold (never nil): the caller holds the key until what
// it publishes of the removal is published.
func (a *App) removeStored(ctx context.Context, log logrus.FieldLogger, m jetstream.Msg, key, id, name, what string) (fetch.Found, func(), error) {
	ctx, release, err := a.hold(ctx, log, m, key)
	if err != nil {
		return fetch.Found{}, func() {}, err
	}
	found, err := a.parts.Engine.Find(ctx, key, id, name)
	if err != nil {
		return found, release, err
	}
	if len(found.Others) > 0 {
		log.WithField("kept", found.Others).Warn("another product is stored under the " + what + " one's key: kept")
	}
	if found.Any() || len(found.Others) == 0 {
		st, ok, err := a.parts.Target.Stat(ctx, ItemKey(key))
		if err != nil {
			return found, release, err
		}
		if ok && (st.ProductID == "" || st.ProductID == id) {
			if err := a.parts.Target.Delete(ctx, ItemKey(key)); err != nil {
				return found, release, err
			}
		}
	}
	return found, release, a.parts.Engine.Remove(ctx, found)
}

// fetch is the download of n's product under key, its message kept
// alive by acknowledged in-progress acks: it waits while a check holds
// the work, and pauses (keeping the message) while the target is full.
// Cut off from NATS, it stops with errCutOff. release ends the hold
// (never nil): the caller holds the key until the product's item is
// written and its event published.
func (a *App) fetch(ctx context.Context, log logrus.FieldLogger, m jetstream.Msg, n *event.Notification, key string) (_ fetch.Result, release func(), _ error) {
	ctx, release, err := a.hold(ctx, log, m, key)
	if err != nil {
		return fetch.Result{}, func() {}, err
	}
	// Looked up holding the key: a notice of this product handled
	// meanwhile (FETCH_ON_SUPERSEDED=delete) waits for this fetch, or
	// was handled before it and is known here.
	if by, ok := a.superseded(ctx, log, n); ok {
		return fetch.Result{}, release, &skipError{by: by}
	}
	for {
		if err := a.health.waitUnheld(ctx); err != nil {
			return fetch.Result{}, release, cmp.Or(context.Cause(ctx), err)
		}
		if ck, ok := a.parts.Target.(Checker); ok {
			// Before each product, not only on the checks' interval: a
			// volume unmounted since is never written under.
			a.checkMoved(ck)
			if err := ck.Check(); err != nil {
				continue
			}
		}
		p := ProductOf(n)
		p.Files = a.parts.Files.For(n.Interest)
		res, err := a.parts.Engine.Fetch(ctx, p, key, nil)
		if errors.Is(err, target.ErrNoSpace) && !fetch.Permanent(err) && ctx.Err() == nil {
			a.pauseNoSpace(ctx, a.roomNeeded(key, p, err), err)
			continue
		}
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, context.Cause(ctx))
		}
		return res, release, err
	}
}

// minRoom is the least a pause for room waits for: what the directory
// target checks before each 8 MiB written (and a write's buffer).
const minRoom = 9 << 20

// roomNeeded is the room a download of p under key that found the target
// full waits for: what the target said the object still needs; else the
// product's length less the partial kept of it (with that partial on the
// same file system, the whole length may never be free); at least minRoom.
func (a *App) roomNeeded(key string, p fetch.Product, err error) int64 {
	var ns *target.NoSpaceError
	if errors.As(err, &ns) && ns.Need > 0 {
		return max(ns.Need, minRoom)
	}
	if len(p.Files) > 0 {
		return minRoom // one of its files, whose size the error did not say
	}
	need := p.ContentLength
	if held, ok := a.parts.Target.Partial(key); ok {
		need -= held
	}
	return max(need, minRoom)
}

// hold takes key for the work of m, its message kept alive meanwhile by
// acknowledged in-progress acks: one fetch (or removal) of a key at a
// time in this replica, and across replicas by its lease. The context
// returned is cut when NATS or the lease is lost (its cause says which);
// release ends the hold.
func (a *App) hold(ctx context.Context, log logrus.FieldLogger, m jetstream.Msg, key string) (context.Context, func(), error) {
	ctx, cut := context.WithCancelCause(ctx)
	go a.heartbeat(ctx, m, cut)
	// One fetch of a key at a time here: a product's created and
	// modified events taken together would otherwise download it twice
	// at once into S3 (a directory's partial is locked); the second
	// finds it stored.
	release, err := a.keys.lock(ctx, key)
	if err != nil {
		err = cmp.Or(context.Cause(ctx), err)
		cut(nil)
		return nil, nil, err
	}
	// And one across replicas: the same two events taken by two of them.
	var seq uint64
	if md, err := m.Metadata(); err == nil {
		seq = md.Sequence.Stream
	}
	ls, err := a.leases.acquire(ctx, log, key, seq)
	if err != nil {
		err = cmp.Or(context.Cause(ctx), err)
		release()
		cut(nil)
		return nil, nil, err
	}
	ls.keep(ctx, a.cfg.AckWait, cut)
	return ctx, func() {
		ls.release(ctx)
		release()
		cut(nil)
	}, nil
}

func (a *App) publish(ctx context.Context, msg *nats.Msg) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := a.js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("publish %s: %w", msg.Subject, err)
	}
	return nil
}

// retryLater Naks m with a backoff of its deliveries, or gives it up
// after FETCH_MAX_ATTEMPTS deliveries.
func (a *App) retryLater(ctx context.Context, log logrus.FieldLogger, m jetstream.Msg, md *jetstream.MsgMetadata, n *event.Notification, err error) {
	if ctx.Err() != nil {
		// Cut at shutdown: not an attempt of the product's. Nak without
		// delay so another replica takes it now.
		_ = m.Nak()
		return
	}
	if md.NumDelivered >= uint64(a.cfg.MaxAttempts) {
		a.giveUp(ctx, log, m, md, n, fmt.Sprintf("%d attempts: %v", md.NumDelivered, err))
		return
	}
	b := retry.Backoff{First: 5 * time.Second, Max: 10 * time.Minute}
	var d time.Duration
	for range min(md.NumDelivered, 20) {
		d = b.Next()
	}
	a.outcomes.WithLabelValues("retried").Inc()
	log.WithError(err).WithField("retry_in", d.Round(time.Second).String()).Warn("fetch failed; retrying later")
	_ = m.NakWithDelay(d)
}

// giveUp publishes the notification on the failed subject with why, then
// terminates the message; n is nil for a body that cannot be decoded.
func (a *App) giveUp(ctx context.Context, log logrus.FieldLogger, m jetstream.Msg, md *jetstream.MsgMetadata, n *event.Notification, reason string) {
	var collection, productType string
	if n != nil {
		collection, productType = n.Collection, n.ProductType
	}
	if err := a.publish(ctx, failedMsg(a.cfg.FailedPrefix, a.cfg.FetchConsumer, collection, productType, m.Data(), m.Headers(), md.Sequence.Stream, reason)); err != nil {
		log.WithError(err).Warn("cannot publish the failed event; retrying later")
		_ = m.NakWithDelay(10 * time.Second)
		return
	}
	a.outcomes.WithLabelValues("failed").Inc()
	log.WithField("reason", reason).Error("product event given up")
	_ = m.Term()
}

// admin is /healthz, /readyz, /status and /metrics.
func (a *App) admin() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", a.health.serveReady)
	mux.HandleFunc("GET /status", a.serveStatus)
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{}))
	return mux
}
