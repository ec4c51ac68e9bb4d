// Package app is the receiver's lifecycle: it starts, from a validated
// configuration, the embedded NATS server (or connects to a cluster), the
// streams through their owner (internal/topology), the sources (webhook,
// PULL, reconciler) and the admin endpoints (health, readiness, metrics,
// status), and stops all of it in order within a time bound. Every wait is
// bounded: a hung dependency never holds a shutdown, a probe or /status.
package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/internal/acme"
	"github.com/cdse-jetstream/receiver/internal/auth"
	"github.com/cdse-jetstream/receiver/internal/buildinfo"
	"github.com/cdse-jetstream/receiver/internal/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/config"
	"github.com/cdse-jetstream/receiver/internal/embedded"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/interest"
	"github.com/cdse-jetstream/receiver/internal/logging"
	"github.com/cdse-jetstream/receiver/internal/natsconn"
	"github.com/cdse-jetstream/receiver/internal/publish"
	"github.com/cdse-jetstream/receiver/internal/pull"
	"github.com/cdse-jetstream/receiver/internal/quarantine"
	"github.com/cdse-jetstream/receiver/internal/reconcile"
	"github.com/cdse-jetstream/receiver/internal/status"
	"github.com/cdse-jetstream/receiver/internal/topology"
	"github.com/cdse-jetstream/receiver/internal/webhook"
)

// App is a running receiver.
type App struct {
	cfg      config.Config
	log      logrus.FieldLogger
	reg      *prometheus.Registry
	verifier *auth.Basic
	pull     *pull.Source
	// reconciler is nil when off; lastStored holds, per source, when
	// JetStream last confirmed one of its messages (for /status).
	reconciler *reconcile.Reconciler
	lastStored map[string]*atomic.Int64
	started    time.Time
	delay      *prometheus.HistogramVec

	embedded   *embedded.Server
	nc         *nats.Conn
	pub        *publish.Publisher
	topo       *topology.Topology
	quarantine *quarantine.Store
	route      ingest.Route
	interests  *interest.Router // nil without INTERESTS_FILE

	web, admin     *http.Server
	webLn, adminLn net.Listener
	// acme gets the webhook's certificate with RECEIVER_ACME_DOMAINS;
	// acmeHTTP answers HTTP-01 on RECEIVER_ACME_HTTP_ADDR.
	acme           *acme.Manager
	acmeHTTP       *http.Server
	errs           chan error
	keeper         *topology.Keeper
	stopping       atomic.Bool
	stopBackground context.CancelFunc
	background     sync.WaitGroup
}

