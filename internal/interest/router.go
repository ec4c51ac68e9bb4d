package interest

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/notification"
	"github.com/cdse-jetstream/receiver/internal/productfilter"
	"github.com/cdse-jetstream/receiver/internal/publish"
)

// Router is the receiver's side: the interests file in force (reloaded
// when it changes; a broken file is refused and the last good one kept),
// evaluated for every product event stored.
type Router struct {
	path string
	log  logrus.FieldLogger
	now  func() time.Time

	set atomic.Pointer[Set]
	mu  sync.Mutex // reloads
	// sum is the content of the file last read: a change is a change of
	// content, not of time, because a mounted ConfigMap changes by a
	// symlink swap and two writes may share a timestamp.
	sum [32]byte

	unmatched *prometheus.CounterVec
	routed    *prometheus.CounterVec
	reloads   *prometheus.CounterVec
	loaded    prometheus.Gauge
	// told are the kinds of unmatched products already logged (event,
	// collection, product type): once each, at most maxTold.
	toldMu sync.Mutex
	told   map[[3]string]bool
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
	}
	for _, c := range []prometheus.Collector{r.unmatched, r.routed, r.reloads, r.loaded} {
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
	b, err := readFile(path)
	if err != nil {
		return nil, err
	}
	s, err := parseFile(path, b)
	if err != nil {
		return nil, err
	}
	r.install(s, sha256.Sum256(b))
	return r, nil
}

func (r *Router) install(s *Set, sum [32]byte) {
	r.set.Store(s)
	r.sum = sum
	r.loaded.Set(float64(s.Len()))
	for _, in := range s.Interests {
		r.routed.WithLabelValues(in.Name)
	}
}

// Current is the set in force.
func (r *Router) Current() *Set { return r.set.Load() }

// Reload re-reads the file and takes it when its content changed (force:
// whatever it is, for SIGHUP). A broken file is refused: the last good
// set stays in force, and the error says why.
func (r *Router) Reload(force bool) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, err := readFile(r.path)
	if err != nil {
		r.reloads.WithLabelValues("failed").Inc()
		return false, err
	}
	sum := sha256.Sum256(b)
	if !force && sum == r.sum {
		return false, nil
	}
	s, err := parseFile(r.path, b)
	if err != nil {
		r.reloads.WithLabelValues("failed").Inc()
		r.sum = sum // told once per change, not every check
		return false, err
	}
	r.install(s, sum)
	r.reloads.WithLabelValues("ok").Inc()
	return true, nil
}

// Match returns the interests n is routed to, appended to names. It reads
// the notification's product (none for the short form: no interest).
func (r *Router) Match(n *notification.Notification, names []string) []string {
	s := r.set.Load()
	if !s.wants(n.Event) { // nothing to read the product for
		r.tell(n)
		return names
	}
	var p *productfilter.Product
	if prod, ok := productfilter.FromNotification(n, &s.needs); ok {
		p = &prod
	}
	before := len(names)
	names = s.Match(n.Event, p, r.now(), names)
	if len(names) == before {
		r.tell(n)
	}
	return names
}

// Count notes what was stored: each copy JetStream stored anew, by its
// interest, and each product message stored anew that matched none.
// Duplicates (the catalogue's resends, the reconciler's overlap, a retry
// after a publish that stored only part) are not counted: the metrics say
// what each interest's subjects received.
func (r *Router) Count(msgs []publish.Message, res []publish.Result) {
	for i := range res {
		m := &msgs[i]
		if len(m.Copies) == 0 {
			if !res[i].Duplicate {
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
