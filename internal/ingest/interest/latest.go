package interest

import (
	"github.com/nats-io/nats.go"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
	"github.com/cdse-jetstream/receiver/internal/stream/supersede"
)

// Latest is the versions consumer's Copier (supersede.Copier) for the
// interests that take the latest versions only: the ingest path names
// those it routed a product event to on the product message
// (event.HeaderLatestInterests), evaluated as it evaluates the others
// when it stores it; the Copier copies to those names, shaped as route
// shapes the ingest path's copies (route's Prefix and InterestPrefix).
// What is in force when the consumer reads the message, which may trail
// by a reload or by days, decides nothing but whether each interest
// named still exists.
func (r *Router) Latest(route *ingest.Route) supersede.Copier {
	return &latest{r: r, route: route}
}

type latest struct {
	r     *Router
	route *ingest.Route
}

var _ supersede.Copier = (*latest)(nil)

// Interests are the names of the interests that take the latest versions
// only the ingest path routed the product message to.
func (l *latest) Interests(p supersede.Product) []string {
	var names []string
	for _, to := range ingest.LatestInterests(p.Header) {
		names = append(names, to.Name)
	}
	return names
}

// Copies are p's copies to the interests named on it that still exist
// (whatever they take now: the ingest path did not copy to them), each
// with the subject, headers and Nats-Msg-Id the ingest path gives a copy;
// dropped names those whose copy this route cannot make (a product
// message not under its product subjects).
func (l *latest) Copies(p supersede.Product) (copies []*nats.Msg, dropped []string) {
	routed := ingest.LatestInterests(p.Header)
	if len(routed) == 0 {
		return nil, nil
	}
	s := l.r.set.Load()
	for _, to := range routed {
		if !s.Has(to.Name) {
			l.r.log.WithField("subject", p.Subject).WithField("interest", to.Name).
				Info("a product routed to an interest that takes the latest versions only, which is no longer in force: not copied")
			continue
		}
		c, ok := l.route.CopyOfStored(p.Subject, p.Header, p.Data, to)
		if !ok {
			dropped = append(dropped, to.Name)
			continue
		}
		copies = append(copies, natsMsg(c))
	}
	return copies, dropped
}

// Notice is the notice m's copy to the interest name, under its subjects
// (<prefix>.<name>.superseded.<collection>.<productType>); false when no
// interest of that name takes the latest versions only in the set now in
// force (removed, renamed or switched to all since the product was taken
// in): its subjects are no longer the notices'.
func (l *latest) Notice(m *nats.Msg, name string) (*nats.Msg, bool) {
	if !l.r.set.Load().TakesLatest(name) {
		return nil, false
	}
	return natsMsg(l.route.NoticeCopy(m.Header, m.Data, name, m.Header.Get(event.HeaderCollection), m.Header.Get(event.HeaderProductType))), true
}

func natsMsg(c publish.Message) *nats.Msg {
	return &nats.Msg{Subject: c.Subject, Header: c.Header, Data: c.Data}
}
