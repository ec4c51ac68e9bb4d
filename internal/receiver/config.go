package receiver

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/internal/auth"
	"github.com/cdse-jetstream/receiver/internal/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/notification"
	"github.com/cdse-jetstream/receiver/internal/publish"
	"github.com/cdse-jetstream/receiver/internal/quarantine"
	"github.com/cdse-jetstream/receiver/internal/reconcile"
	"gopkg.in/yaml.v3"
)

// Config is every setting of the receiver. Defaults live in DefaultConfig,
// names and help in settings(); Validate checks it without side effects.
type Config struct {
	Addr              string
	Path              string
	Username          string
	Password          string
	AdminAddr         string
	DataDir           string
	MaxBody           int64
	MaxNotifications  int
	DedupeWindow      time.Duration
	PublishTimeout    time.Duration
	ShutdownTimeout   time.Duration
	ShutdownDelay     time.Duration
	ReadTimeout       time.Duration
	ReadHeaderTimeout time.Duration
	HTPasswdFile      string
	TLSCertFile       string
	TLSKeyFile        string
	TrustedProxies    string
	AuthFailureLimit  int
	PProf             bool

	NATSURL          string
	NATSEmbeddedAddr string
	// NATSEmbeddedSync is how often the embedded server's file store is
	// flushed to disk: "always" (before every PubAck), or an interval.
	NATSEmbeddedSync     string
	NATSEmbeddedUser     string
	NATSEmbeddedPassword string
	SubjectPrefix        string
	SubjectTemplate      string
	CloudEvents          bool
	StacURL              string
	StacCollections      string
	Stream               string
	StreamReplicas       int
	StreamMaxAge         time.Duration
	StreamMaxBytes       int64
	NATSCreds            string
	NATSUser             string
	NATSPassword         string
	NATSToken            string
	NATSCA               string

	// The quarantine of refused bodies.
	QuarantineStream   string
	QuarantinePrefix   string
	QuarantineMaxAge   time.Duration
	QuarantineMaxBytes int64

	// Sources besides (or instead of) the webhook.
	Webhook           bool
	PullSubscription  string
	PullInterval      time.Duration
	PullHydrate       bool
	ReconcileFilter   string
	ReconcileInterval time.Duration
	ReconcileLookback time.Duration
	ReconcileOverlap  time.Duration
	ReconcileEvents   string
	ReconcilePageSize int
	// The catalogue login of the PULL source and the reconciler.
	CDSEUsername     string
	CDSEPassword     string
	CDSETOTP         string
	CDSEClientID     string
	CDSETokenURL     string
	CDSECatalogueURL string

	LogLevel  string
	LogFormat string
}

// DefaultConfig holds every default, in one place.
func DefaultConfig() Config {
	return Config{
		Addr:               ":8080",
		Path:               "/notifications",
		AdminAddr:          ":9090",
		DataDir:            "./data",
		MaxBody:            1 << 20,
		MaxNotifications:   100,
		DedupeWindow:       24 * time.Hour,
		PublishTimeout:     5 * time.Second,
		ShutdownTimeout:    20 * time.Second,
		ReadTimeout:        30 * time.Second,
		ReadHeaderTimeout:  5 * time.Second,
		AuthFailureLimit:   20,
		NATSEmbeddedAddr:   "127.0.0.1:4222",
		NATSEmbeddedSync:   "2m", // nats-server's own default
		SubjectPrefix:      "cdse.product",
		SubjectTemplate:    notification.DefaultTemplateText,
		CloudEvents:        true,
		StacURL:            "https://stac.dataspace.copernicus.eu/v1",
		StacCollections:    ingest.DefaultStacCollections,
		Stream:             "CDSE_PRODUCTS",
		StreamReplicas:     1,
		QuarantineStream:   "CDSE_QUARANTINE",
		QuarantinePrefix:   "cdse.quarantine",
		QuarantineMaxAge:   30 * 24 * time.Hour,
		QuarantineMaxBytes: 1 << 30,
		LogLevel:           "info",
		LogFormat:          "json",
		Webhook:            true,
		PullInterval:       10 * time.Second,
		ReconcileLookback:  24 * time.Hour,
		ReconcileOverlap:   10 * time.Minute,
		ReconcileEvents:    "created,modified,deleted",
		ReconcilePageSize:  100,
		CDSEClientID:       auth.DefaultClientID,
		CDSETokenURL:       auth.DefaultTokenURL,
		CDSECatalogueURL:   catalogclient.DefaultBaseURL,
	}
}

