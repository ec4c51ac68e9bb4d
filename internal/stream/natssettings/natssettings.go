// Package natssettings is the NATS settings the receiver and the fetcher
// share, each group declared once: how to reach NATS (NATS) and the
// product stream as both name it (ProductStream). Each binary's settings
// struct embeds the groups (internal/platform/settings reads their tags as
// the binary's own); their defaults and their checks are here. It is data:
// internal/stream/natsconn builds the connection from it, and it imports
// nothing of the running system.
package natssettings

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/platform/redact"
)

// NATS is how a binary reaches NATS: the servers, the login, the CA of
// their TLS.
type NATS struct {
	NATSURL      string `koanf:"NATS_URL" flag:"nats-url" help:"NATS server or cluster URL(s), comma-separated; empty in the receiver: its embedded server"`
	NATSCreds    string `koanf:"NATS_CREDS" flag:"nats-creds" help:"NATS credentials file (JWT and nkey)"`
	NATSUser     string `koanf:"NATS_USER" flag:"nats-user" help:"NATS user"`
	NATSPassword string `koanf:"NATS_PASSWORD" secret:"true" help:"NATS password (with NATS_USER)"`
	NATSToken    string `koanf:"NATS_TOKEN" secret:"true" help:"NATS token (neither with NATS_USER nor with NATS_CREDS)"`
	NATSCA       string `koanf:"NATS_CA" flag:"nats-ca" help:"CA file to verify the NATS servers' TLS"`
}

// Validate reports every problem of the NATS settings at once, each naming
// its setting and never a password: each URL of NATS_URL (when set; the
// binary says whether it may be empty), and a login of one kind.
func (n NATS) Validate() error {
	var errs []error
	if n.NATSURL != "" {
		for _, u := range strings.Split(n.NATSURL, ",") {
			if pu, err := url.Parse(strings.TrimSpace(u)); err != nil || pu.Host == "" {
				errs = append(errs, fmt.Errorf("NATS_URL: %q is not a URL like nats://host:4222", redact.URLs(u)))
			}
		}
	}
	if n.NATSToken != "" && (n.NATSUser != "" || n.NATSCreds != "") {
		errs = append(errs, errors.New("NATS_TOKEN cannot be combined with NATS_USER or NATS_CREDS"))
	}
	if n.NATSPassword != "" && n.NATSUser == "" {
		errs = append(errs, errors.New("NATS_PASSWORD needs NATS_USER"))
	}
	return errors.Join(errs...)
}

// ProductStream is the product stream as the receiver (which creates it)
// and the fetcher (which consumes it) name it, and the fetcher's durable
// consumer on it, which the receiver's embedded server keeps from the
// other consumers.
type ProductStream struct {
	Stream        string `koanf:"NATS_STREAM" flag:"stream" help:"name of the product stream"`
	SubjectPrefix string `koanf:"NATS_SUBJECT_PREFIX" flag:"subject-prefix" help:"subject prefix of the product stream"`
	FetchConsumer string `koanf:"FETCH_CONSUMER" flag:"fetch-consumer" help:"the fetcher's durable consumer on the product stream: the fetcher's replicas with the same name share the work; the receiver's embedded server lets no consumer create, change, delete, pull from or acknowledge on it"`
}

// DefaultProductStream is the product stream's defaults: the receiver's
// stream and subjects, the fetcher's consumer.
func DefaultProductStream() ProductStream {
	return ProductStream{Stream: event.DefaultStream, SubjectPrefix: event.DefaultPrefix, FetchConsumer: "fetcher"}
}

// Validate reports the problems of the stream's name and subjects at once.
func (p ProductStream) Validate() error {
	var errs []error
	if !ValidStreamName(p.Stream) {
		errs = append(errs, fmt.Errorf("NATS_STREAM %q must be 1-64 characters of [A-Za-z0-9_-]", p.Stream))
	}
	errs = append(errs, CheckPrefix("NATS_SUBJECT_PREFIX", p.SubjectPrefix))
	return errors.Join(errs...)
}

// ValidateFetchConsumer checks the fetcher's durable's name, where it is
// used (the fetcher; the receiver's embedded server, which names it in its
// permissions).
func (p ProductStream) ValidateFetchConsumer() error {
	if !subjectToken.MatchString(p.FetchConsumer) {
		return fmt.Errorf("FETCH_CONSUMER %q must be a name of [A-Za-z0-9_-] (the fetcher's durable, which consumers are denied)", p.FetchConsumer)
	}
	return nil
}

var (
	subjectToken = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	streamName   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// ValidStreamName says whether name may name one of our streams: 1 to 64
// characters of [A-Za-z0-9_-].
func ValidStreamName(name string) bool { return streamName.MatchString(name) }

// ValidPrefix says whether prefix may begin our subjects: dot-separated
// tokens of [A-Za-z0-9_-].
func ValidPrefix(prefix string) bool {
	for _, tok := range strings.Split(prefix, ".") {
		if !subjectToken.MatchString(tok) {
			return false
		}
	}
	return true
}

// PrefixesOverlap says whether the subjects <a>.> and <b>.> can share a
// subject: the rule both binaries' settings check their prefixes by.
func PrefixesOverlap(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+".") || strings.HasPrefix(b, a+".")
}

// CheckPrefix is the problem of the subject prefix of the setting name,
// nil when it is a valid prefix.
func CheckPrefix(name, prefix string) error {
	if !ValidPrefix(prefix) {
		return fmt.Errorf("%s %q must be dot-separated tokens of [A-Za-z0-9_-]", name, prefix)
	}
	return nil
}

// Notices are the subjects of the receiver's notices of supersession, as
// the receiver (which puts them in the product stream) and the fetcher
// (which reads them with FETCH_ON_SUPERSEDED=delete) name them.
type Notices struct {
	VersionsPrefix string `koanf:"RECEIVER_VERSIONS_SUBJECT_PREFIX" flag:"versions-subject-prefix" help:"subjects of the notices, <prefix>.<collection>.<productType>, in the product stream; a second receiver on the same NATS needs its own (the fetcher reads them with FETCH_ON_SUPERSEDED=delete)"`
}

// DefaultNotices are the notices' subjects by default.
func DefaultNotices() Notices { return Notices{VersionsPrefix: event.DefaultSupersededPrefix} }

// Validate reports a prefix that cannot begin subjects.
func (n Notices) Validate() error {
	return CheckPrefix("RECEIVER_VERSIONS_SUBJECT_PREFIX", n.VersionsPrefix)
}