// New checks what can be checked before listening: the configuration,
// credentials and metrics. Everything the receiver measures is registered
// on reg.
func New(cfg config.Config, log logrus.FieldLogger, reg *prometheus.Registry) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	route, interests, err := cfg.RouteWithInterests(reg, log)
	if err != nil {
		return nil, err
	}
	var verifier *auth.Basic
	if cfg.Webhook {
		v, err := auth.NewBasic(cfg.Credentials(), cfg.HTPasswdFile)
		if err != nil {
			return nil, err
		}
		verifier = v
	}
	// cdse_receiver_build_info{version,revision,goversion,...} 1, as
	// Prometheus-ecosystem services export it (the values --version prints).
	if err := errors.Join(
		reg.Register(collectors.NewGoCollector()),
		reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})),
		reg.Register(versioncollector.NewCollector("cdse_receiver")),
	); err != nil {
		return nil, fmt.Errorf("register process metrics: %w", err)
	}
	a := &App{cfg: cfg, log: log, reg: reg, verifier: verifier, route: route, interests: interests, errs: make(chan error, 3), lastStored: newClocks(), started: time.Now(), delay: newDelay()}
	// What the alerts watch: readiness (as /readyz answers it, one stream
	// lookup per scrape) and the NATS connection.
	if err := errors.Join(
		reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "cdse_receiver_ready", Help: "1 while /readyz answers 200, else 0.",
		}, func() float64 { return boolGauge(a.Ready(context.Background()) == nil) })),
		reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "cdse_receiver_nats_connected", Help: "1 while the NATS connection is up, else 0.",
		}, func() float64 { return boolGauge(a.nc != nil && a.nc.IsConnected()) })),
		reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "cdse_receiver_last_stored_timestamp_seconds",
			Help: "Unix time of the last message JetStream confirmed (stored or duplicate), from any source; the process start until the first.",
		}, func() float64 { return float64(a.lastStoredAny().UnixNano()) / 1e9 })),
		reg.Register(newStreamCollector(a)),
		reg.Register(a.delay),
	); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	return a, nil
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Start connects NATS, ensures the stream (retrying in the background while
// NATS is unreachable: the process stays up and not ready) and starts both
// listeners. It returns once they accept connections.
//
// ctx bounds the start only (a cancelled start returns its error; call
// Shutdown to release what was started); the running receiver lives until
// Shutdown.
func (a *App) Start(ctx context.Context) error {
	cfg := a.cfg
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if cfg.NATSURL == "" {
		syncEvery, syncAlways, _ := cfg.EmbeddedSync() // validated
		srv, err := embedded.Start(ctx, embedded.Options{
			Addr:       cfg.NATSEmbeddedAddr,
			DataDir:    cfg.DataDir,
			SyncEvery:  syncEvery,
			SyncAlways: syncAlways,
			// Room for the largest body plus headers.
			MaxPayload:       int32(max(cfg.MaxBody+64<<10, 1<<20)),
			ConsumerUser:     cfg.NATSEmbeddedUser,
			ConsumerPassword: cfg.NATSEmbeddedPassword,
			SubjectPrefix:    cfg.SubjectPrefix,
			QuarantinePrefix: cfg.QuarantinePrefix,
			InterestPrefix:   cfg.InterestPrefix,
		}, a.log)
		if err != nil {
			return err
		}
		a.embedded = srv
		a.log.WithField("url", srv.ClientURL()).Info("embedded NATS server started; consumers connect here")
		if err := srv.WriteLogin(cfg.DataDir); err != nil {
			return err
		}
	}
	conn := cfg.NATS()
	if a.embedded != nil {
		conn = a.embedded.ConnectOptions()
	}
	nc, err := natsconn.Connect(conn, a.log)
	if err != nil {
		return err
	}
	a.nc = nc
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	a.pub, err = publish.NewPublisher(nc, publish.PublisherOptions{
		Stream:    cfg.Stream,
		Timeout:   cfg.PublishTimeout,
		RecentIDs: 100_000,
		RecentTTL: cfg.DedupeWindow,
	}, a.reg)
	if err != nil {
		return err
	}
	a.topo = topology.New(a.pub.JetStream(), cfg.Topology())
	a.keeper = topology.NewKeeper(a.topo, a.pub, a.log)
	if a.quarantine, err = quarantine.New(a.topo, cfg.PublishTimeout, a.reg, a.log); err != nil {
		return err
	}
	if mp := nc.MaxPayload(); nc.IsConnected() && mp < cfg.MaxBody+4<<10 {
		a.log.WithField("max_payload", mp).Warn("NATS max_payload is smaller than RECEIVER_MAX_BODY: larger notifications will get 413")
	}

	bctx, cancel := context.WithCancel(context.Background())
	a.stopBackground = cancel
	sources, err := a.sources()
	if err != nil {
		return err
	}
	a.background.Add(2)
	go func() {
		defer a.background.Done()
		if a.ensureStream(bctx) {
			a.background.Add(1) // within a counted goroutine: never from zero
			go func() { defer a.background.Done(); a.keeper.Run(bctx, streamCheckInterval) }()
			a.runSources(bctx, sources)
		}
	}()
	go func() { defer a.background.Done(); a.reloadCredentials(bctx, 10*time.Second) }()

	a.admin = &http.Server{Handler: a.adminHandler(), ReadHeaderTimeout: 5 * time.Second, ErrorLog: logging.StdLog(a.log)}
	if a.adminLn, err = net.Listen("tcp", cfg.AdminAddr); err != nil {
		return fmt.Errorf("admin listener: %w", err)
	}
	go a.serve(a.admin, a.adminLn)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if cfg.Webhook {
		if err := a.startWebhook(ctx); err != nil {
			return err
		}
	}
	a.log.WithFields(cfg.Fields()).WithFields(logrus.Fields{
		"webhook_addr": a.WebhookAddr(),
		"admin_addr":   a.adminLn.Addr().String(),
		"nats_url":     a.NATSURL(),
		"version":      buildinfo.Get().Version,
	}).Info("receiver started")
	return nil
}

// acmeObtainTimeout bounds the first certificate's order at start (the
// CA validates the challenge on the webhook's port meanwhile).
const acmeObtainTimeout = 2 * time.Minute

func (a *App) startWebhook(ctx context.Context) error {
	cfg := a.cfg
	proxies, _ := cfg.TrustedProxyNets() // checked by Validate
	wo := webhook.Options{
		Path:             cfg.Path,
		MaxBody:          cfg.MaxBody,
		MaxNotifications: cfg.MaxNotifications,
		Route:            a.route,
		TrustedProxies:   proxies,
		Quarantine:       a.quarantine,
		RequestLog:       logging.RequestLogger(a.log),
	}
	if cfg.AuthFailureLimit > 0 {
		wo.Limiter = auth.NewFailureLimiter(cfg.AuthFailureLimit, time.Minute, 100_000)
	}
	e, err := webhook.New(wo, a.stamp(ingest.SourcePush), a.verifier, a.reg, a.log)
	if err != nil {
		return err
	}
	a.web = webhook.HTTPServer(e, webhook.Timeouts{ReadHeader: cfg.ReadHeaderTimeout, Read: cfg.ReadTimeout, Publish: cfg.PublishTimeout}, logging.StdLog(a.log))
	if a.webLn, err = net.Listen("tcp", cfg.Addr); err != nil {
		return fmt.Errorf("webhook listener: %w", err)
	}
	if cfg.TLSCertFile != "" {
		certs, err := webhook.NewCertReloader(cfg.TLSCertFile, cfg.TLSKeyFile, func(err error) {
			a.log.WithError(err).Error("TLS certificate not reloaded; the previous one is still served")
		})
		if err != nil {
			a.webLn.Close()
			return err
		}
		a.webLn = tls.NewListener(a.webLn, certs.TLSConfig())
		if err := a.registerCertExpiry(certs.NotAfter); err != nil {
			a.webLn.Close()
			return err
		}
		a.log.WithField("cert", cfg.TLSCertFile).Info("serving HTTPS (TLS 1.2+), certificate reloaded when the files change")
	}
	if cfg.ACMEDomains != "" {
		if err := a.startACME(); err != nil {
			a.webLn.Close()
			return err
		}
	}
	go a.serve(a.web, a.webLn)
	if a.acme != nil {
		// Served first: the CA validates TLS-ALPN-01 on this very port.
		octx, cancel := context.WithTimeout(ctx, acmeObtainTimeout)
		defer cancel()
		if err := a.acme.Obtain(octx); err != nil {
			return fmt.Errorf("ACME: %w (the CA at RECEIVER_ACME_DIRECTORY must be reachable from here, and %s must resolve to this machine with port 443, or port 80 with RECEIVER_ACME_HTTP_ADDR, open to the CA)", err, cfg.ACMEDomains)
		}
		a.log.WithField("domains", cfg.ACMEDomains).Info("serving HTTPS (TLS 1.2+) with the ACME certificate, renewed ahead of expiry")
	}
	return nil
}

// registerCertExpiry exports when the webhook's certificate in force
// expires, whichever way it is had (files, ACME).
func (a *App) registerCertExpiry(notAfter func() time.Time) error {
	if err := a.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "cdse_receiver_tls_certificate_expiry_timestamp_seconds",
		Help: "Unix time at which the webhook's TLS certificate in force expires.",
	}, func() float64 { return float64(notAfter().Unix()) })); err != nil {
		return fmt.Errorf("register metrics: %w", err)
	}
	return nil
}

