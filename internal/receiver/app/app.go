// Package app is the receiver's lifecycle: it starts, from a validated
// configuration, the embedded NATS server (or connects to a cluster), the
// streams through their owner (internal/stream/topology), the sources (webhook,
// PULL, reconciler) and the admin endpoints (health, readiness, metrics,
// status), and stops all of it in order within a time bound. Every wait is
// bounded: a hung dependency never holds a shutdown, a probe or /status.
package app

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"path/filepath"
	"slices"
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
	"golang.org/x/sync/errgroup"

	"github.com/cdse-jetstream/receiver/internal/cdse/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/ingest/interest"
	"github.com/cdse-jetstream/receiver/internal/ingest/quarantine"
	"github.com/cdse-jetstream/receiver/internal/ingest/source"
	"github.com/cdse-jetstream/receiver/internal/platform/buildinfo"
	"github.com/cdse-jetstream/receiver/internal/platform/logging"
	"github.com/cdse-jetstream/receiver/internal/platform/redact"
	"github.com/cdse-jetstream/receiver/internal/platform/retry"
	"github.com/cdse-jetstream/receiver/internal/receiver/acme"
	"github.com/cdse-jetstream/receiver/internal/receiver/auth"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/receiver/status"
	"github.com/cdse-jetstream/receiver/internal/receiver/watch"
	"github.com/cdse-jetstream/receiver/internal/receiver/wiring"
	"github.com/cdse-jetstream/receiver/internal/stream/embedded"
	"github.com/cdse-jetstream/receiver/internal/stream/natsconn"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
	"github.com/cdse-jetstream/receiver/internal/stream/supersede"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
)

// App is a running receiver.
type App struct {
	cfg      config.Config
	log      logrus.FieldLogger
	reg      *prometheus.Registry
	verifier *auth.Basic
	// builders is the list of sources (builtinSources and those given to
	// New); sources, those the configuration turns on, built at Start.
	// lastStored holds, per source, when JetStream last confirmed one of
	// its messages (for /status).
	builders   []Builder
	sources    []*running
	lastStored map[string]*atomic.Int64
	started    time.Time
	delay      *prometheus.HistogramVec
	catalogue  func() *catalogclient.Client

	embedded   *embedded.Server
	nc         *nats.Conn
	pub        *publish.Publisher
	topo       *topology.Topology
	quarantine *quarantine.Store
	route      ingest.Route
	interests  *interest.Router // nil without INTERESTS_FILE
	// watch reads the receiver's own subscription (nil when off); it is
	// no source and never gates readiness.
	watch *watch.Watch
	// versions keeps the versions of each acquisition and publishes the
	// notices of supersession (nil when RECEIVER_VERSIONS is off): a
	// consumer of the stream, off the webhook's path, never gating
	// readiness.
	versions *supersede.Tracker

	admin          *http.Server
	webLn, adminLn net.Listener
	// acme gets the webhook's certificate with RECEIVER_ACME_DOMAINS;
	// acmeHTTP answers HTTP-01 on RECEIVER_ACME_HTTP_ADDR.
	acme     *acme.Manager
	acmeHTTP *http.Server
	acmeLn   net.Listener
	keeper   *topology.Keeper
	stopping atomic.Bool

	// Everything long-running but the admin port (which outlives it, to
	// answer probes and scrapes while the rest stops) runs in one group:
	// the first fatal error cancels the rest and is reported on errs.
	group       *errgroup.Group
	stopGroup   context.CancelFunc
	groupDone   chan struct{} // closed when every member has returned
	groupErr    error         // the group's error, read after groupDone
	streamReady chan struct{} // closed once the stream exists
	errs        chan error
}

// running is a source the configuration turned on, and how it ended.
type running struct {
	source.Source
	early bool
	mu    sync.Mutex
	ended error // a degraded source's reason; nil while it runs
}

func (r *running) end(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = err
}

func (r *running) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ended
}

