package interest

import (
	"github.com/nats-io/nats.go"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/cdse/productfilter"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/ingest/interestfile"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
	"github.com/cdse-jetstream/receiver/internal/stream/supersede"
)

// Latest is the versions consumer's Copier (supersede.Copier) for the
// interests in force that take the latest versions only: it evaluates
// them as the ingest path evaluates the others, and shapes their copies as
// route does (route's Prefix and InterestPrefix: the ingest path's).
func (r *Router) Latest(route *ingest.Route) supersede.Copier {
	return &latest{r: r, route: route}
}

type latest struct {
	r     *Router
	route *ingest.Route
}

var _ supersede.Copier = (*latest)(nil)

// product is n's product as the set's filters read it, nil when the
// notification carries none (no interest takes it).
func product(s *interestfile.Set, n *notification.Notification) *productfilter.Product {
	p, ok := productfilter.FromNotification(n, s.Needs())
	if !ok {
		return nil
	}
	return &p
}

// Interests are the names of the interests taking the latest versions
// only whose filter matches n's product, whatever the event and its age:
// a notice says something of a product they hold or would hold.
func (l *latest) Interests(n *notification.Notification) []string {
	s := l.r.set.Load()
	if !s.HasLatest() {
		return nil
	}
	p := product(s, n)
	if p == nil {
		return nil
	}
	var names []string
	for i := range s.Interests {
		if in := &s.Interests[i]; in.Latest() {
			if ok, _ := in.Filter.Evaluate(p); ok {
				names = append(names, in.Name)
			}
		}
	}
	return names
}

// Copies are p's copies to the interests taking the latest versions only
// that take its event, evaluated at the event's own time (when the ingest
// path stored it, not when the consumer reads it: a consumer that trails
// evaluates a maxSensingAge as the ingest path would have).
func (l *latest) Copies(sp supersede.Product) []*nats.Msg {
	s := l.r.set.Load()
	if !s.HasLatest() {
		return nil
	}
	p := product(s, sp.N)
	if p == nil {
		return nil
	}
	at := sp.N.EventTime()
	if at.IsZero() {
		at = l.r.now()
	}
	var out []*nats.Msg
	for i := range s.Interests {
		in := &s.Interests[i]
		if !in.Latest() {
			continue
		}
		ok, why := in.Takes(sp.N.Event, p, at)
		if !ok {
			continue
		}
		c, ok := l.route.CopyOfStored(sp.Subject, sp.Header, sp.Data, ingest.Routed{Name: in.Name, AreaUnevaluated: string(why)})
		if !ok {
			l.r.log.WithField("subject", sp.Subject).WithField("interest", in.Name).
				Warn("a product message not under the product subjects of this receiver's route: no copy for an interest that takes the latest versions only")
			continue
		}
		out = append(out, natsMsg(c))
	}
	return out
}

// Notice is the notice m's copy to the interest name: under its
// subjects, <prefix>.<name>.superseded.<collection>.<productType>.
func (l *latest) Notice(m *nats.Msg, name string) *nats.Msg {
	return natsMsg(l.route.NoticeCopy(m.Header, m.Data, name, m.Header.Get(event.HeaderCollection), m.Header.Get(event.HeaderProductType)))
}

func natsMsg(c publish.Message) *nats.Msg {
	return &nats.Msg{Subject: c.Subject, Header: c.Header, Data: c.Data}
}
