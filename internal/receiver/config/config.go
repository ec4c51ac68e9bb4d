// Package config is the receiver's configuration: every setting, its
// default, where it is read from and what is wrong with it. The server and
// the one-shot commands (receiver quarantine, receiver backfill) load it
// alike, and each validates what it uses.
//
// The struct below is the one list of settings: each field's tags give its
// name (the environment variable, which is also its key in the YAML file),
// its flag, its help and whether it is a secret. --help, the start-up log
// line and the configuration table of docs/configuration.md are made from
// it, never copied by hand.
package config

import (
	"strings"
	"time"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdselogin/loginsettings"
	"github.com/cdse-jetstream/receiver/internal/cdse/stac"
	"github.com/cdse-jetstream/receiver/internal/ingest/interestfile"
	"github.com/cdse-jetstream/receiver/internal/ingest/pull/pullsettings"
	"github.com/cdse-jetstream/receiver/internal/ingest/reconcile/reconcilesettings"
	"github.com/cdse-jetstream/receiver/internal/ingest/webhook/webhooksettings"
	"github.com/cdse-jetstream/receiver/internal/platform/logging"
	"github.com/cdse-jetstream/receiver/internal/receiver/acmerules"
	"github.com/cdse-jetstream/receiver/internal/receiver/watch/watchsettings"
	"github.com/cdse-jetstream/receiver/internal/stream/natssettings"
)

