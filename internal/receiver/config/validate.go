package config

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdselogin/loginsettings"
	"github.com/cdse-jetstream/receiver/internal/cdse/stac"
	"github.com/cdse-jetstream/receiver/internal/ingest/interestfile"
	"github.com/cdse-jetstream/receiver/internal/receiver/acmerules"
	"github.com/cdse-jetstream/receiver/internal/stream/natssettings"
)

// Validate checks everything the server uses and reports every problem at
// once. The one-shot commands validate what they use: the concerns below.
func (c Config) Validate() error {
	return c.Check(Config.ValidateWebhook, Config.ValidateAdmin, Config.ValidateNATS, Config.ValidateStreams,
		Config.ValidateRoute, Config.ValidateSources, Config.ValidateWatch, Config.ValidateLogging)
}

// Check runs the concerns given and reports every problem once: a setting
// two concerns check (the publish timeout, the subject prefix) is one
// problem.
func (c Config) Check(concerns ...func(Config) error) error {
	seen := map[string]bool{}
	var out []error
	var add func(err error)
	add = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				add(e)
			}
			return
		}
		if err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			out = append(out, err)
		}
	}
	for _, concern := range concerns {
		add(concern(c))
	}
	return errors.Join(out...)
}

// problems collects the messages of one concern.
type problems []error

// MinPasswordLength is the shortest webhook password accepted: the
// endpoint is public.
const MinPasswordLength = 12

func (p *problems) add(format string, a ...any) { *p = append(*p, fmt.Errorf(format, a...)) }
func (p problems) err() error                   { return errors.Join(p...) }

// join adds the problems of a group of settings the receiver shares with
// the fetcher, checked where the group is declared.
func (p *problems) join(err error) {
	if err != nil {
		*p = append(*p, err)
	}
}

