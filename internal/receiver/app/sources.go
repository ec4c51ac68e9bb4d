package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/ingest/interest"
	"github.com/cdse-jetstream/receiver/internal/ingest/interestfile"
	"github.com/cdse-jetstream/receiver/internal/ingest/pull"
	"github.com/cdse-jetstream/receiver/internal/ingest/quarantine"
	"github.com/cdse-jetstream/receiver/internal/ingest/reconcile"
	"github.com/cdse-jetstream/receiver/internal/ingest/source"
	"github.com/cdse-jetstream/receiver/internal/ingest/webhook"
	"github.com/cdse-jetstream/receiver/internal/platform/logging"
	"github.com/cdse-jetstream/receiver/internal/platform/tlsreload"
	"github.com/cdse-jetstream/receiver/internal/receiver/auth"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/receiver/watch"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
)

// Builder makes one source of notifications (internal/ingest/source). Adding a
// source is its package, its settings, and one Builder in builtinSources.
type Builder struct {
	// Name is the source's name (source.Source's): its clock, delay
	// series and /status line exist from the start under it.
	Name string
	// Early sources run from the start, before the stream is ready (the
	// webhook answers 503 meanwhile, and the catalogue retries); the
	// others wait for the stream, so that their first pass does not fail.
	Early bool
	// Build returns the source, or nil when the configuration turns it
	// off.
	Build func(Deps) (source.Source, error)
}

// Deps is what the receiver gives every source it builds.
type Deps struct {
	Config config.Config
	// Publisher is the source's own: what it stores is counted under its
	// name (clock, delivery delay, interests).
	Publisher  publish.BatchPublisher
	Route      ingest.Route
	Quarantine *quarantine.Store
	Topology   *topology.Topology
	// Catalogue is the process's one catalogue client (one login, one
	// token renewed for every source that reads the catalogue).
	Catalogue func() *catalogclient.Client
	// Interests is nil without INTERESTS_FILE.
	Interests *interest.Router
	Registry  prometheus.Registerer
	Log       logrus.FieldLogger
}

// builtinSources is the list of the receiver's sources, in the order
// /status shows them.
func (a *App) builtinSources() []Builder {
	return []Builder{
		{Name: ingest.SourcePush, Early: true, Build: a.buildPush},
		{Name: ingest.SourcePull, Build: buildPull},
		{Name: ingest.SourceReconcile, Build: buildReconcile},
	}
}

// buildPull is the PULL source, when PULL_SUBSCRIPTION is set.
func buildPull(d Deps) (source.Source, error) {
	cfg := d.Config
	if cfg.PullSubscription == "" {
		return nil, nil
	}
	src, err := pull.New(pull.Options{SubscriptionID: cfg.PullSubscription, Route: d.Route, Interval: cfg.PullInterval, Hydrate: cfg.PullHydrate},
		d.Catalogue(), d.Publisher, d.Quarantine, d.Registry, d.Log)
	if err != nil {
		return nil, err
	}
	return src, nil
}

// reconcileSource is the reconciler as a source; /status reads its
// watermarks.
type reconcileSource struct {
	*reconcile.Reconciler
	ranges *completeRanges
}

var _ source.Source = reconcileSource{}

func (reconcileSource) Name() string { return ingest.SourceReconcile }

func (r reconcileSource) Run(ctx context.Context) error {
	r.Reconciler.Run(ctx) // a failed pass is retried at the next: it never ends the source
	return nil
}

// buildReconcile is the reconciler, when RECONCILE_INTERVAL is set.
func buildReconcile(d Deps) (source.Source, error) {
	cfg := d.Config
	if cfg.ReconcileInterval <= 0 {
		return nil, nil
	}
	events, _ := event.ParseKinds(cfg.ReconcileEvents) // checked by Validate
	// The listing filter as it is at each pass (wiring.ListingFilter):
	// RECONCILE_FILTER, else the interests' union, what register apply
	// registers, so that the reconciler bridges a change of the
	// subscription.
	// ranges.filterOf is wiring.ListingFilter, noting the interests it
	// lists for the complete ranges.
	ranges, err := newCompleteRanges(d, events)
	if err != nil {
		return nil, err
	}
	o := reconcile.Options{FilterOf: ranges.filterOf, Listed: ranges.listed}
	o.Events, o.PageSize, o.Interval, o.Lookback, o.Overlap, o.Route = events, cfg.ReconcilePageSize, cfg.ReconcileInterval, cfg.ReconcileLookback, cfg.ReconcileOverlap, d.Route
	rec, err := reconcile.New(o, d.Catalogue(), d.Publisher, d.Quarantine, d.Topology, d.Registry, d.Log)
	if err != nil {
		return nil, err
	}
	return reconcileSource{rec, ranges}, nil
}