// Config is every setting of the receiver. Tags: koanf is the name
// (environment variable and YAML key), flag the command-line flag (none for
// secrets: a flag shows in ps), help the one line of --help and the docs,
// secret marks a value masked everywhere and also read from <NAME>_FILE.
// The settings the fetcher reads too are groups declared once and embedded
// here and in its settings (internal/fetcher/fetchconfig).
type Config struct {
	// RECEIVER_WEBHOOK, RECEIVER_ADDR, RECEIVER_PATH, its credentials,
	// limits, timeouts and certificate files: the webhook's own.
	webhooksettings.Push

	AdminAddr       string        `koanf:"RECEIVER_ADMIN_ADDR" flag:"admin-addr" help:"listen address of /healthz, /readyz, /metrics, /status; keep it private"`
	DataDir         string        `koanf:"RECEIVER_DATA_DIR" flag:"data-dir" help:"data directory: the embedded NATS server's JetStream store, and the ACME certificates (acme/)"`
	DedupeWindow    time.Duration `koanf:"RECEIVER_DEDUPE_WINDOW" flag:"dedupe-window" help:"the stream's duplicate window: how long a product event is recognised as already stored"`
	PublishTimeout  time.Duration `koanf:"RECEIVER_PUBLISH_TIMEOUT" flag:"publish-timeout" help:"longest wait for JetStream's PubAcks before answering 503"`
	ShutdownTimeout time.Duration `koanf:"RECEIVER_SHUTDOWN_TIMEOUT" flag:"shutdown-timeout" help:"bound on graceful shutdown after SIGTERM"`
	ShutdownDelay   time.Duration `koanf:"RECEIVER_SHUTDOWN_DELAY" flag:"shutdown-delay" help:"after SIGTERM, keep serving this long with /readyz at 503, so load balancers stop sending first (chart: 5s)"`
	ACMEDomains     string        `koanf:"RECEIVER_ACME_DOMAINS" flag:"acme-domains" help:"obtain and renew the webhook's certificate by ACME for these host names, comma-separated (TLS-ALPN-01 on RECEIVER_ADDR; one instance only: see docs/deployment.md)"`
	ACMEEmail       string        `koanf:"RECEIVER_ACME_EMAIL" flag:"acme-email" help:"contact the ACME CA warns about problems with the certificates"`
	ACMEDirectory   string        `koanf:"RECEIVER_ACME_DIRECTORY" flag:"acme-directory" help:"ACME directory URL (setting RECEIVER_ACME_DOMAINS accepts that CA's terms of service)"`
	ACMECAFile      string        `koanf:"RECEIVER_ACME_CA_FILE" flag:"acme-ca-file" help:"PEM roots to trust the ACME server with (a private ACME CA)"`
	ACMEHTTPAddr    string        `koanf:"RECEIVER_ACME_HTTP_ADDR" flag:"acme-http-addr" help:"also answer HTTP-01 challenges on this plain-HTTP address (e.g. :80), which serves only them and a redirect to HTTPS for the configured domains (any other Host: 421)"`
	PProf           bool          `koanf:"RECEIVER_PPROF" flag:"pprof" help:"serve /debug/pprof on the admin address (profiling)"`

	// NATS_URL, NATS_CREDS, NATS_USER, NATS_PASSWORD, NATS_TOKEN, NATS_CA:
	// how the receiver reaches an external NATS, as the fetcher does.
	natssettings.NATS

	NATSEmbeddedAddr            string `koanf:"NATS_EMBEDDED_ADDR" flag:"nats-embedded-addr" help:"client address of the embedded NATS server, for consumers"`
	NATSEmbeddedSync            string `koanf:"NATS_EMBEDDED_SYNC" flag:"nats-embedded-sync" help:"flush the embedded server's store to disk this often, or always (before every PubAck: power-loss safe on one machine, at a throughput cost)"`
	NATSEmbeddedUser            string `koanf:"NATS_EMBEDDED_USER" flag:"nats-embedded-user" help:"consumers' user of the embedded server (read the stream, never publish to it); required beyond loopback"`
	NATSEmbeddedPassword        string `koanf:"NATS_EMBEDDED_PASSWORD" secret:"true" help:"consumers' password of the embedded server"`
	NATSEmbeddedFetcherUser     string `koanf:"NATS_EMBEDDED_FETCHER_USER" flag:"nats-embedded-fetcher-user" help:"the fetcher's user of the embedded server: a consumer's rights and the fetcher's stream CDSE_FETCHED (cmd/fetcher)"`
	NATSEmbeddedFetcherPassword string `koanf:"NATS_EMBEDDED_FETCHER_PASSWORD" secret:"true" help:"the fetcher's password of the embedded server"`

	// NATS_STREAM, NATS_SUBJECT_PREFIX, FETCH_CONSUMER: the product stream
	// and the fetcher's consumer on it, as the fetcher names them.
	natssettings.ProductStream

	SubjectTemplate string        `koanf:"NATS_SUBJECT_TEMPLATE" flag:"subject-template" help:"subject tokens after the prefix, dot-separated, of: event, collection, productType, platform, processingLevel, tileId, relativeOrbit"`
	CloudEvents     bool          `koanf:"NATS_CLOUDEVENTS" flag:"cloudevents" help:"add the CloudEvents ce-* headers (binary content mode of the NATS binding)"`
	StacURL         string        `koanf:"STAC_URL" flag:"stac-url" help:"STAC API base of the Cdse-Stac-Url header (none: no header)"`
	StacCollections string        `koanf:"STAC_COLLECTIONS" flag:"stac-collections" help:"productType=collection pairs, comma-separated: the product types that get Cdse-Stac-Url"`
	StreamReplicas  int           `koanf:"NATS_STREAM_REPLICAS" flag:"stream-replicas" help:"stream replicas (3 on a 3-node cluster; 1 with the embedded server)"`
	StreamMaxAge    time.Duration `koanf:"NATS_STREAM_MAX_AGE" flag:"stream-max-age" help:"drop messages older than this (0: keep; at least the dedupe window)"`
	StreamMaxBytes  int64         `koanf:"NATS_STREAM_MAX_BYTES" flag:"stream-max-bytes" help:"drop the oldest messages beyond this size (0: no limit)"`

	interestfile.FileSetting
	InterestPrefix string `koanf:"INTEREST_SUBJECT_PREFIX" flag:"interest-subject-prefix" help:"subject prefix of the interests' copies, in the product stream; must not overlap NATS_SUBJECT_PREFIX or QUARANTINE_SUBJECT_PREFIX"`

	QuarantineStream   string        `koanf:"QUARANTINE_STREAM" flag:"quarantine-stream" help:"stream that keeps refused bodies verbatim (receiver quarantine ...)"`
	QuarantinePrefix   string        `koanf:"QUARANTINE_SUBJECT_PREFIX" flag:"quarantine-subject-prefix" help:"its subjects, <prefix>.<source>; must not overlap NATS_SUBJECT_PREFIX"`
	QuarantineMaxAge   time.Duration `koanf:"QUARANTINE_MAX_AGE" flag:"quarantine-max-age" help:"drop quarantined bodies older than this (0: keep)"`
	QuarantineMaxBytes int64         `koanf:"QUARANTINE_MAX_BYTES" flag:"quarantine-max-bytes" help:"drop the oldest quarantined bodies beyond this size (0: no limit)"`

	CompleteStream string `koanf:"COMPLETE_STREAM" flag:"complete-stream" help:"stream of the complete ranges' announcements; it records NATS_STREAM as its owner, and a second receiver on the same NATS needs its own"`
	CompletePrefix string `koanf:"COMPLETE_SUBJECT_PREFIX" flag:"complete-subject-prefix" help:"its subjects, <prefix>.<interest>.<event>; must not overlap the other streams' prefixes"`

	Versions       bool          `koanf:"RECEIVER_VERSIONS" flag:"versions" help:"keep the latest version of each acquisition (bucket <NATS_STREAM>_VERSIONS) and put notices of supersession in the product stream; a consumer of its own, off the webhook's path"`
	VersionsMaxAge time.Duration `koanf:"RECEIVER_VERSIONS_MAX_AGE" flag:"versions-max-age" help:"forget an acquisition this long after its last version (the bucket's TTL); a new versions consumer starts this far back in the stream"`
	// RECEIVER_VERSIONS_SUBJECT_PREFIX: the notices' subjects, as the
	// fetcher reads them.
	natssettings.Notices

	pullsettings.Pull           // PULL_*
	reconcilesettings.Reconcile // RECONCILE_*

	// CDSE_USERNAME, CDSE_PASSWORD, CDSE_TOTP, CDSE_CLIENT_ID,
	// CDSE_TOKEN_URL, CDSE_CATALOGUE_URL: the catalogue login, as the
	// fetcher and register log in.
	loginsettings.Login

	watchsettings.Watch // WATCH_*

	logging.Settings // LOG_LEVEL, LOG_FORMAT
}