// New checks what can be checked before listening: the configuration,
// credentials and metrics. Everything the receiver measures is registered
// on reg. extra are sources besides the receiver's own (builtinSources).
func New(cfg config.Config, log logrus.FieldLogger, reg *prometheus.Registry, extra ...Builder) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	route, interests, err := wiring.RouteWithInterests(cfg, reg, log)
	if err != nil {
		return nil, err
	}
	var verifier *auth.Basic
	if cfg.Webhook {
		v, err := auth.NewBasic(wiring.Credentials(cfg), cfg.HTPasswdFile)
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
	a := &App{cfg: cfg, log: log, reg: reg, verifier: verifier, route: route, interests: interests,
		errs: make(chan error, 1), started: time.Now(), streamReady: make(chan struct{}), groupDone: make(chan struct{})}
	a.builders = append(a.builtinSources(), extra...)
	names := make([]string, 0, len(a.builders))
	for _, b := range a.builders {
		if b.Name == "" || slices.Contains(names, b.Name) {
			return nil, fmt.Errorf("source %q: every source needs a name of its own", b.Name)
		}
		names = append(names, b.Name)
	}
	a.lastStored, a.delay = newClocks(names), newDelay(names)
	// One catalogue client, one login, for every source that reads it.
	a.catalogue = sync.OnceValue(func() *catalogclient.Client { return wiring.Catalogue(cfg) })
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
			FetcherUser:      cfg.NATSEmbeddedFetcherUser,
			FetcherPassword:  cfg.NATSEmbeddedFetcherPassword,
			Stream:           cfg.Stream,
			FetchConsumer:    cfg.FetchConsumer,
			SubjectPrefix:    cfg.SubjectPrefix,
			QuarantinePrefix: cfg.QuarantinePrefix,
			InterestPrefix:   cfg.InterestPrefix,
			CompletePrefix:   cfg.CompletePrefix,
			SupersededPrefix: wiring.SupersededPrefix(cfg),
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
	conn := natsconn.FromSettings(cfg.NATS)
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
	a.pub, err = wiring.Publisher(nc, cfg, a.reg, true)
	if err != nil {
		return err
	}
	a.topo = topology.New(a.pub.JetStream(), wiring.Topology(cfg))
	a.keeper = topology.NewKeeper(a.topo, a.pub, a.log)
	if a.quarantine, err = wiring.Quarantine(a.topo, cfg, a.reg, a.log); err != nil {
		return err
	}
	if mp := nc.MaxPayload(); nc.IsConnected() && mp < cfg.MaxBody+4<<10 {
		a.log.WithField("max_payload", mp).Warn("NATS max_payload is smaller than RECEIVER_MAX_BODY: larger notifications will get 413")
	}

	// Before the admin port serves: /status reads it.
	if a.versions, err = wiring.Versions(a.topo, cfg, &a.route, a.interests, a.reg, a.log); err != nil {
		return err
	}

	a.admin = &http.Server{Handler: a.adminHandler(), ReadHeaderTimeout: 5 * time.Second, ErrorLog: logging.StdLog(a.log)}
	if a.adminLn, err = listen("admin", cfg.AdminAddr); err != nil {
		return err
	}
	go func() {
		if err := a.admin.Serve(a.adminLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.fail(fmt.Errorf("admin: %w", err))
		}
	}()
	if err := a.buildSources(); err != nil {
		return err
	}
	if err := a.buildWatch(); err != nil {
		return err
	}
	a.run()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if a.acme != nil {
		// The webhook serves first: the CA validates TLS-ALPN-01 on
		// this very port.
		octx, cancel := context.WithTimeout(ctx, acmeObtainTimeout)
		defer cancel()
		if err := a.acme.Obtain(octx); err != nil {
			return fmt.Errorf("ACME: %w (the CA at RECEIVER_ACME_DIRECTORY must be reachable from here, and %s must resolve to this machine with port 443, or port 80 with RECEIVER_ACME_HTTP_ADDR, open to the CA)", err, cfg.ACMEDomains)
		}
		a.log.WithField("domains", cfg.ACMEDomains).Info("serving HTTPS (TLS 1.2+) with the ACME certificate, renewed ahead of expiry")
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

// startACME makes the webhook's listener ln serve the ACME certificates,
// kept in the data directory, and binds the optional HTTP-01 port (served
// in the group).
func (a *App) startACME(ln net.Listener) (net.Listener, error) {
	cfg := a.cfg
	m, err := acme.New(acme.Options{Domains: cfg.ACMEDomainList(), Email: cfg.ACMEEmail, Directory: cfg.ACMEDirectory, CAFile: cfg.ACMECAFile,
		CacheDir: filepath.Join(cfg.DataDir, "acme")}, a.log.WithField("component", "acme"))
	if err != nil {
		return ln, err
	}
	if err := a.registerCertExpiry(m.NotAfter); err != nil {
		m.Close()
		return ln, err
	}
	a.acme = m
	if cfg.ACMEHTTPAddr != "" {
		if a.acmeLn, err = listen("ACME HTTP-01", cfg.ACMEHTTPAddr); err != nil {
			return ln, err
		}
		a.acmeHTTP = &http.Server{Handler: m.HTTPHandler(nil), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, ErrorLog: logging.StdLog(a.log)}
	}
	return tls.NewListener(ln, m.TLSConfig()), nil
}

// buildSources builds the sources the configuration turns on, each with
// its own publisher.
func (a *App) buildSources() error {
	for _, b := range a.builders {
		src, err := b.Build(Deps{Config: a.cfg, Publisher: a.stamp(b.Name), Route: a.route, Quarantine: a.quarantine,
			Topology: a.topo, Catalogue: a.catalogue, Interests: a.interests, Registry: a.reg, Log: a.log})
		if err != nil {
			return fmt.Errorf("source %s: %w", b.Name, err)
		}
		if src == nil {
			continue
		}
		if src.Name() != b.Name {
			return fmt.Errorf("source %s: built a source named %q", b.Name, src.Name())
		}
		a.sources = append(a.sources, &running{Source: src, early: b.Early})
	}
	return nil
}

// run starts the group: the sources (those not early once the stream
// exists), the stream's keeper, the reloader, the subscription's watch,
// the versions consumer, the ACME HTTP-01 port. The
// first fatal error stops them all and is reported on Errors.
func (a *App) run() {
	ctx, cancel := context.WithCancel(context.Background())
	a.stopGroup = cancel
	g, ctx := errgroup.WithContext(ctx)
	a.group = g
	g.Go(func() error {
		if ok, err := a.ensureStream(ctx); !ok {
			return err
		}
		close(a.streamReady)
		a.keeper.Run(ctx, streamCheckInterval)
		return nil
	})
	g.Go(func() error { a.reloadCredentials(ctx, 10*time.Second); return nil })
	if a.watch != nil {
		// Its failures are logged and in /status: it never ends the group.
		g.Go(func() error { return a.watch.Run(ctx) })
	}
	if a.versions != nil {
		// Once the stream exists (it holds the notices' subjects); its
		// failures are logged and counted, and it never ends the group.
		g.Go(func() error {
			select {
			case <-a.streamReady:
			case <-ctx.Done():
				return nil
			}
			return a.versions.Run(ctx)
		})
	}
	if a.acmeHTTP != nil {
		g.Go(func() error {
			if err := serveUntil(ctx, a.acmeHTTP, a.acmeLn, a.cfg.ShutdownTimeout); err != nil {
				return fmt.Errorf("ACME HTTP-01: %w", err)
			}
			return nil
		})
	}
	for _, r := range a.sources {
		g.Go(func() error {
			if !r.early {
				select {
				case <-a.streamReady:
				case <-ctx.Done():
					return nil
				}
			}
			err := r.Run(ctx)
			switch {
			case err == nil || ctx.Err() != nil && errors.Is(err, context.Canceled):
				return nil
			case source.Degraded(err):
				// The others go on; readiness and /status say why.
				r.end(err)
				a.log.WithError(err).WithField("source", r.Name()).Error("source stopped; the receiver goes on without it, not ready")
				return nil
			default:
				return fmt.Errorf("source %s: %w", r.Name(), err)
			}
		})
	}
	go func() {
		a.groupErr = g.Wait()
		close(a.groupDone)
		if a.groupErr != nil && !a.stopping.Load() {
			a.fail(a.groupErr)
		}
	}()
}

// fail reports a fatal error on Errors (the first one: the receiver stops
// on it).
func (a *App) fail(err error) {
	select {
	case a.errs <- err:
	default:
	}
}

// streamCheckInterval is how often the keeper looks for a deleted or
// replaced stream.
const streamCheckInterval = time.Second

// ensureStream creates or updates the stream, retrying until it succeeds:
// an external NATS may come up after the receiver. It fails at once when
// the complete stream is another receiver's (topology.ErrNotOwner).
func (a *App) ensureStream(ctx context.Context) (bool, error) {
	backoff := retry.Backoff{First: 200 * time.Millisecond, Max: 10 * time.Second}
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		info, err := a.keeper.Ensure(cctx)
		if err == nil {
			// The complete stream is claimed at start, reconciler or
			// not: a receiver that stores no range still owns the empty
			// stream its consumers read, so that a second receiver's
			// ranges never land there. Another receiver's stream is a
			// setting to change, not a failure to retry; anything else is
			// tried again at the first range announced.
			if cerr := a.topo.EnsureComplete(cctx); errors.Is(cerr, topology.ErrNotOwner) {
				cancel()
				return false, cerr
			} else if cerr != nil {
				a.log.WithError(cerr).Error("complete stream not ready: the complete ranges are announced once it can be created")
			}
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
			return true, nil
		}
		msg := "stream not ready"
		if !a.nc.IsConnected() {
			// The client's own error (a full reconnect buffer) hides that
			// nothing answers at NATS_URL, often one exported for a client.
			msg = "stream not ready: not connected to the NATS of NATS_URL (without NATS_URL the receiver runs its own embedded server)"
		}
		wait := backoff.Next()
		a.log.WithError(err).WithField("retry_in", wait.String()).Warn(msg)
		if retry.Sleep(ctx, wait) != nil {
			return false, nil
		}
	}
}

// reloadCredentials re-reads the htpasswd file when it changes, so that a
// rotated Secret takes effect without a restart.
func (a *App) reloadCredentials(ctx context.Context, every time.Duration) {
	if (a.cfg.HTPasswdFile == "" || a.verifier == nil) && a.interests == nil {
		return
	}
	retry.Every(ctx, every, false, func() { a.Reload(false) })
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
			l := a.log.WithField("interests", a.interests.Current().Len())
			if a.watch == nil {
				l.Info("interests file reloaded")
				break
			}
			// Said at once, from the subscription last read: the
			// catalogue sends what its filter says, not the file.
			id, covers, known := a.watch.Coverage()
			switch {
			case !known:
				l.Info("interests file reloaded")
			case covers:
				l.WithFields(logrus.Fields{"subscription": id, "subscription_covers_interests": true}).Info("interests file reloaded")
			default:
				l.WithFields(logrus.Fields{"subscription": id, "subscription_covers_interests": false}).
					Warn("interests file reloaded; the running subscription does not cover them (its filter or events differ): run register apply")
			}
		}
	}
	if force && a.watch != nil {
		a.watch.Poke() // SIGHUP reads the subscription again (after register apply)
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
	}
	for _, r := range a.sources {
		if err := r.err(); err != nil {
			return fmt.Errorf("%s source stopped: %w", r.Name(), err)
		}
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
			// Marshalled, not %q: Go's quoting is not JSON's (a control
			// byte in a reason would make the answer unreadable).
			b, _ := json.Marshal(map[string]string{"status": "not ready", "reason": err.Error()})
			_, _ = w.Write(b)
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

// Errors reports what stops the receiver: a listener that failed while
// serving, a source that ended with a fatal error.
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
	return redact.URLs(a.cfg.NATSURL)
}