// ValidateWebhook checks the PUSH endpoint: its address, path, credentials,
// TLS, limits and timeouts.
func (c Config) ValidateWebhook() error {
	var p problems
	if !c.Webhook {
		return nil
	}
	if c.HTPasswdFile == "" || c.Username != "" || c.Password != "" {
		if c.Username == "" {
			p.add("RECEIVER_USERNAME is required (or RECEIVER_HTPASSWD_FILE alone): the webhook never runs without authentication")
		}
		if c.Password == "" {
			p.add("RECEIVER_PASSWORD or RECEIVER_PASSWORD_FILE is required (or RECEIVER_HTPASSWD_FILE alone): the webhook never runs without authentication")
		}
	}
	if c.Password != "" && len(c.Password) < MinPasswordLength {
		p.add("RECEIVER_PASSWORD is shorter than %d characters: the endpoint is public, use a long random password", MinPasswordLength)
	}
	if strings.Contains(c.Username, ":") {
		p.add("RECEIVER_USERNAME must not contain ':' (Basic auth cannot carry it)")
	}
	if !strings.HasPrefix(c.Path, "/") || strings.ContainsAny(c.Path, "?#* ") {
		p.add("RECEIVER_PATH %q must be an absolute URL path", c.Path)
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		p.add("RECEIVER_ADDR %q is not host:port", c.Addr)
	}
	if c.Addr == c.AdminAddr && !strings.HasSuffix(c.Addr, ":0") {
		p.add("RECEIVER_ADDR and RECEIVER_ADMIN_ADDR must differ: the admin endpoints must not be public")
	}
	if c.MaxBody < 1<<10 || c.MaxBody > 64<<20 {
		p.add("RECEIVER_MAX_BODY %d must be between 1KiB and 64MiB", c.MaxBody)
	}
	if c.MaxNotifications < 1 || c.MaxNotifications > 10000 {
		p.add("RECEIVER_MAX_NOTIFICATIONS %d must be between 1 and 10000", c.MaxNotifications)
	}
	if c.PublishTimeout <= 0 || c.PublishTimeout > time.Minute {
		p.add("RECEIVER_PUBLISH_TIMEOUT %s must be between 0 and 1m", c.PublishTimeout)
	}
	if c.ShutdownTimeout <= 0 {
		p.add("RECEIVER_SHUTDOWN_TIMEOUT %s must be positive", c.ShutdownTimeout)
	}
	if c.ShutdownDelay < 0 || c.ShutdownDelay >= c.ShutdownTimeout {
		p.add("RECEIVER_SHUTDOWN_DELAY %s must be between 0 and RECEIVER_SHUTDOWN_TIMEOUT %s", c.ShutdownDelay, c.ShutdownTimeout)
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		p.add("RECEIVER_TLS_CERT_FILE and RECEIVER_TLS_KEY_FILE go together")
	}
	if c.ACMEDomains != "" {
		if c.TLSCertFile != "" || c.TLSKeyFile != "" {
			p.add("RECEIVER_ACME_DOMAINS and RECEIVER_TLS_CERT_FILE/RECEIVER_TLS_KEY_FILE are two ways to get the webhook's certificate: set one")
		}
		if err := acmerules.ValidateDomains(c.ACMEDomainList()); err != nil {
			p.add("RECEIVER_ACME_DOMAINS: %v", err)
		}
		if !strings.HasPrefix(c.ACMEDirectory, "https://") {
			p.add("RECEIVER_ACME_DIRECTORY %q must be an https:// URL", c.ACMEDirectory)
		}
		if c.ACMEHTTPAddr != "" {
			if _, _, err := net.SplitHostPort(c.ACMEHTTPAddr); err != nil {
				p.add("RECEIVER_ACME_HTTP_ADDR %q: %v", c.ACMEHTTPAddr, err)
			} else if c.ACMEHTTPAddr == c.Addr || c.ACMEHTTPAddr == c.AdminAddr {
				p.add("RECEIVER_ACME_HTTP_ADDR must differ from RECEIVER_ADDR and RECEIVER_ADMIN_ADDR")
			}
		}
	} else if c.ACMEHTTPAddr != "" || c.ACMEEmail != "" || c.ACMECAFile != "" {
		p.add("RECEIVER_ACME_HTTP_ADDR, RECEIVER_ACME_EMAIL and RECEIVER_ACME_CA_FILE need RECEIVER_ACME_DOMAINS")
	}
	if _, err := c.TrustedProxyNets(); err != nil {
		p.add("RECEIVER_TRUSTED_PROXIES: %v", err)
	}
	if c.AuthFailureLimit < 0 {
		p.add("RECEIVER_AUTH_FAILURE_LIMIT must not be negative")
	}
	if c.ReadHeaderTimeout <= 0 {
		p.add("RECEIVER_READ_HEADER_TIMEOUT must be positive")
	}
	if c.ReadTimeout <= c.PublishTimeout {
		p.add("RECEIVER_READ_TIMEOUT %s must exceed RECEIVER_PUBLISH_TIMEOUT %s", c.ReadTimeout, c.PublishTimeout)
	}
	return p.err()
}

// ValidateAdmin checks the admin listener.
func (c Config) ValidateAdmin() error {
	var p problems
	if _, _, err := net.SplitHostPort(c.AdminAddr); err != nil {
		p.add("RECEIVER_ADMIN_ADDR %q is not host:port", c.AdminAddr)
	}
	if c.ShutdownTimeout <= 0 {
		p.add("RECEIVER_SHUTDOWN_TIMEOUT %s must be positive", c.ShutdownTimeout)
	}
	return p.err()
}

// ValidateNATS checks how NATS is reached: the embedded server or an
// external one, and the credentials.
func (c Config) ValidateNATS() error {
	var p problems
	if c.NATSURL == "" {
		if c.StreamReplicas != 1 {
			p.add("NATS_STREAM_REPLICAS must be 1 with the embedded NATS server (set NATS_URL for a cluster)")
		}
		host, _, err := net.SplitHostPort(c.NATSEmbeddedAddr)
		if err != nil {
			p.add("NATS_EMBEDDED_ADDR %q is not host:port", c.NATSEmbeddedAddr)
		} else if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" && c.NATSEmbeddedUser == "" {
			p.add("NATS_EMBEDDED_ADDR %q listens beyond loopback: set NATS_EMBEDDED_USER and NATS_EMBEDDED_PASSWORD, or anyone who reaches the port could read the stream", c.NATSEmbeddedAddr)
		}
		if (c.NATSEmbeddedUser == "") != (c.NATSEmbeddedPassword == "") {
			p.add("NATS_EMBEDDED_USER and NATS_EMBEDDED_PASSWORD go together")
		}
		if (c.NATSEmbeddedFetcherUser == "") != (c.NATSEmbeddedFetcherPassword == "") {
			p.add("NATS_EMBEDDED_FETCHER_USER and NATS_EMBEDDED_FETCHER_PASSWORD go together")
		}
		p.join(c.ProductStream.ValidateFetchConsumer())
		if c.DataDir == "" {
			p.add("RECEIVER_DATA_DIR is required with the embedded NATS server")
		}
		if _, _, err := c.EmbeddedSync(); err != nil {
			p.add("NATS_EMBEDDED_SYNC: %v", err)
		}
	}
	p.join(c.NATS.Validate())
	return p.err()
}