// sourceGroup is what ValidateSources needs of a source's settings group
// besides the webhook's: the setting that turns it on, whether it is on,
// whether it reads the catalogue (the CDSE_* login), and its own problems.
type sourceGroup struct {
	name     string
	on       bool
	login    bool
	problems error
}

// sources lists the sources' settings groups embedded above, one line a
// source: adding a source touches this file and the app's list of
// sources (internal/receiver/app/sources.go), not the checks.
func (c Config) sources() []sourceGroup {
	return []sourceGroup{
		{"PULL_SUBSCRIPTION_ID", c.Pull.On(), true, c.Pull.Validate()},
		{"RECONCILE_INTERVAL", c.Reconcile.On(), true, c.Reconcile.Validate(c.InterestsFile != "", c.DedupeWindow)},
	}
}

// None is the value that turns off a setting whose default is on, where
// the empty value cannot (empty means unset, which is the default).
const None = "none"

// Default holds every default, in one place.
func Default() Config {
	return Config{
		Push:               webhooksettings.Default(),
		AdminAddr:          ":9090",
		DataDir:            "./data",
		ACMEDirectory:      acmerules.LetsEncrypt,
		DedupeWindow:       24 * time.Hour,
		PublishTimeout:     5 * time.Second,
		ShutdownTimeout:    20 * time.Second,
		NATSEmbeddedAddr:   "127.0.0.1:4222",
		NATSEmbeddedSync:   "2m",                                // nats-server's own default
		ProductStream:      natssettings.DefaultProductStream(), // the fetcher's: one environment file, or none, names one durable to both
		SubjectTemplate:    event.DefaultTemplateText,
		CloudEvents:        true,
		StacURL:            "https://stac.dataspace.copernicus.eu/v1",
		StacCollections:    stac.DefaultCollections,
		StreamReplicas:     1,
		InterestPrefix:     event.DefaultInterestPrefix,
		QuarantineStream:   "CDSE_QUARANTINE",
		QuarantinePrefix:   "cdse.quarantine",
		QuarantineMaxAge:   30 * 24 * time.Hour,
		QuarantineMaxBytes: 1 << 30,
		CompleteStream:     event.CompleteStream,
		CompletePrefix:     event.CompletePrefix,
		Versions:           true,
		VersionsMaxAge:     90 * 24 * time.Hour,
		Notices:            natssettings.DefaultNotices(),
		Pull:               pullsettings.Default(),
		Reconcile:          reconcilesettings.Default(),
		Login:              loginsettings.Default(),
		Watch:              watchsettings.Default(),
		Settings:           logging.DefaultSettings(),
	}
}

// WatchOn says whether the receiver watches its own subscription:
// WATCH_INTERVAL with the catalogue login, and something to watch (an id,
// the PULL subscription, or the webhook's PUSH subscription).
func (c Config) WatchOn() bool {
	return c.WatchInterval > 0 && c.Login.Given() &&
		(c.WatchSubscription != "" || c.Pull.On() || c.Webhook)
}

// WatchTarget is the subscription the watch reads: an id, or "" for the
// PUSH subscription whose endpoint's path is RECEIVER_PATH.
func (c Config) WatchTarget() string {
	if c.WatchSubscription != "" {
		return c.WatchSubscription
	}
	return c.PullSubscription
}

// ACMEDomainList is RECEIVER_ACME_DOMAINS as a list.
func (c Config) ACMEDomainList() []string {
	var out []string
	for _, d := range strings.Split(c.ACMEDomains, ",") {
		if d = strings.TrimSpace(d); d != "" {
			out = append(out, d)
		}
	}
	return out
}