// startACME makes the webhook's listener serve the ACME certificates,
// kept in the data directory, and the optional HTTP-01 port.
func (a *App) startACME() error {
	cfg := a.cfg
	m, err := acme.New(acme.Options{Domains: cfg.ACMEDomainList(), Email: cfg.ACMEEmail, Directory: cfg.ACMEDirectory, CAFile: cfg.ACMECAFile,
		CacheDir: filepath.Join(cfg.DataDir, "acme")}, a.log.WithField("component", "acme"))
	if err != nil {
		return err
	}
	if err := a.registerCertExpiry(m.NotAfter); err != nil {
		m.Close()
		return err
	}
	a.acme = m
	a.webLn = tls.NewListener(a.webLn, m.TLSConfig())
	if cfg.ACMEHTTPAddr != "" {
		ln, err := net.Listen("tcp", cfg.ACMEHTTPAddr)
		if err != nil {
			return fmt.Errorf("ACME HTTP-01 listener: %w", err)
		}
		a.acmeHTTP = &http.Server{Handler: m.HTTPHandler(nil), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, ErrorLog: logging.StdLog(a.log)}
		go a.serve(a.acmeHTTP, ln)
	}
	return nil
}

// sources builds the PULL source and the reconciler, when configured.
func (a *App) sources() ([]func(context.Context), error) {
	cfg := a.cfg
	if cfg.PullSubscription == "" && cfg.ReconcileInterval == 0 {
		return nil, nil
	}
	api := cfg.Catalogue()
	var run []func(context.Context)
	if cfg.PullSubscription != "" {
		src, err := pull.New(pull.Options{SubscriptionID: cfg.PullSubscription, Route: a.route, Interval: cfg.PullInterval, Hydrate: cfg.PullHydrate}, api, a.stamp(ingest.SourcePull), a.quarantine, a.reg, a.log)
		if err != nil {
			return nil, err
		}
		a.pull = src
		run = append(run, func(ctx context.Context) { _ = src.Run(ctx) })
	}
	if cfg.ReconcileInterval > 0 {
		events, _ := catalogclient.ParseEvents(cfg.ReconcileEvents) // checked by Validate
		o := reconcile.Options{Filter: cfg.ReconcileFilter}
		if o.Filter == "" && a.interests != nil {
			// The union of the interests, as they are at each pass: what
			// register apply registers, so that the reconciler bridges a
			// change of the subscription.
			o.FilterOf = func() string { return a.interests.Current().Compile().Filter }
		}
		o.Events, o.PageSize, o.Interval, o.Lookback, o.Overlap, o.Route = events, cfg.ReconcilePageSize, cfg.ReconcileInterval, cfg.ReconcileLookback, cfg.ReconcileOverlap, a.route
		rec, err := reconcile.New(o, api, a.stamp(ingest.SourceReconcile), a.quarantine, a.topo, a.reg, a.log)
		if err != nil {
			return nil, err
		}
		a.reconciler = rec
		run = append(run, rec.Run)
	}
	return run, nil
}