// watchMinGap is the least time between two reads of the subscription
// (SIGHUPs included); tests shorten it.
var watchMinGap = 5 * time.Second

// buildWatch is the watch of the receiver's own subscription, when the
// configuration turns it on (config.WatchOn). It is not a source: it
// stores nothing, and its problems degrade /status, never /readyz.
func (a *App) buildWatch() error {
	cfg := a.cfg
	if !cfg.WatchOn() {
		return nil
	}
	o := watch.Options{Interval: cfg.WatchInterval, MinGap: watchMinGap, ID: cfg.WatchTarget(), Path: cfg.Path,
		Quiet: cfg.WatchQuiet, Resume: cfg.WatchResume}
	if a.interests != nil {
		o.Interests = func() *interestfile.Compiled {
			c := a.interests.Current().Compile()
			return &c
		}
	}
	w, err := watch.New(o, a.catalogue(), a.reg, a.log)
	if err != nil {
		return err
	}
	a.watch = w
	target := "the PUSH subscription to *" + cfg.Path
	if o.ID != "" {
		target = "subscription " + o.ID
	}
	a.log.WithFields(logrus.Fields{"watched": target, "interval": cfg.WatchInterval.String(), "quiet": cfg.WatchQuiet.String(), "resume": cfg.WatchResume}).
		Info("watching the receiver's subscription in the catalogue (WATCH_INTERVAL)")
	return nil
}

// pushSource is the webhook: its listener is bound when it is built (a
// port in use fails the start), and it serves until its context ends,
// then finishes the requests in flight, each with its true status.
type pushSource struct {
	srv  *http.Server
	ln   net.Listener
	stop time.Duration
}

var _ source.Source = (*pushSource)(nil)

func (*pushSource) Name() string { return ingest.SourcePush }

func (p *pushSource) Run(ctx context.Context) error {
	if err := serveUntil(ctx, p.srv, p.ln, p.stop); err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	return nil
}

// serveUntil serves ln until ctx ends, then shuts s down gracefully within
// stop. An error of the listener while serving is returned at once.
func serveUntil(ctx context.Context, s *http.Server, ln net.Listener, stop time.Duration) error {
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	select {
	case err := <-served:
		return err // never ErrServerClosed: only this function shuts it down
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stop)
	defer cancel()
	err := s.Shutdown(sctx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// buildPush is the webhook, when RECEIVER_WEBHOOK is on: its listener,
// with TLS from files or ACME.
func (a *App) buildPush(d Deps) (source.Source, error) {
	cfg := d.Config
	if !cfg.Webhook {
		return nil, nil
	}
	proxies, _ := cfg.TrustedProxyNets() // checked by Validate
	wo := webhook.Options{
		Path:             cfg.Path,
		MaxBody:          cfg.MaxBody,
		MaxNotifications: cfg.MaxNotifications,
		Route:            d.Route,
		TrustedProxies:   proxies,
		Quarantine:       d.Quarantine,
		RequestLog:       logging.RequestLogger(a.log),
	}
	if cfg.AuthFailureLimit > 0 {
		wo.Limiter = auth.NewFailureLimiter(cfg.AuthFailureLimit, time.Minute, 100_000)
	}
	e, err := webhook.New(wo, d.Publisher, a.verifier, d.Registry, d.Log)
	if err != nil {
		return nil, err
	}
	srv := webhook.HTTPServer(e, webhook.Timeouts{ReadHeader: cfg.ReadHeaderTimeout, Read: cfg.ReadTimeout, Publish: cfg.PublishTimeout}, logging.StdLog(a.log))
	ln, err := listen("webhook", cfg.Addr)
	if err != nil {
		return nil, err
	}
	if cfg.TLSCertFile != "" {
		certs, err := tlsreload.New(cfg.TLSCertFile, cfg.TLSKeyFile, func(err error) {
			a.log.WithError(err).Error("TLS certificate not reloaded; the previous one is still served")
		})
		if err != nil {
			ln.Close()
			return nil, err
		}
		ln = tls.NewListener(ln, certs.TLSConfig())
		if err := a.registerCertExpiry(certs.NotAfter); err != nil {
			ln.Close()
			return nil, err
		}
		a.log.WithField("cert", cfg.TLSCertFile).Info("serving HTTPS (TLS 1.2+), certificate reloaded when the files change")
	}
	if cfg.ACMEDomains != "" {
		if ln, err = a.startACME(ln); err != nil {
			ln.Close()
			return nil, err
		}
	}
	a.webLn = ln
	return &pushSource{srv: srv, ln: ln, stop: cfg.ShutdownTimeout}, nil
}

// listen binds addr for the named listener; the error says which setting
// to change when the port is taken.
func listen(what, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s listener: %w", what, err)
	}
	return ln, nil
}