// setting binds one Config field to its environment variable, its flag and
// its key in the YAML file (the environment name).
type setting struct {
	env  string
	flag string // "" for secrets: a flag would show in ps
	help string
	// secret settings are masked in dumps and also read from <env>_FILE.
	secret bool
	field  any // pointer into Config
}

func (c *Config) settings() []setting {
	return []setting{
		{env: "RECEIVER_ADDR", flag: "addr", help: "webhook listen address", field: &c.Addr},
		{env: "RECEIVER_PATH", flag: "path", help: "webhook path the catalogue POSTs to", field: &c.Path},
		{env: "RECEIVER_USERNAME", flag: "username", help: "Basic-auth user the catalogue sends (required)", field: &c.Username},
		{env: "RECEIVER_PASSWORD", help: "Basic-auth password (required; or RECEIVER_PASSWORD_FILE)", secret: true, field: &c.Password},
		{env: "RECEIVER_ADMIN_ADDR", flag: "admin-addr", help: "listen address of /healthz, /readyz, /metrics (keep it private)", field: &c.AdminAddr},
		{env: "RECEIVER_DATA_DIR", flag: "data-dir", help: "data directory of the embedded NATS (JetStream file store)", field: &c.DataDir},
		{env: "RECEIVER_MAX_BODY", flag: "max-body", help: "largest request body in bytes, after gzip decompression (suffixes KiB, MiB)", field: &c.MaxBody},
		{env: "RECEIVER_MAX_NOTIFICATIONS", flag: "max-notifications", help: "most notifications in one array body", field: &c.MaxNotifications},
		{env: "RECEIVER_DEDUPE_WINDOW", flag: "dedupe-window", help: "how long a product event is remembered as seen (the stream's duplicate window)", field: &c.DedupeWindow},
		{env: "RECEIVER_PUBLISH_TIMEOUT", flag: "publish-timeout", help: "longest wait for JetStream's PubAck before answering 503", field: &c.PublishTimeout},
		{env: "RECEIVER_SHUTDOWN_TIMEOUT", flag: "shutdown-timeout", help: "bound on graceful shutdown after SIGTERM", field: &c.ShutdownTimeout},
		{env: "RECEIVER_SHUTDOWN_DELAY", flag: "shutdown-delay", help: "after SIGTERM, keep serving this long with /readyz at 503, so load balancers stop sending first (Kubernetes: 5s)", field: &c.ShutdownDelay},
		{env: "RECEIVER_READ_TIMEOUT", flag: "read-timeout", help: "longest time to read a whole request (slow clients are cut off)", field: &c.ReadTimeout},
		{env: "RECEIVER_READ_HEADER_TIMEOUT", flag: "read-header-timeout", help: "longest time to read the request headers (slowloris)", field: &c.ReadHeaderTimeout},
		{env: "RECEIVER_TLS_CERT_FILE", flag: "tls-cert-file", help: "serve HTTPS with this certificate (PEM; reloaded when it changes)", field: &c.TLSCertFile},
		{env: "RECEIVER_TLS_KEY_FILE", flag: "tls-key-file", help: "private key of RECEIVER_TLS_CERT_FILE", field: &c.TLSKeyFile},
		{env: "RECEIVER_HTPASSWD_FILE", flag: "htpasswd-file", help: "extra credentials: htpasswd file of bcrypt hashes (htpasswd -B), reloaded when it changes", field: &c.HTPasswdFile},
		{env: "RECEIVER_TRUSTED_PROXIES", flag: "trusted-proxies", help: "comma-separated CIDRs of proxies whose X-Forwarded-For is believed", field: &c.TrustedProxies},
		{env: "RECEIVER_AUTH_FAILURE_LIMIT", flag: "auth-failure-limit", help: "failed logins per minute per client address before wrong credentials get 429 (0: off)", field: &c.AuthFailureLimit},
		{env: "RECEIVER_PPROF", flag: "pprof", help: "serve /debug/pprof on the admin address (profiling)", field: &c.PProf},
		{env: "NATS_URL", flag: "nats-url", help: "external NATS server or cluster URL(s), comma-separated; empty runs an embedded server", field: &c.NATSURL},
		{env: "NATS_EMBEDDED_ADDR", flag: "nats-embedded-addr", help: "client address of the embedded NATS server, for consumers", field: &c.NATSEmbeddedAddr},
		{env: "NATS_EMBEDDED_SYNC", flag: "nats-embedded-sync", help: "flush the embedded server's store to disk: an interval, or always (before every PubAck: survives a power loss, costs throughput)", field: &c.NATSEmbeddedSync},
		{env: "NATS_EMBEDDED_USER", flag: "nats-embedded-user", help: "consumers' user of the embedded server (read-only on the stream); required when it listens beyond loopback", field: &c.NATSEmbeddedUser},
		{env: "NATS_EMBEDDED_PASSWORD", help: "consumers' password of the embedded server (or NATS_EMBEDDED_PASSWORD_FILE)", secret: true, field: &c.NATSEmbeddedPassword},
		{env: "NATS_SUBJECT_PREFIX", flag: "subject-prefix", help: "subject prefix: <prefix>.<event>.<collection>", field: &c.SubjectPrefix},
		{env: "NATS_SUBJECT_TEMPLATE", flag: "subject-template", help: "subject tokens after the prefix, dot-separated, of: " + strings.Join(notification.TemplateTokens, ", "), field: &c.SubjectTemplate},
		{env: "NATS_CLOUDEVENTS", flag: "cloudevents", help: "add the CloudEvents attributes (ce-* headers, binary content mode of the NATS binding)", field: &c.CloudEvents},
		{env: "STAC_URL", flag: "stac-url", help: "STAC API base for the Cdse-Stac-Url header (empty: no header)", field: &c.StacURL},
		{env: "STAC_COLLECTIONS", flag: "stac-collections", help: "productType=STAC collection pairs, comma-separated: the product types that get Cdse-Stac-Url", field: &c.StacCollections},
		{env: "NATS_STREAM", flag: "stream", help: "JetStream stream name", field: &c.Stream},
		{env: "NATS_STREAM_REPLICAS", flag: "stream-replicas", help: "stream replicas (3 on a 3-node cluster; 1 when embedded)", field: &c.StreamReplicas},
		{env: "NATS_STREAM_MAX_AGE", flag: "stream-max-age", help: "drop messages older than this (0: keep; must be >= the dedupe window)", field: &c.StreamMaxAge},
		{env: "NATS_STREAM_MAX_BYTES", flag: "stream-max-bytes", help: "drop the oldest messages beyond this size (0: no limit)", field: &c.StreamMaxBytes},
		{env: "NATS_CREDS", flag: "nats-creds", help: "NATS credentials file (JWT + nkey)", field: &c.NATSCreds},
		{env: "NATS_USER", flag: "nats-user", help: "NATS user", field: &c.NATSUser},
		{env: "NATS_PASSWORD", help: "NATS password (or NATS_PASSWORD_FILE)", secret: true, field: &c.NATSPassword},
		{env: "NATS_TOKEN", help: "NATS token (or NATS_TOKEN_FILE)", secret: true, field: &c.NATSToken},
		{env: "NATS_CA", flag: "nats-ca", help: "CA certificate file to verify the NATS servers' TLS", field: &c.NATSCA},
		{env: "QUARANTINE_STREAM", flag: "quarantine-stream", help: "stream that keeps refused bodies verbatim (receiver quarantine ...)", field: &c.QuarantineStream},
		{env: "QUARANTINE_SUBJECT_PREFIX", flag: "quarantine-subject-prefix", help: "subjects of the quarantine: <prefix>.<source>; must not overlap NATS_SUBJECT_PREFIX", field: &c.QuarantinePrefix},
		{env: "QUARANTINE_MAX_AGE", flag: "quarantine-max-age", help: "drop quarantined bodies older than this (0: keep)", field: &c.QuarantineMaxAge},
		{env: "QUARANTINE_MAX_BYTES", flag: "quarantine-max-bytes", help: "drop the oldest quarantined bodies beyond this size (0: no limit)", field: &c.QuarantineMaxBytes},
		{env: "RECEIVER_WEBHOOK", flag: "webhook", help: "serve the PUSH webhook (false: PULL and/or reconcile only)", field: &c.Webhook},
		{env: "PULL_SUBSCRIPTION_ID", flag: "pull", help: "consume this PULL subscription too (needs the CDSE_* login)", field: &c.PullSubscription},
		{env: "PULL_INTERVAL", flag: "pull-interval", help: "wait between reads of an empty PULL queue", field: &c.PullInterval},
		{env: "PULL_HYDRATE", flag: "pull-hydrate", help: "fetch the product of notifications older than 3 days (which lack value)", field: &c.PullHydrate},
		{env: "RECONCILE_FILTER", flag: "reconcile-filter", help: "OData filter of the products to reconcile (usually the subscription's)", field: &c.ReconcileFilter},
		{env: "RECONCILE_INTERVAL", flag: "reconcile-interval", help: "run the reconciler this often (0: off; e.g. 15m)", field: &c.ReconcileInterval},
		{env: "RECONCILE_LOOKBACK", flag: "reconcile-lookback", help: "first reconcile pass starts this far back", field: &c.ReconcileLookback},
		{env: "RECONCILE_OVERLAP", flag: "reconcile-overlap", help: "each pass re-lists this much before the watermark (late listings)", field: &c.ReconcileOverlap},
		{env: "RECONCILE_EVENTS", flag: "reconcile-events", help: "events the reconciler recovers, comma-separated: created, modified, deleted", field: &c.ReconcileEvents},
		{env: "RECONCILE_PAGE_SIZE", flag: "reconcile-page-size", help: "products per catalogue request of the reconciler and backfill (at most 1000)", field: &c.ReconcilePageSize},
		{env: "CDSE_USERNAME", flag: "cdse-username", help: "catalogue account (PULL source, reconciler)", field: &c.CDSEUsername},
		{env: "CDSE_PASSWORD", help: "catalogue password (or CDSE_PASSWORD_FILE)", secret: true, field: &c.CDSEPassword},
		{env: "CDSE_TOTP", help: "two-factor code, if the account has 2FA", secret: true, field: &c.CDSETOTP},
		{env: "CDSE_CLIENT_ID", flag: "cdse-client-id", help: "OAuth2 client of the catalogue login", field: &c.CDSEClientID},
		{env: "CDSE_TOKEN_URL", flag: "cdse-token-url", help: "identity provider token URL", field: &c.CDSETokenURL},
		{env: "CDSE_CATALOGUE_URL", flag: "cdse-catalogue-url", help: "catalogue OData base URL", field: &c.CDSECatalogueURL},
		{env: "LOG_LEVEL", flag: "log-level", help: "debug, info, warn or error", field: &c.LogLevel},
		{env: "LOG_FORMAT", flag: "log-format", help: "json or text", field: &c.LogFormat},
	}
}