func (a *App) runSources(ctx context.Context, sources []func(context.Context)) {
	var wg sync.WaitGroup
	for _, run := range sources {
		wg.Add(1)
		go func() { defer wg.Done(); run(ctx) }()
	}
	wg.Wait()
}

func (a *App) serve(s *http.Server, ln net.Listener) {
	if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		a.errs <- err
	}
}

// streamCheckInterval is how often the keeper looks for a deleted or
// replaced stream.
const streamCheckInterval = time.Second

// ensureStream creates or updates the stream, retrying until it succeeds:
// an external NATS may come up after the receiver.
func (a *App) ensureStream(ctx context.Context) bool {
	wait := 200 * time.Millisecond
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		info, err := a.keeper.Ensure(cctx)
		if err == nil {
			// The quarantine does not gate readiness: valid notifications
			// must flow even if it cannot be created. Each refused body
			// tries again, and is answered 503 (retried) until it works.
			if qerr := a.quarantine.Ensure(cctx); qerr != nil {
				a.log.WithError(qerr).Error("quarantine stream not ready: refused bodies get 503 until it can be created")
			}
		}
		cancel()
		if err == nil {
			a.log.WithFields(logrus.Fields{"stream": info.Config.Name, "subjects": info.Config.Subjects,
				"replicas": info.Config.Replicas, "duplicate_window": info.Config.Duplicates.String()}).Info("stream ready")
			return true
		}
		msg := "stream not ready"
		if !a.nc.IsConnected() {
			// The client's own error (a full reconnect buffer) hides that
			// nothing answers at NATS_URL, often one exported for a client.
			msg = "stream not ready: not connected to the NATS of NATS_URL (without NATS_URL the receiver runs its own embedded server)"
		}
		a.log.WithError(err).WithField("retry_in", wait.String()).Warn(msg)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
		wait = min(wait*2, 10*time.Second)
	}
}

// reloadCredentials re-reads the htpasswd file when it changes, so that a
// rotated Secret takes effect without a restart.
func (a *App) reloadCredentials(ctx context.Context, every time.Duration) {
	if (a.cfg.HTPasswdFile == "" || a.verifier == nil) && a.interests == nil {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		a.Reload(false)
	}
}

// Reload re-reads what the receiver reads from files while it runs (the
// htpasswd file, the interests) when it changed, keeping what is in force
// when a new file is broken. The server calls it every 10 s, and with
// force on SIGHUP (the interests then re-read whatever their time).
func (a *App) Reload(force bool) {
	if a.cfg.HTPasswdFile != "" && a.verifier != nil {
		changed, err := a.verifier.Reload()
		switch {
		case err != nil:
			a.log.WithError(err).Error("htpasswd file not reloaded; the previous credentials stay in force")
		case changed:
			a.log.Info("htpasswd file reloaded")
		}
	}
	if a.interests != nil {
		changed, err := a.interests.Reload(force)
		switch {
		case err != nil:
			a.log.WithError(err).Error("interests file refused; the last good one stays in force")
		case changed:
			a.log.WithField("interests", a.interests.Current().Len()).Info("interests file reloaded")
		}
	}
}