// ValidateStreams checks the product stream and the quarantine: names,
// subjects, limits, the duplicate window.
func (c Config) ValidateStreams() error {
	var p problems
	if c.DedupeWindow < time.Second {
		p.add("RECEIVER_DEDUPE_WINDOW %s must be at least 1s", c.DedupeWindow)
	}
	p.join(c.ProductStream.Validate())
	if !natssettings.ValidStreamName(c.QuarantineStream) || c.QuarantineStream == c.Stream {
		p.add("QUARANTINE_STREAM %q must be 1-64 characters of [A-Za-z0-9_-] and differ from NATS_STREAM", c.QuarantineStream)
	}
	p.join(natssettings.CheckPrefix("QUARANTINE_SUBJECT_PREFIX", c.QuarantinePrefix))
	if c.InterestsFile != "" {
		p.join(natssettings.CheckPrefix("INTEREST_SUBJECT_PREFIX", c.InterestPrefix))
		if overlaps(c.InterestPrefix, c.SubjectPrefix) || overlaps(c.InterestPrefix, c.QuarantinePrefix) {
			p.add("INTEREST_SUBJECT_PREFIX %q overlaps NATS_SUBJECT_PREFIX %q or QUARANTINE_SUBJECT_PREFIX %q: a consumer of the product subjects would get the interests' copies too", c.InterestPrefix, c.SubjectPrefix, c.QuarantinePrefix)
		}
	}
	if overlaps(c.QuarantinePrefix, c.SubjectPrefix) {
		p.add("QUARANTINE_SUBJECT_PREFIX %q overlaps NATS_SUBJECT_PREFIX %q: two streams cannot share subjects, and refused bodies must never reach the product stream", c.QuarantinePrefix, c.SubjectPrefix)
	}
	p = append(p, c.completeProblems()...)
	p = append(p, c.versionsProblems()...)
	if c.QuarantineMaxAge < 0 || c.QuarantineMaxBytes < 0 {
		p.add("QUARANTINE_MAX_AGE and QUARANTINE_MAX_BYTES must not be negative")
	}
	if c.StreamReplicas < 1 || c.StreamReplicas > 5 {
		p.add("NATS_STREAM_REPLICAS %d must be between 1 and 5", c.StreamReplicas)
	}
	if c.StreamMaxAge != 0 && c.StreamMaxAge < c.DedupeWindow {
		p.add("NATS_STREAM_MAX_AGE %s must be 0 or at least RECEIVER_DEDUPE_WINDOW %s", c.StreamMaxAge, c.DedupeWindow)
	}
	if c.StreamMaxBytes < 0 {
		p.add("NATS_STREAM_MAX_BYTES must not be negative")
	}
	if c.PublishTimeout <= 0 || c.PublishTimeout > time.Minute {
		p.add("RECEIVER_PUBLISH_TIMEOUT %s must be between 0 and 1m", c.PublishTimeout)
	}
	return p.err()
}

// completeProblems are those of the complete ranges' stream: a name of its
// own, and subjects no other stream of the receiver's takes (two streams
// cannot share subjects: JetStream would refuse it at the first range).
// Another receiver's complete stream on the same NATS is refused when the
// stream is ensured (topology.EnsureOwned): only NATS can tell.
func (c Config) completeProblems() problems {
	var p problems
	if !natssettings.ValidStreamName(c.CompleteStream) || c.CompleteStream == c.Stream || c.CompleteStream == c.QuarantineStream {
		p.add("COMPLETE_STREAM %q must be 1-64 characters of [A-Za-z0-9_-] and differ from NATS_STREAM and QUARANTINE_STREAM", c.CompleteStream)
	}
	if err := natssettings.CheckPrefix("COMPLETE_SUBJECT_PREFIX", c.CompletePrefix); err != nil {
		return append(p, err)
	}
	return append(p, c.overlapping("COMPLETE_SUBJECT_PREFIX", c.CompletePrefix, "two streams cannot share subjects")...)
}