// ErrHelp is returned by Load when usage was asked for (and printed).
var ErrHelp = errors.New("help requested")

// Load builds the configuration from, in rising precedence: the defaults,
// the YAML file named by --config or RECEIVER_CONFIG, the environment
// (with <NAME>_FILE for secrets), and the flags. It does not validate.
func Load(args []string, getenv func(string) string, usage io.Writer) (Config, error) {
	c := DefaultConfig()
	settings := c.settings()

	fs := flag.NewFlagSet(progName(args), flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configFile := fs.String("config", getenv("RECEIVER_CONFIG"), "YAML file with settings (keys are the environment names)")
	flagVals := map[string]*string{}
	for _, s := range settings {
		if s.flag != "" {
			flagVals[s.flag] = fs.String(s.flag, "", s.help)
		}
	}
	if len(args) == 0 {
		args = []string{"receiver"}
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(usage, fs.Name(), settings)
			return c, ErrHelp
		}
		return c, fmt.Errorf("%w (see --help)", err)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q (see --help)", fs.Arg(0))
	}

	var errs []error
	if *configFile != "" {
		errs = append(errs, loadFile(*configFile, settings))
	}
	for _, s := range settings {
		v := getenv(s.env)
		if s.secret {
			var err error
			if v, err = auth.SecretFromEnv(getenv, s.env); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if v != "" {
			errs = append(errs, set(s, v, s.env))
		}
	}
	fs.Visit(func(f *flag.Flag) {
		for _, s := range settings {
			if s.flag == f.Name {
				errs = append(errs, set(s, *flagVals[f.Name], "--"+f.Name))
			}
		}
	})
	return c, errors.Join(errs...)
}

func loadFile(path string, settings []setting) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	byName := map[string]setting{}
	for _, s := range settings {
		byName[s.env] = s
	}
	var errs []error
	for k, v := range m {
		s, ok := byName[strings.ToUpper(k)]
		if !ok {
			errs = append(errs, fmt.Errorf("config file %s: unknown setting %q", path, k))
			continue
		}
		errs = append(errs, set(s, fmt.Sprint(v), path+": "+k))
	}
	return errors.Join(errs...)
}

