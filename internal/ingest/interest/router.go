// Package interest is the receiver's side of the interests
// (internal/ingest/interestfile): the file in force, reloaded when it changes (a broken
// file refused, the last good one kept), evaluated for every product event
// stored, with its metrics. An interest that takes the latest versions
// only (versions: latest) gets no copy on the ingest path: the versions
// consumer (internal/stream/supersede) makes its copies after deciding,
// through the Copier of latest.go.
package interest

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/cdse/productfilter"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/ingest/interestfile"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
)

// Router is the receiver's side: the interests file in force (reloaded
// when it changes; a broken file is refused and the last good one kept),
// evaluated for every product event stored.
type Router struct {
	path string
	log  logrus.FieldLogger
	now  func() time.Time

	set atomic.Pointer[interestfile.Set]
	mu  sync.Mutex // reloads
	// sum is the content of the file last read: a change is a change of
	// content, not of time, because a mounted ConfigMap changes by a
	// symlink swap and two writes may share a timestamp.
	sum [32]byte

	unmatched *prometheus.CounterVec
	routed    *prometheus.CounterVec
	reloads   *prometheus.CounterVec
	loaded    prometheus.Gauge
	// unevaluated counts copies routed without their area evaluated, by
	// reason (productfilter.UnevaluatedReasons).
	unevaluated *prometheus.CounterVec
	// told are the kinds of unmatched products already logged (event,
	// collection, product type): once each, at most maxTold.
	toldMu sync.Mutex
	told   map[[3]string]bool
	// noVersions: the versions consumer is off (RECEIVER_VERSIONS=false),
	// and a file with an interest that takes the latest versions only is
	// refused on reload, as the configuration's check refuses it at start.
	noVersions bool
}

const maxTold = 1000

// NewRouter loads the file at path (refusing to start on a broken one);
// its metrics are registered on reg.
func NewRouter(path string, reg prometheus.Registerer, log logrus.FieldLogger) (*Router, error) {
	r := &Router{path: path, log: log.WithField("component", "interests"), now: time.Now, told: map[[3]string]bool{},
		unmatched: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cdse_receiver_interest_unmatched_total",
			Help: "Product events stored (not duplicates) that match no interest, by event: the subscription is wider than the interests, or the receiver's evaluation disagrees with the catalogue's."}, []string{"event"}),
		routed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cdse_receiver_interest_routed_total",
			Help: "Product events stored on an interest's subjects (a copy, not a duplicate), by interest."}, []string{"interest"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cdse_receiver_interests_reloads_total",
			Help: "Reloads of INTERESTS_FILE after a change, by result (ok; failed: the file was refused and the last good one stays in force)."}, []string{"result"}),
		loaded: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cdse_receiver_interests", Help: "Interests in force."}),
		unevaluated: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cdse_receiver_interest_area_unevaluated_total",
			Help: "Interest copies routed without their area evaluated (failing open, with a Cdse-Area-Unevaluated header), by reason: the product's footprint has a coordinate no footprint has or more parts or vertices than the caps, or testing it against the area would cost too much."}, []string{"reason"}),
	}
	for _, c := range []prometheus.Collector{r.unmatched, r.routed, r.reloads, r.loaded, r.unevaluated} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register interest metrics: %w", err)
		}
	}
	for _, ev := range event.Kinds {
		r.unmatched.WithLabelValues(string(ev))
	}
	for _, res := range []string{"ok", "failed"} {
		r.reloads.WithLabelValues(res)
	}
	for _, why := range productfilter.UnevaluatedReasons {
		r.unevaluated.WithLabelValues(string(why))
	}
	b, err := interestfile.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := interestfile.ParseFile(path, b)
	if err != nil {
		return nil, err
	}
	r.install(s, sha256.Sum256(b))
	return r, nil
}

func (r *Router) install(s *interestfile.Set, sum [32]byte) {
	r.set.Store(s)
	r.sum = sum
	r.loaded.Set(float64(s.Len()))
	for _, in := range s.Interests {
		r.routed.WithLabelValues(in.Name)
	}
}

// NoVersions says the versions consumer is off: a reloaded file with an
// interest that takes the latest versions only is refused (the last good
// one stays in force), nothing being there to decide what is the latest.
func (r *Router) NoVersions() { r.noVersions = true }

// Current is the set in force.
func (r *Router) Current() *interestfile.Set { return r.set.Load() }

