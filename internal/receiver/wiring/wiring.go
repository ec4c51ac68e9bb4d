// Package wiring builds, from a validated configuration, the parts the
// receiver's server (internal/receiver/app) and its one-shot commands (backfill,
// quarantine, interests check) share: the route with its interests, the
// catalogue client, the NATS connection and the streams' owner. The
// configuration (internal/receiver/config) is data and builds nothing; what is built
// from it is built here, once for every binary.
package wiring

import (
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdselogin"
	"github.com/cdse-jetstream/receiver/internal/cdse/stac"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/ingest/interest"
	"github.com/cdse-jetstream/receiver/internal/ingest/quarantine"
	"github.com/cdse-jetstream/receiver/internal/receiver/auth"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/stream/embedded"
	"github.com/cdse-jetstream/receiver/internal/stream/natsconn"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
	"github.com/cdse-jetstream/receiver/internal/stream/supersede"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
)

// Route is how messages are shaped: subject and headers. It fails, as
// ValidateRoute does, on a template or STAC list it cannot use; a command
// never falls back to a default the server would refuse.
func Route(c config.Config) (ingest.Route, error) {
	if err := c.ValidateShape(); err != nil {
		return ingest.Route{}, err
	}
	t, _ := event.ParseTemplate(c.SubjectTemplate, c.SubjectPrefix)
	colls, _ := stac.ParseCollections(c.StacCollections)
	return ingest.Route{Prefix: c.SubjectPrefix, Template: t, CloudEvents: c.CloudEvents,
		CatalogueURL: noneEmpty(c.CDSECatalogueURL), StacURL: noneEmpty(c.StacURL), StacCollections: colls}, nil
}

func noneEmpty(s string) string {
	if s == config.None {
		return ""
	}
	return s
}

// Interests is the router of INTERESTS_FILE (nil without one), its
// metrics on reg; route is given it, so every source routes alike.
func Interests(c config.Config, route *ingest.Route, reg prometheus.Registerer, log logrus.FieldLogger) (*interest.Router, error) {
	if c.InterestsFile == "" {
		return nil, nil
	}
	r, err := interest.NewRouter(c.InterestsFile, reg, log)
	if err != nil {
		return nil, err
	}
	if !c.Versions {
		r.NoVersions()
	}
	route.Interests, route.InterestPrefix = r, c.InterestPrefix
	return r, nil
}

// Catalogue is the catalogue's client, logged in as CDSE_USERNAME: PULL's,
// the reconciler's and the backfill's.
func Catalogue(c config.Config) *catalogclient.Client {
	return catalogclient.New(c.CDSECatalogueURL, cdselogin.NewPasswordSource(cdselogin.FromSettings(c.Login)), nil)
}

// RouteWithInterests is Route with the interests' Router in it, as
// everything that publishes routes (the server, the backfill, a replay).
func RouteWithInterests(c config.Config, reg prometheus.Registerer, log logrus.FieldLogger) (ingest.Route, *interest.Router, error) {
	route, err := Route(c)
	if err != nil {
		return route, nil, err
	}
	unversioned := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cdse_receiver_products_unversioned_total",
		Help: "Product messages without Cdse-Acquisition and Cdse-Version, by why no naming rule decided: other_mission, unparsed, unsupported, nrti, unofficial_baseline, no_date."}, []string{"reason"})
	if err := reg.Register(unversioned); err != nil {
		return route, nil, err
	}
	route.Unversioned = func(reason string) { unversioned.WithLabelValues(reason).Inc() }
	r, err := Interests(c, &route, reg, log)
	return route, r, err
}

// Credentials are the static webhook credentials (none when only an
// htpasswd file is used).
func Credentials(c config.Config) []auth.Credential {
	if c.Username == "" && c.Password == "" {
		return nil
	}
	return []auth.Credential{{User: c.Username, Password: c.Password}}
}