// Shutdown stops in order: readiness goes false (and, with
// RECEIVER_SHUTDOWN_DELAY, requests are still served for that long), the
// webhook stops accepting and finishes in-flight requests (each answers
// with its true status), the NATS connection drains, the embedded server
// stops; the admin endpoints go last. It returns when done or when ctx
// expires.
func (a *App) Shutdown(ctx context.Context) error {
	if !a.stopping.Swap(true) && a.cfg.ShutdownDelay > 0 && a.webLn != nil {
		// Readiness is false from here; requests keep being served while
		// the load balancer takes the pod out of rotation.
		a.log.WithField("delay", a.cfg.ShutdownDelay.String()).Info("not ready; serving until the load balancer has noticed")
		select {
		case <-time.After(a.cfg.ShutdownDelay):
		case <-ctx.Done():
		}
	}
	var errs []error
	if a.stopGroup != nil {
		// The group's members end with its context (every outbound
		// request carries it; the webhook finishes the requests in
		// flight); the wait is bounded all the same, so that nothing that
		// ignores it can hold the process past its shutdown bound.
		a.stopGroup()
		select {
		case <-a.groupDone:
			if a.groupErr != nil {
				errs = append(errs, a.groupErr)
			}
		case <-ctx.Done():
			errs = append(errs, errors.New("sources, stream keeper and servers did not stop in time"))
		}
	} else {
		for _, ln := range []net.Listener{a.webLn, a.acmeLn} {
			if ln != nil { // bound by a start that failed before the group ran
				ln.Close()
			}
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
