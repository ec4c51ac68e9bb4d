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
	"github.com/cdse-jetstream/receiver/internal/ingest/webhook/webhooksettings"
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
// endpoint is public (webhooksettings checks it; receiver htpasswd too).
const MinPasswordLength = webhooksettings.MinPasswordLength

func (p *problems) add(format string, a ...any) { *p = append(*p, fmt.Errorf(format, a...)) }
func (p problems) err() error                   { return errors.Join(p...) }

// join adds the problems of a group of settings the receiver shares with
// the fetcher, checked where the group is declared.
func (p *problems) join(err error) {
	if err != nil {
		*p = append(*p, err)
	}
}

// ValidateWebhook checks the PUSH endpoint: its own settings
// (webhooksettings), and how they sit with the admin listener, the
// publish and shutdown timeouts and ACME.
func (c Config) ValidateWebhook() error {
	var p problems
	if !c.Webhook {
		return nil
	}
	p.join(c.Push.Validate())
	if c.Addr == c.AdminAddr && !strings.HasSuffix(c.Addr, ":0") {
		p.add("RECEIVER_ADDR and RECEIVER_ADMIN_ADDR must differ: the admin endpoints must not be public")
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
		if natssettings.PrefixesOverlap(c.InterestPrefix, c.SubjectPrefix) || natssettings.PrefixesOverlap(c.InterestPrefix, c.QuarantinePrefix) {
			p.add("INTEREST_SUBJECT_PREFIX %q overlaps NATS_SUBJECT_PREFIX %q or QUARANTINE_SUBJECT_PREFIX %q: a consumer of the product subjects would get the interests' copies too", c.InterestPrefix, c.SubjectPrefix, c.QuarantinePrefix)
		}
	}
	if natssettings.PrefixesOverlap(c.QuarantinePrefix, c.SubjectPrefix) {
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
		if o.name != name && natssettings.PrefixesOverlap(prefix, o.prefix) {
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
	p.join(c.Reconcile.ValidatePageSize())
	return p.err()
}

// ValidateSources checks that something feeds the stream, the catalogue
// login PULL and the reconciler need, and each of them when it is on
// (its own group's checks).
func (c Config) ValidateSources() error {
	var p problems
	groups := c.sources()
	var names, login []string
	var on, onWithLogin bool
	for _, g := range groups {
		names = append(names, g.name)
		if g.login {
			login = append(login, g.name)
		}
		on = on || g.on
		onWithLogin = onWithLogin || g.on && g.login
	}
	if !c.Webhook && !on {
		p.add("RECEIVER_WEBHOOK=false needs another source: %s", strings.Join(names, " or "))
	}
	if onWithLogin {
		if err := c.ValidateCatalogueLogin(); err != nil {
			p = append(p, fmt.Errorf("%s: %w", strings.Join(login, " and "), err))
		}
	}
	for _, g := range groups {
		p.join(g.problems)
	}
	return p.err()
}

// ValidateWatch checks the subscription watch's settings (watchsettings),
// and the catalogue login when the watch is on.
func (c Config) ValidateWatch() error {
	var p problems
	p.join(c.Watch.Validate(c.Login.Given()))
	if c.WatchOn() {
		if err := c.ValidateCatalogueLogin(); err != nil {
			p = append(p, fmt.Errorf("WATCH_INTERVAL: %w", err))
		}
	}
	return p.err()
}

// ValidateLogging checks the log settings (internal/platform/logging's).
func (c Config) ValidateLogging() error { return c.Settings.Validate() }