// Topology are the settings of the streams and buckets (internal/stream/topology).
func Topology(c config.Config) topology.Options {
	return topology.Options{Stream: c.Stream, SubjectPrefix: c.SubjectPrefix, Replicas: c.StreamReplicas,
		Duplicates: c.DedupeWindow, MaxAge: c.StreamMaxAge, MaxBytes: c.StreamMaxBytes,
		QuarantineStream: c.QuarantineStream, QuarantinePrefix: c.QuarantinePrefix, InterestPrefix: interestPrefix(c),
		QuarantineMaxAge: c.QuarantineMaxAge, QuarantineMaxBytes: c.QuarantineMaxBytes,
		CompleteStream: c.CompleteStream, CompletePrefix: c.CompletePrefix, SupersededPrefix: SupersededPrefix(c)}
}

// SupersededPrefix is the notices' subject prefix when the versions
// consumer is on (RECEIVER_VERSIONS), else "" (the stream captures no
// notice subjects).
func SupersededPrefix(c config.Config) string {
	if !c.Versions {
		return ""
	}
	return c.VersionsPrefix
}

// Versions is the versions consumer of the server (nil when
// RECEIVER_VERSIONS is off), its metrics on reg; with interests (r, nil
// without INTERESTS_FILE) it makes the copies of those that take the
// latest versions only, shaped by route.
func Versions(t *topology.Topology, c config.Config, route *ingest.Route, r *interest.Router, reg prometheus.Registerer, log logrus.FieldLogger) (*supersede.Tracker, error) {
	if !c.Versions {
		return nil, nil
	}
	o := supersede.Options{MaxAge: c.VersionsMaxAge}
	if r != nil {
		o.Copier = r.Latest(route)
	}
	return supersede.New(o, t, reg, log)
}

// interestPrefix is the interests' subject prefix when there are
// interests, else "" (the stream captures no interest subjects).
func interestPrefix(c config.Config) string {
	if c.InterestsFile == "" {
		return ""
	}
	return c.InterestPrefix
}

// Connect connects a one-shot command with the receiver's NATS settings:
// NATS_URL and its credentials, or, with the embedded server, the running
// receiver's server through the login it left in the data directory. The
// streams and buckets are reached through their owner.
func Connect(c config.Config, name string) (*nats.Conn, *topology.Topology, error) {
	o := natsconn.FromSettings(c.NATS)
	if c.NATSURL == "" {
		var err error
		if o, err = embedded.ReadLogin(c.DataDir); err != nil {
			return nil, nil, err
		}
	}
	nc, err := natsconn.ConnectOnce(o, name)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("jetstream: %w", err)
	}
	return nc, topology.New(js, Topology(c)), nil
}

// Publisher is the product stream's publisher with the receiver's
// settings. The server keeps a memory of the ids it stored (recent, for
// the dedupe window); a one-shot command keeps none.
func Publisher(nc *nats.Conn, c config.Config, reg prometheus.Registerer, recent bool) (*publish.Publisher, error) {
	o := publish.PublisherOptions{Stream: c.Stream, Timeout: c.PublishTimeout}
	if recent {
		o.RecentIDs, o.RecentTTL = 100_000, c.DedupeWindow
	}
	return publish.NewPublisher(nc, o, reg)
}

// Quarantine is the store of refused bodies, written with the publish
// timeout.
func Quarantine(t *topology.Topology, c config.Config, reg prometheus.Registerer, log logrus.FieldLogger) (*quarantine.Store, error) {
	return quarantine.New(t, c.PublishTimeout, reg, log)
}

// ListingFilter is what the reconciler and the backfill list the catalogue
// with: RECONCILE_FILTER, else the interests' union as it is now (what
// register apply registers), else "".
func ListingFilter(c config.Config, r *interest.Router) string {
	if strings.TrimSpace(c.ReconcileFilter) != "" || r == nil {
		return c.ReconcileFilter
	}
	return r.Current().Compile().Filter
}