// Reload re-reads the file and takes it when its content changed (force:
// whatever it is, for SIGHUP). A broken file is refused: the last good
// set stays in force, and the error says why.
func (r *Router) Reload(force bool) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, err := interestfile.ReadFile(r.path)
	if err != nil {
		r.reloads.WithLabelValues("failed").Inc()
		return false, err
	}
	sum := sha256.Sum256(b)
	if !force && sum == r.sum {
		return false, nil
	}
	s, err := interestfile.ParseFile(r.path, b)
	if err == nil && r.noVersions {
		if err = s.RequireVersions(); err != nil {
			err = fmt.Errorf("interests %s: %w", r.path, err)
		}
	}
	if err != nil {
		r.reloads.WithLabelValues("failed").Inc()
		r.sum = sum // told once per change, not every check
		return false, err
	}
	r.install(s, sum)
	r.reloads.WithLabelValues("ok").Inc()
	return true, nil
}

// route appends the interests a product event is routed to, each with why
// its area was not evaluated when it is routed failing open (no strings
// built: the request path); those that take the latest versions only are
// marked Later: the versions consumer copies them.
func route(s *interestfile.Set, ev event.Kind, p *productfilter.Product, now time.Time, routes []ingest.Routed) []ingest.Routed {
	if p == nil {
		return routes
	}
	for i := range s.Interests {
		if ok, why := s.Interests[i].Takes(ev, p, now); ok {
			routes = append(routes, ingest.Routed{Name: s.Interests[i].Name, AreaUnevaluated: string(why), Later: s.Interests[i].Latest()})
		}
	}
	return routes
}

// Match returns the interests n is routed to, appended to routes. It
// reads the notification's product (none for the short form: no
// interest). Copies routed without their area evaluated are counted and
// logged here, when the event is evaluated for publishing.
func (r *Router) Match(n *notification.Notification, routes []ingest.Routed) []ingest.Routed {
	s := r.set.Load()
	if !s.Wants(n.Event) { // nothing to read the product for
		r.tell(n)
		return routes
	}
	var p *productfilter.Product
	if prod, ok := productfilter.FromNotification(n, s.Needs()); ok {
		p = &prod
	}
	before := len(routes)
	routes = route(s, n.Event, p, r.now(), routes)
	if len(routes) == before {
		r.tell(n)
	}
	for i := before; i < len(routes); i++ {
		if routes[i].AreaUnevaluated != "" && !routes[i].Later {
			r.unevaluatedArea(n, routes[before:])
			break
		}
	}
	return routes
}

// unevaluatedArea counts the copies of n routed without their area
// evaluated and says so in one log line: the product, the reason, the
// interests (never the body, which may be megabytes of footprint).
func (r *Router) unevaluatedArea(n *notification.Notification, routes []ingest.Routed) {
	var names []string
	why := ""
	for _, to := range routes {
		if to.AreaUnevaluated == "" || to.Later {
			continue
		}
		r.unevaluated.WithLabelValues(to.AreaUnevaluated).Inc()
		names = append(names, to.Name)
		if why == "" {
			why = to.AreaUnevaluated
		}
	}
	r.log.WithFields(logrus.Fields{"event": string(n.Event), "product_id": n.ProductID, "reason": why, "interests": strings.Join(names, ",")}).
		Warn("the product's footprint was not tested against the interests' areas: routed to them failing open, with a Cdse-Area-Unevaluated header (counted in cdse_receiver_interest_area_unevaluated_total)")
}

// Count notes what was stored: each copy JetStream stored anew, by its
// interest, and each product message stored anew that matched none.
// Duplicates (the catalogue's resends, the reconciler's overlap, a retry
// after a publish that stored only part) are not counted: the metrics say
// what each interest's subjects received. A product routed only to
// interests that take the latest versions only has copies, none of them
// made here (not nil): it is not unmatched.
func (r *Router) Count(msgs []publish.Message, res []publish.Result) {
	for i := range res {
		m := &msgs[i]
		if len(m.Copies) == 0 {
			if m.Copies == nil && !res[i].Duplicate {
				r.unmatched.WithLabelValues(m.Event).Inc()
			}
			continue
		}
		for j, stored := range res[i].CopiesStored {
			if !stored {
				continue
			}
			if name, ok := ingest.CopyInterest(m.Copies[j].MsgID); ok {
				r.routed.WithLabelValues(name).Inc()
			}
		}
	}
}

// tell logs an unmatched kind of product once.
func (r *Router) tell(n *notification.Notification) {
	kind := [3]string{string(n.Event), n.Collection, n.ProductType}
	r.toldMu.Lock()
	seen := r.told[kind]
	if !seen && len(r.told) < maxTold {
		r.told[kind] = true
	}
	r.toldMu.Unlock()
	if seen {
		return
	}
	r.log.WithFields(logrus.Fields{"event": kind[0], "collection": kind[1], "product_type": kind[2], "product_id": n.ProductID}).
		Warn("a product event matches no interest: the subscription is wider than the interests, or the receiver's evaluation disagrees with the catalogue's (logged once per event, collection and product type; counted in cdse_receiver_interest_unmatched_total)")
}