// versionsProblems are those of the versions consumer, when it is on: a
// bucket's TTL, and notice subjects no other stream of the receiver's
// takes and no consumer of the product subjects receives. Another
// receiver's notices on the same NATS are found when the stream is
// ensured (topology.NoticesTaken): only NATS can tell.
func (c Config) versionsProblems() problems {
	var p problems
	if !c.Versions {
		return p
	}
	if c.VersionsMaxAge < time.Hour {
		p.add("RECEIVER_VERSIONS_MAX_AGE %s must be at least 1h (an acquisition forgotten between its versions links nothing)", c.VersionsMaxAge)
	}
	if err := c.Notices.Validate(); err != nil {
		p.join(err)
		return p
	}
	return append(p, c.overlapping("RECEIVER_VERSIONS_SUBJECT_PREFIX", c.VersionsPrefix, "the notices need subjects of their own")...)
}

// overlapping says which of the receiver's other prefixes the setting
// name's prefix overlaps, and why that is wrong: the product, quarantine,
// complete and interests' subjects, and the fetcher's retries (the
// product stream takes them).
func (c Config) overlapping(name, prefix, why string) problems {
	var p problems
	others := []struct{ name, prefix string }{{"NATS_SUBJECT_PREFIX", c.SubjectPrefix}, {"QUARANTINE_SUBJECT_PREFIX", c.QuarantinePrefix},
		{"COMPLETE_SUBJECT_PREFIX", c.CompletePrefix}, {"the fetcher's retries", event.FetchRetryPrefix}}
	if c.InterestsFile != "" {
		others = append(others, struct{ name, prefix string }{"INTEREST_SUBJECT_PREFIX", c.InterestPrefix})
	}
	for _, o := range others {
		if o.name != name && overlaps(prefix, o.prefix) {
			p.add("%s %q overlaps %s %q: %s", name, prefix, o.name, o.prefix, why)
		}
	}
	return p
}

// ValidateRoute checks how messages are shaped: the subject template, the
// STAC links, the catalogue URL of the download links. Everything that
// publishes (the server, the backfill, a quarantine replay) routes alike.
func (c Config) ValidateRoute() error {
	p := c.routeProblems()
	if c.InterestsFile != "" {
		set, err := interestfile.Load(c.InterestsFile)
		if err != nil {
			p.add("INTERESTS_FILE: %v", err)
		} else if !c.Versions {
			// Refused rather than routed as all: an interest that asked
			// for the latest versions only must not get every product.
			if err := set.RequireVersions(); err != nil {
				p.add("INTERESTS_FILE %s: %v", c.InterestsFile, err)
			}
		}
	}
	return p.err()
}

// ValidateShape is ValidateRoute without the interests file: what the
// route needs (internal/receiver/wiring builds it, and the interests' router reads
// the file itself).
func (c Config) ValidateShape() error { return c.routeProblems().err() }