// set parses v into the setting's field. Errors name the source, never the
// value of a secret.
func set(s setting, v, source string) error {
	var err error
	switch p := s.field.(type) {
	case *string:
		*p = v
	case *int:
		*p, err = strconv.Atoi(v)
	case *int64:
		*p, err = parseSize(v)
	case *time.Duration:
		*p, err = time.ParseDuration(v)
	case *bool:
		*p, err = strconv.ParseBool(v)
	default:
		panic("unsupported setting type " + reflect.TypeOf(p).String())
	}
	if err != nil {
		shown := strconv.Quote(v)
		if s.secret {
			shown = "(hidden)"
		}
		return fmt.Errorf("%s: cannot parse %s", source, shown)
	}
	return nil
}

// parseSize reads a byte count with an optional KiB/MiB/GiB (or KB/MB/GB) suffix.
func parseSize(v string) (int64, error) {
	v = strings.TrimSpace(v)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}} {
		if strings.HasSuffix(v, u.suffix) {
			v, mult = strings.TrimSpace(strings.TrimSuffix(v, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, err
	}
	return n * mult, nil
}

var (
	subjectToken = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	streamName   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	if c.Webhook && (c.HTPasswdFile == "" || c.Username != "" || c.Password != "") {
		if c.Username == "" {
			bad("RECEIVER_USERNAME is required (or RECEIVER_HTPASSWD_FILE alone): the webhook never runs without authentication")
		}
		if c.Password == "" {
			bad("RECEIVER_PASSWORD or RECEIVER_PASSWORD_FILE is required (or RECEIVER_HTPASSWD_FILE alone): the webhook never runs without authentication")
		}
	}
	if c.Password != "" && len(c.Password) < 12 {
		bad("RECEIVER_PASSWORD is shorter than 12 characters: the endpoint is public, use a long random password")
	}
	if strings.Contains(c.Username, ":") {
		bad("RECEIVER_USERNAME must not contain ':' (Basic auth cannot carry it)")
	}
	if !strings.HasPrefix(c.Path, "/") || strings.ContainsAny(c.Path, "?#* ") {
		bad("RECEIVER_PATH %q must be an absolute URL path", c.Path)
	}
	for _, a := range []struct{ name, addr string }{{"RECEIVER_ADDR", c.Addr}, {"RECEIVER_ADMIN_ADDR", c.AdminAddr}} {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			bad("%s %q is not host:port", a.name, a.addr)
		}
	}
	if c.Addr == c.AdminAddr && !strings.HasSuffix(c.Addr, ":0") {
		bad("RECEIVER_ADDR and RECEIVER_ADMIN_ADDR must differ: the admin endpoints must not be public")
	}
	if c.MaxBody < 1<<10 || c.MaxBody > 64<<20 {
		bad("RECEIVER_MAX_BODY %d must be between 1KiB and 64MiB", c.MaxBody)
	}
	if c.MaxNotifications < 1 || c.MaxNotifications > 10000 {
		bad("RECEIVER_MAX_NOTIFICATIONS %d must be between 1 and 10000", c.MaxNotifications)
	}
	if c.DedupeWindow < time.Second {
		bad("RECEIVER_DEDUPE_WINDOW %s must be at least 1s", c.DedupeWindow)
	}
	if c.PublishTimeout <= 0 || c.PublishTimeout > time.Minute {
		bad("RECEIVER_PUBLISH_TIMEOUT %s must be between 0 and 1m", c.PublishTimeout)
	}
	if c.ShutdownTimeout <= 0 {
		bad("RECEIVER_SHUTDOWN_TIMEOUT %s must be positive", c.ShutdownTimeout)
	}
	if c.ShutdownDelay < 0 || c.ShutdownDelay >= c.ShutdownTimeout {
		bad("RECEIVER_SHUTDOWN_DELAY %s must be between 0 and RECEIVER_SHUTDOWN_TIMEOUT %s", c.ShutdownDelay, c.ShutdownTimeout)
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		bad("RECEIVER_TLS_CERT_FILE and RECEIVER_TLS_KEY_FILE go together")
	}
	if _, err := c.trustedProxies(); err != nil {
		bad("RECEIVER_TRUSTED_PROXIES: %v", err)
	}
	if c.AuthFailureLimit < 0 {
		bad("RECEIVER_AUTH_FAILURE_LIMIT must not be negative")
	}
	if c.ReadHeaderTimeout <= 0 {
		bad("RECEIVER_READ_HEADER_TIMEOUT must be positive")
	}
	if c.ReadTimeout <= c.PublishTimeout {
		bad("RECEIVER_READ_TIMEOUT %s must exceed RECEIVER_PUBLISH_TIMEOUT %s", c.ReadTimeout, c.PublishTimeout)
	}
	for _, tok := range strings.Split(c.SubjectPrefix, ".") {
		if !subjectToken.MatchString(tok) {
			bad("NATS_SUBJECT_PREFIX %q must be dot-separated tokens of [A-Za-z0-9_-]", c.SubjectPrefix)
			break
		}
	}
	if !streamName.MatchString(c.Stream) {
		bad("NATS_STREAM %q must be 1-64 characters of [A-Za-z0-9_-]", c.Stream)
	}
	if _, err := notification.ParseTemplate(c.SubjectTemplate, c.SubjectPrefix); err != nil {
		bad("NATS_SUBJECT_TEMPLATE %q: %v", c.SubjectTemplate, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if _, err := ingest.ParseStacCollections(c.StacCollections); err != nil {
		bad("STAC_COLLECTIONS: %v", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if c.StacURL != "" && !httpURL(c.StacURL) {
		bad("STAC_URL %q is not an http(s) URL", c.StacURL)
	}
	if !streamName.MatchString(c.QuarantineStream) || c.QuarantineStream == c.Stream {
		bad("QUARANTINE_STREAM %q must be 1-64 characters of [A-Za-z0-9_-] and differ from NATS_STREAM", c.QuarantineStream)
	}
	for _, tok := range strings.Split(c.QuarantinePrefix, ".") {
		if !subjectToken.MatchString(tok) {
			bad("QUARANTINE_SUBJECT_PREFIX %q must be dot-separated tokens of [A-Za-z0-9_-]", c.QuarantinePrefix)
			break
		}
	}
	if overlaps(c.QuarantinePrefix, c.SubjectPrefix) {
		bad("QUARANTINE_SUBJECT_PREFIX %q overlaps NATS_SUBJECT_PREFIX %q: two streams cannot share subjects, and refused bodies must never reach the product stream", c.QuarantinePrefix, c.SubjectPrefix)
	}
	if c.QuarantineMaxAge < 0 || c.QuarantineMaxBytes < 0 {
		bad("QUARANTINE_MAX_AGE and QUARANTINE_MAX_BYTES must not be negative")
	}
	if c.StreamReplicas < 1 || c.StreamReplicas > 5 {
		bad("NATS_STREAM_REPLICAS %d must be between 1 and 5", c.StreamReplicas)
	}
	if c.StreamMaxAge != 0 && c.StreamMaxAge < c.DedupeWindow {
		bad("NATS_STREAM_MAX_AGE %s must be 0 or at least RECEIVER_DEDUPE_WINDOW %s", c.StreamMaxAge, c.DedupeWindow)
	}
	if c.StreamMaxBytes < 0 {
		bad("NATS_STREAM_MAX_BYTES must not be negative")
	}
	if c.NATSURL == "" {
		if c.StreamReplicas != 1 {
			bad("NATS_STREAM_REPLICAS must be 1 with the embedded NATS server (set NATS_URL for a cluster)")
		}
		host, _, err := net.SplitHostPort(c.NATSEmbeddedAddr)
		if err != nil {
			bad("NATS_EMBEDDED_ADDR %q is not host:port", c.NATSEmbeddedAddr)
		} else if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" && c.NATSEmbeddedUser == "" {
			bad("NATS_EMBEDDED_ADDR %q listens beyond loopback: set NATS_EMBEDDED_USER and NATS_EMBEDDED_PASSWORD, or anyone who reaches the port could publish into the stream", c.NATSEmbeddedAddr)
		}
		if (c.NATSEmbeddedUser == "") != (c.NATSEmbeddedPassword == "") {
			bad("NATS_EMBEDDED_USER and NATS_EMBEDDED_PASSWORD go together")
		}
		if c.DataDir == "" {
			bad("RECEIVER_DATA_DIR is required with the embedded NATS server")
		}
		if _, _, err := c.EmbeddedSync(); err != nil {
			bad("NATS_EMBEDDED_SYNC: %v", err)
		}
	} else {
		for _, u := range strings.Split(c.NATSURL, ",") {
			if pu, err := url.Parse(strings.TrimSpace(u)); err != nil || pu.Host == "" {
				bad("NATS_URL: %q is not a URL like nats://host:4222", publish.RedactURL(u))
			}
		}
	}
	if c.NATSToken != "" && (c.NATSUser != "" || c.NATSCreds != "") {
		bad("NATS_TOKEN cannot be combined with NATS_USER or NATS_CREDS")
	}
	if c.NATSPassword != "" && c.NATSUser == "" {
		bad("NATS_PASSWORD needs NATS_USER")
	}
	pull, reconciling := c.PullSubscription != "", c.ReconcileInterval > 0
	if !c.Webhook && !pull && !reconciling {
		bad("RECEIVER_WEBHOOK=false needs another source: PULL_SUBSCRIPTION_ID or RECONCILE_INTERVAL")
	}
	if pull || reconciling {
		if c.CDSEUsername == "" || c.CDSEPassword == "" {
			bad("PULL_SUBSCRIPTION_ID and RECONCILE_INTERVAL need the catalogue login: CDSE_USERNAME and CDSE_PASSWORD (or CDSE_PASSWORD_FILE)")
		}
		if !httpURL(c.CDSETokenURL) {
			bad("CDSE_TOKEN_URL %q is not an http(s) URL", c.CDSETokenURL)
		}
		if c.CDSECatalogueURL == "" {
			bad("PULL_SUBSCRIPTION_ID and RECONCILE_INTERVAL need CDSE_CATALOGUE_URL")
		}
	}
	// Checked whatever the sources: the messages' Cdse-Download-Url and
	// ce-source are built from it ("" leaves them out).
	if c.CDSECatalogueURL != "" && !httpURL(c.CDSECatalogueURL) {
		bad("CDSE_CATALOGUE_URL %q is not an http(s) URL", c.CDSECatalogueURL)
	}
	if pull && c.PullInterval < 100*time.Millisecond {
		bad("PULL_INTERVAL %s is too short", c.PullInterval)
	}
	if reconciling {
		if strings.TrimSpace(c.ReconcileFilter) == "" {
			bad("RECONCILE_FILTER is required with RECONCILE_INTERVAL (an empty filter would list the whole catalogue)")
		}
		if _, err := reconcile.ParseEvents(c.ReconcileEvents); err != nil {
			bad("RECONCILE_EVENTS: %v", err)
		}
		if c.ReconcilePageSize < 1 || c.ReconcilePageSize > 1000 {
			bad("RECONCILE_PAGE_SIZE %d must be between 1 and 1000 (the catalogue's largest $top)", c.ReconcilePageSize)
		}
		if c.ReconcileInterval < time.Minute {
			bad("RECONCILE_INTERVAL %s is shorter than 1m", c.ReconcileInterval)
		}
		if c.ReconcileLookback > c.DedupeWindow || c.ReconcileOverlap >= c.DedupeWindow {
			bad("RECONCILE_LOOKBACK (%s) and RECONCILE_OVERLAP (%s) must fit in RECEIVER_DEDUPE_WINDOW (%s), or products delivered before it would be published again", c.ReconcileLookback, c.ReconcileOverlap, c.DedupeWindow)
		}
	}
	if _, err := logrus.ParseLevel(c.LogLevel); err != nil {
		bad("LOG_LEVEL %q must be debug, info, warn or error", c.LogLevel)
	}
	if c.LogFormat != "json" && c.LogFormat != "text" {
		bad("LOG_FORMAT %q must be json or text", c.LogFormat)
	}
	return errors.Join(errs...)
}

// httpURL says whether s is an absolute http(s) URL with a host.
func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Host != "" && (u.Scheme == "https" || u.Scheme == "http")
}

// route is how messages are shaped (the template is checked by Validate).
func (c Config) route() ingest.Route {
	t, _ := notification.ParseTemplate(c.SubjectTemplate, c.SubjectPrefix)
	stac, _ := ingest.ParseStacCollections(c.StacCollections)
	return ingest.Route{Prefix: c.SubjectPrefix, Template: t, CloudEvents: c.CloudEvents, CatalogueURL: c.CDSECatalogueURL,
		StacURL: c.StacURL, StacCollections: stac}
}

// quarantineOptions are the quarantine stream's settings.
func (c Config) quarantineOptions() quarantine.Options {
	return quarantine.Options{Stream: c.QuarantineStream, SubjectPrefix: c.QuarantinePrefix, Replicas: c.StreamReplicas,
		MaxAge: c.QuarantineMaxAge, MaxBytes: c.QuarantineMaxBytes, Duplicates: c.DedupeWindow, Timeout: c.PublishTimeout}
}

// overlaps says whether the subjects <a>.> and <b>.> can share a subject.
func overlaps(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+".") || strings.HasPrefix(b, a+".")
}

// credentials are the static webhook credentials (none when only an
// htpasswd file is used).
func (c Config) credentials() []auth.Credential {
	if c.Username == "" && c.Password == "" {
		return nil
	}
	return []auth.Credential{{User: c.Username, Password: c.Password}}
}

// trustedProxies parses RECEIVER_TRUSTED_PROXIES.
func (c Config) trustedProxies() ([]*net.IPNet, error) {
	var nets []*net.IPNet
	for _, s := range strings.Split(c.TrustedProxies, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			if ip := net.ParseIP(s); ip != nil && ip.To4() != nil {
				s += "/32"
			} else {
				s += "/128"
			}
		}
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not an address or CIDR", s)
		}
		nets = append(nets, n)
	}
	return nets, nil
}