// Ready says whether the receiver can store notifications now: NATS is
// connected and the stream exists.
func (a *App) Ready(ctx context.Context) error {
	switch {
	case a.stopping.Load():
		return errors.New("shutting down")
	case a.nc == nil || !a.nc.IsConnected():
		return errors.New("not connected to NATS")
	case a.keeper == nil || !a.keeper.Ready():
		return errors.New("stream not ready (being created)")
	case a.pull != nil && a.pull.Err() != nil:
		return fmt.Errorf("pull source stopped: %w", a.pull.Err())
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	// Readiness only reads: the keeper owns the stream and creates it
	// again when it is missing (within streamCheckInterval).
	_, err := a.pub.JetStream().Stream(ctx, a.cfg.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("stream %s missing; the receiver creates it again", a.cfg.Stream)
	}
	if err != nil {
		return fmt.Errorf("stream %s: %w", a.cfg.Stream, err)
	}
	return nil
}

func (a *App) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ok"}`)
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if err := a.Ready(r.Context()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintf(w, `{"status":"not ready","reason":%q}`, err.Error())
			return
		}
		_, _ = io.WriteString(w, `{"status":"ready"}`)
	})
	mux.HandleFunc("GET "+status.Path, a.statusHandler)
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{Registry: a.reg}))
	if a.cfg.PProf {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// Errors reports a listener that failed while serving.
func (a *App) Errors() <-chan error { return a.errs }

// WebhookAddr and AdminAddr are the bound listen addresses.
// It is "" when the webhook is off.
func (a *App) WebhookAddr() string {
	if a.webLn == nil {
		return ""
	}
	return a.webLn.Addr().String()
}

// AdminAddr is the bound admin address.
func (a *App) AdminAddr() string { return a.adminLn.Addr().String() }

// NATSURL is where consumers connect: the embedded server's client URL or
// the configured one (redacted).
func (a *App) NATSURL() string {
	if a.embedded != nil {
		return a.embedded.ClientURL()
	}
	return natsconn.RedactURL(a.cfg.NATSURL)
}

// Shutdown stops in order: readiness goes false (and, with
// RECEIVER_SHUTDOWN_DELAY, requests are still served for that long), the
// webhook stops accepting and finishes in-flight requests (each answers
// with its true status), the NATS connection drains, the embedded server
// stops; the admin endpoints go last. It returns when done or when ctx
// expires.
func (a *App) Shutdown(ctx context.Context) error {
	if !a.stopping.Swap(true) && a.cfg.ShutdownDelay > 0 && a.web != nil {
		// Readiness is false from here; requests keep being served while
		// the load balancer takes the pod out of rotation.
		a.log.WithField("delay", a.cfg.ShutdownDelay.String()).Info("not ready; serving until the load balancer has noticed")
		select {
		case <-time.After(a.cfg.ShutdownDelay):
		case <-ctx.Done():
		}
	}
	var errs []error
	if a.stopBackground != nil {
		// The sources end with their context (every outbound request
		// carries it); the wait is bounded all the same, so that nothing
		// that ignores it can hold the process past its shutdown bound.
		a.stopBackground()
		done := make(chan struct{})
		go func() { a.background.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			errs = append(errs, errors.New("background work (sources, stream keeper) did not stop in time"))
		}
	}
	if a.web != nil {
		if err := a.web.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("webhook: %w", err))
		}
	}
	if a.acmeHTTP != nil {
		if err := a.acmeHTTP.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("ACME HTTP-01: %w", err))
		}
	}
	if a.acme != nil {
		a.acme.Close()
	}
	if a.nc != nil {
		if err := drain(ctx, a.nc); err != nil {
			errs = append(errs, err)
		}
	}
	if a.embedded != nil {
		a.embedded.Shutdown()
		done := make(chan struct{})
		go func() { a.embedded.WaitForShutdown(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			errs = append(errs, errors.New("embedded nats: shutdown timed out"))
		}
	}
	if a.admin != nil {
		if err := a.admin.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("admin: %w", err))
		}
	}
	return errors.Join(errs...)
}

func drain(ctx context.Context, nc *nats.Conn) error {
	closed := make(chan struct{})
	nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
	if err := nc.Drain(); err != nil {
		nc.Close()
		return nil // already closed or never connected: nothing in flight
	}
	select {
	case <-closed:
		return nil
	case <-ctx.Done():
		nc.Close()
		return errors.New("nats: drain timed out")
	}
}