// routeProblems are ValidateRoute's without the interests file.
func (c Config) routeProblems() problems {
	var p problems
	if err := natssettings.CheckPrefix("NATS_SUBJECT_PREFIX", c.SubjectPrefix); err != nil {
		p = append(p, err)
	} else if _, err := event.ParseTemplate(c.SubjectTemplate, c.SubjectPrefix); err != nil {
		p.add("NATS_SUBJECT_TEMPLATE %q: %v", c.SubjectTemplate, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if _, err := stac.ParseCollections(c.StacCollections); err != nil {
		p.add("STAC_COLLECTIONS: %v", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if c.StacURL != None && !loginsettings.HTTPURL(c.StacURL) {
		p.add("STAC_URL %q is not an http(s) URL (or none)", c.StacURL)
	}
	// Checked whatever the sources: the messages' Cdse-Download-Url and
	// ce-source are built from it.
	if c.CDSECatalogueURL != None && !loginsettings.HTTPURL(c.CDSECatalogueURL) {
		p.add("CDSE_CATALOGUE_URL %q is not an http(s) URL (or none)", c.CDSECatalogueURL)
	}
	return p
}

// ValidateCatalogueLogin checks the catalogue login of PULL, the reconciler
// and the backfill.
func (c Config) ValidateCatalogueLogin() error {
	var p problems
	p.join(c.Login.Validate())
	if c.ReconcilePageSize < 1 || c.ReconcilePageSize > 1000 {
		p.add("RECONCILE_PAGE_SIZE %d must be between 1 and 1000 (the catalogue's largest $top)", c.ReconcilePageSize)
	}
	return p.err()
}

// ValidateSources checks that something feeds the stream, and the PULL
// source and the reconciler when they are on.
func (c Config) ValidateSources() error {
	var p problems
	pull, reconciling := c.PullSubscription != "", c.ReconcileInterval > 0
	if !c.Webhook && !pull && !reconciling {
		p.add("RECEIVER_WEBHOOK=false needs another source: PULL_SUBSCRIPTION_ID or RECONCILE_INTERVAL")
	}
	if pull || reconciling {
		if err := c.ValidateCatalogueLogin(); err != nil {
			p = append(p, fmt.Errorf("PULL_SUBSCRIPTION_ID and RECONCILE_INTERVAL: %w", err))
		}
	}
	if pull && c.PullInterval < 100*time.Millisecond {
		p.add("PULL_INTERVAL %s is too short", c.PullInterval)
	}
	if reconciling {
		if strings.TrimSpace(c.ReconcileFilter) == "" && c.InterestsFile == "" {
			p.add("RECONCILE_FILTER (or INTERESTS_FILE, whose union it then is) is required with RECONCILE_INTERVAL (an empty filter would list the whole catalogue)")
		}
		if _, err := event.ParseKinds(c.ReconcileEvents); err != nil {
			p.add("RECONCILE_EVENTS: %v", err)
		}
		if c.ReconcileInterval < time.Minute {
			p.add("RECONCILE_INTERVAL %s is shorter than 1m", c.ReconcileInterval)
		}
		if c.ReconcileLookback > c.DedupeWindow || c.ReconcileOverlap >= c.DedupeWindow {
			p.add("RECONCILE_LOOKBACK (%s) and RECONCILE_OVERLAP (%s) must fit in RECEIVER_DEDUPE_WINDOW (%s), or products delivered before it would be published again", c.ReconcileLookback, c.ReconcileOverlap, c.DedupeWindow)
		}
	}
	return p.err()
}

// maxWatchQuiet is the catalogue's pause of a running subscription
// without a notification: WATCH_QUIET must warn before it.
const maxWatchQuiet = 60 * 24 * time.Hour

// ValidateWatch checks the subscription watch's settings.
func (c Config) ValidateWatch() error {
	var p problems
	login := c.Login.Given()
	switch {
	case c.WatchInterval < 0:
		p.add("WATCH_INTERVAL %s must not be negative (0: off)", c.WatchInterval)
	case c.WatchInterval > 0 && c.WatchInterval < time.Minute:
		p.add("WATCH_INTERVAL %s is shorter than 1m: the catalogue's API is shared and rate-limited", c.WatchInterval)
	}
	if c.WatchQuiet <= 0 || c.WatchQuiet >= maxWatchQuiet {
		p.add("WATCH_QUIET %s must be more than 0 and less than 1440h (the catalogue pauses a subscription after 60 days without a notification)", c.WatchQuiet)
	}
	if !login && (c.WatchSubscription != "" || c.WatchResume) {
		p.add("WATCH_SUBSCRIPTION_ID and WATCH_RESUME need the catalogue login: CDSE_USERNAME and CDSE_PASSWORD (or CDSE_PASSWORD_FILE)")
	}
	if login && c.WatchInterval == 0 && (c.WatchSubscription != "" || c.WatchResume) {
		p.add("WATCH_SUBSCRIPTION_ID and WATCH_RESUME need WATCH_INTERVAL (it is 0: the watch is off)")
	}
	if c.WatchOn() {
		if err := c.ValidateCatalogueLogin(); err != nil {
			p = append(p, fmt.Errorf("WATCH_INTERVAL: %w", err))
		}
	}
	return p.err()
}

// ValidateLogging checks the log settings (internal/platform/logging's).
func (c Config) ValidateLogging() error { return c.Settings.Validate() }

// overlaps says whether the subjects <a>.> and <b>.> can share a subject.
func overlaps(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+".") || strings.HasPrefix(b, a+".")
}