// Fields is the configuration as log fields, secrets masked.
func (c Config) Fields() logrus.Fields {
	f := logrus.Fields{}
	for _, s := range c.settings() {
		v := reflect.ValueOf(s.field).Elem().Interface()
		switch {
		case s.secret && fmt.Sprint(v) != "":
			v = "*****"
		case s.env == "NATS_URL":
			v = publish.RedactURL(c.NATSURL)
		}
		f[s.env] = fmt.Sprint(v)
	}
	return f
}

func printUsage(w io.Writer, name string, settings []setting) {
	fmt.Fprintf(w, `Usage: %s [flags]

Receives the catalogue's PUSH notifications over HTTPS (Basic auth) and
stores each product event once in a NATS JetStream stream.

Every setting is read from, in rising precedence: a YAML file (--config or
RECEIVER_CONFIG; keys are the environment names), the environment, flags.
Secrets have no flag (it would show in ps): use the variable or <NAME>_FILE.

Commands (each with --help):
  %[1]s quarantine list | show SEQ | replay [--dry-run]   refused bodies kept for inspection and replay
  %[1]s backfill --filter F --since T [--until T]       publish a past range of the catalogue, exactly once
  %[1]s version [-o json|yaml], %[1]s --version          version, commit, build date, Go version
  %[1]s completion bash|zsh|fish|powershell              shell completion of the commands (COMMAND --help for each)

`, name)
	defaults := DefaultConfig()
	defSettings := defaults.settings()
	for i, s := range settings {
		flagName := "(no flag)"
		if s.flag != "" {
			flagName = "--" + s.flag
		}
		def := fmt.Sprint(reflect.ValueOf(defSettings[i].field).Elem().Interface())
		if def == "" || def == "0" || def == "0s" {
			def = "none"
		}
		fmt.Fprintf(w, "  %-28s %-22s %s (default %s)\n", s.env, flagName, s.help, def)
	}
	fmt.Fprintln(w, "\n  --config FILE                                     YAML settings file")
}

func progName(args []string) string {
	if len(args) == 0 {
		return "receiver"
	}
	if i := strings.LastIndexByte(args[0], '/'); i >= 0 {
		return args[0][i+1:]
	}
	return args[0]
}

// EmbeddedSync reads NATS_EMBEDDED_SYNC: the interval of the embedded
// server's background fsync, or always.
func (c Config) EmbeddedSync() (interval time.Duration, always bool, err error) {
	if strings.EqualFold(strings.TrimSpace(c.NATSEmbeddedSync), "always") {
		return 0, true, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(c.NATSEmbeddedSync))
	if err != nil || d <= 0 {
		return 0, false, fmt.Errorf("%q must be always or a positive duration (e.g. 2m, 1s)", c.NATSEmbeddedSync)
	}
	return d, false, nil
}
