package config

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/auth"
	"github.com/cdse-jetstream/receiver/internal/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/cdselogin"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/interest"
	"github.com/cdse-jetstream/receiver/internal/natsconn"
	"github.com/cdse-jetstream/receiver/internal/topology"
)

// Route is how messages are shaped: subject and headers. It fails, as
// ValidateRoute does, on a template or STAC list it cannot use; a command
// never falls back to a default the server would refuse.
func (c Config) Route() (ingest.Route, error) {
	if err := c.routeProblems().err(); err != nil {
		return ingest.Route{}, err
	}
	t, _ := event.ParseTemplate(c.SubjectTemplate, c.SubjectPrefix)
	stac, _ := ingest.ParseStacCollections(c.StacCollections)
	return ingest.Route{Prefix: c.SubjectPrefix, Template: t, CloudEvents: c.CloudEvents,
		CatalogueURL: noneEmpty(c.CDSECatalogueURL), StacURL: noneEmpty(c.StacURL), StacCollections: stac}, nil
}

func noneEmpty(s string) string {
	if s == None {
		return ""
	}
	return s
}

// Interests is the router of INTERESTS_FILE (nil without one), its
// metrics on reg; route is given it, so every source routes alike.
func (c Config) Interests(route *ingest.Route, reg prometheus.Registerer, log logrus.FieldLogger) (*interest.Router, error) {
	if c.InterestsFile == "" {
		return nil, nil
	}
	r, err := interest.NewRouter(c.InterestsFile, reg, log)
	if err != nil {
		return nil, err
	}
	route.Interests, route.InterestPrefix = r, c.InterestPrefix
	return r, nil
}

// Catalogue is the catalogue's client, logged in as CDSE_USERNAME: PULL's,
// the reconciler's and the backfill's.
func (c Config) Catalogue() *catalogclient.Client {
	return catalogclient.New(c.CDSECatalogueURL, cdselogin.NewPasswordSource(c.Login()), nil)
}

// RouteWithInterests is Route with the interests' Router in it, as
// everything that publishes routes (the server, the backfill, a replay).
func (c Config) RouteWithInterests(reg prometheus.Registerer, log logrus.FieldLogger) (ingest.Route, *interest.Router, error) {
	route, err := c.Route()
	if err != nil {
		return route, nil, err
	}
	r, err := c.Interests(&route, reg, log)
	return route, r, err
}

// NATS is how to reach an external NATS (NATS_URL and its credentials).
func (c Config) NATS() natsconn.Options {
	return natsconn.Options{URL: c.NATSURL, CredsFile: c.NATSCreds, User: c.NATSUser, Password: c.NATSPassword,
		Token: c.NATSToken, CAFile: c.NATSCA}
}

// Login is the catalogue login of PULL, the reconciler and the backfill.
func (c Config) Login() cdselogin.PasswordConfig {
	return cdselogin.PasswordConfig{TokenURL: c.CDSETokenURL, ClientID: c.CDSEClientID,
		Username: c.CDSEUsername, Password: c.CDSEPassword, TOTP: c.CDSETOTP}
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

// Credentials are the static webhook credentials (none when only an
// htpasswd file is used).
func (c Config) Credentials() []auth.Credential {
	if c.Username == "" && c.Password == "" {
		return nil
	}
	return []auth.Credential{{User: c.Username, Password: c.Password}}
}

// TrustedProxyNets parses RECEIVER_TRUSTED_PROXIES.
func (c Config) TrustedProxyNets() ([]*net.IPNet, error) {
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
	for _, s := range settings {
		v := s.Value(c)
		switch {
		case s.Secret && v != "":
			v = "*****"
		case s.Name == "NATS_URL":
			v = natsconn.RedactURL(v)
		}
		f[s.Name] = v
	}
	return f
}

// Topology are the settings of the streams and buckets (internal/topology).
func (c Config) Topology() topology.Options {
	return topology.Options{Stream: c.Stream, SubjectPrefix: c.SubjectPrefix, Replicas: c.StreamReplicas,
		Duplicates: c.DedupeWindow, MaxAge: c.StreamMaxAge, MaxBytes: c.StreamMaxBytes,
		QuarantineStream: c.QuarantineStream, QuarantinePrefix: c.QuarantinePrefix, InterestPrefix: c.interestPrefix(),
		QuarantineMaxAge: c.QuarantineMaxAge, QuarantineMaxBytes: c.QuarantineMaxBytes}
}

// interestPrefix is the interests' subject prefix when there are
// interests, else "" (the stream captures no interest subjects).
func (c Config) interestPrefix() string {
	if c.InterestsFile == "" {
		return ""
	}
	return c.InterestPrefix
}
