// Package ingest turns validated notifications into the messages every
// source publishes — the webhook (push), the PULL queue (pull), the
// reconciler (reconcile) and the backfill command (backfill) — so that all
// of them route and deduplicate exactly alike: same subject, same headers,
// same Nats-Msg-Id.
package ingest

import (
	"net/url"
	"strings"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
)

// Sources, the values of the Cdse-Source header.
const (
	SourcePush      = "push"
	SourcePull      = "pull"
	SourceReconcile = "reconcile"
	SourceBackfill  = "backfill"
)

// Route says how messages are shaped: their subject and the headers that
// depend on the receiver's settings.
type Route struct {
	// Prefix starts every subject ("cdse.product"); Template lays out the
	// rest (the zero Template is event.DefaultTemplate).
	Prefix   string
	Template event.Template
	// CloudEvents adds the attributes of the CloudEvents NATS binding's
	// binary content mode (ce-* headers); the data stays the catalogue's.
	CloudEvents bool
	// CatalogueURL is the catalogue's OData base, for Cdse-Download-Url and
	// ce-source; "" leaves both out.
	CatalogueURL string
	// StacURL is the STAC API's base, for Cdse-Stac-Url; StacCollections
	// maps a product type to its STAC collection. A product whose type is
	// not in the map gets no Cdse-Stac-Url: the receiver never guesses.
	StacURL         string
	StacCollections map[string]string
	// Interests, when set, route a copy of each product event to every
	// interest it matches, on <InterestPrefix>.<name>.<the template's
	// tokens>, stored with the product message or not at all.
	Interests      Interests
	InterestPrefix string
	// Unversioned, when set, is told why a product got no
	// Cdse-Acquisition and Cdse-Version (versions.Reason*): a metric.
	Unversioned func(reason string)
}

// Interests says which named interests a notification is routed to
// (internal/ingest/interest's Router), appending them to routes.
type Interests interface {
	Match(n *notification.Notification, routes []Routed) []Routed
}

// Routed is one interest a notification is routed to.
type Routed struct {
	Name string
	// AreaUnevaluated is why the interest's area was not evaluated
	// against the product's footprint (productfilter.Unevaluated: a
	// coordinate of 1e300, more vertices than the caps), "" when it was
	// or the interest has none. The copy is routed failing open, and
	// event.HeaderAreaUnevaluated tells its consumer.
	AreaUnevaluated string
	// Later: the interest takes the latest versions only, and its copy
	// is made after the versions consumer's decision
	// (internal/stream/supersede), not with the product message. The
	// route is kept so that the product counts as routed.
	Later bool
}

// Messages builds one message per notification, its data the notification's
// own bytes.
// r is shared by the messages' lazy headers, not copied per request.
func Messages(ns []notification.Notification, r *Route, source string) []publish.Message {
	msgs := make([]publish.Message, len(ns))
	built := make([]message, len(ns)) // one allocation for every message's state
	for i := range ns {
		n := &ns[i]
		m := &built[i]
		*m = message{n: n, id: n.DedupeKey(), subject: r.Template.Subject(r.Prefix, n), source: source, r: r}
		msgs[i] = publish.Message{Subject: m.subject, MsgID: m.id, Data: n.Raw, Headers: m.headers,
			Event: string(n.Event), Occurred: n.EventTime()}
		if r.Interests != nil {
			msgs[i].MakeCopies = m.copies
		}
	}
	return msgs
}

// message is what a product message's lazy parts share: its headers,
// built once for the message and its interest copies. Publish calls
// headers, then copies, from one goroutine.
type message struct {
	n           *notification.Notification
	id, subject string
	source      string
	r           *Route
	header      map[string][]string
	// routes are the interests the event is routed to, evaluated once
	// (routed), before the product message's headers are built: those
	// that take the latest versions only are named in them.
	routes []Routed
	routed bool
}

// headers are the product message's headers, built on first use; with
// interests, after the routing, so that the product message names the
// interests that take the latest versions only it was routed to
// (event.HeaderLatestInterests): the versions consumer copies it to
// those, as they were when it was stored.
func (m *message) headers() map[string][]string {
	if m.header == nil {
		m.header = headers(m.n, m.id, m.source, m.r)
		if m.r.Interests != nil {
			stampLatest(m.header, m.route())
		}
	}
	return m.header
}

// route evaluates the interests once.
func (m *message) route() []Routed {
	if !m.routed {
		m.routes, m.routed = m.r.Interests.Match(m.n, nil), true
	}
	return m.routes
}

// copies are the product message as routed to every interest it matches:
// same data and headers, plus Cdse-Interest (and Cdse-Area-Unevaluated
// when the interest's area was not evaluated), and the interest's own
// Nats-Msg-Id and subject. Headers and subject are the product message's,
// changed only where they differ, not built again for every copy.
func (m *message) copies() []publish.Message {
	// The product message's headers are built (by now Publish has sent
	// it), and with them the routes.
	product := m.headers()
	routes := m.route()
	if len(routes) == 0 {
		return nil
	}
	// The subject after the prefix (Template.Subject writes the prefix,
	// then ".<token>" each): the same for every copy.
	tokens := m.subject[len(m.r.Prefix):]
	// Not nil, even when every route is Later: the product was routed
	// (internal/ingest/interest counts a nil one as unmatched).
	copies := make([]publish.Message, 0, len(routes))
	for _, to := range routes {
		if !to.Later {
			copies = append(copies, m.r.copyOf(tokens, m.id, m.n.Raw, product, to))
		}
	}
	return copies
}

// copyOf is the copy to the interest to of the product message whose
// subject is Prefix+tokens, dedupe key id, data and headers product.
func (r *Route) copyOf(tokens, id string, data []byte, product map[string][]string, to Routed) publish.Message {
	cid := InterestMsgID(to.Name, id)
	return publish.Message{Subject: r.InterestPrefix + "." + to.Name + tokens, MsgID: cid, Data: data, Header: copyHeaders(product, cid, to)}
}

// CopyOfStored is the copy to the interest to of a product message as the
// product stream stored it (its subject, headers and data), for an
// interest that takes the latest versions only, whose copies the versions
// consumer makes after its decision: the copy the ingest path would have
// made, with the same subject, headers and Nats-Msg-Id. False when the
// message is not one of this route's (its subject is not under Prefix,
// or it has no Nats-Msg-Id) or the route has no interest prefix.
func (r *Route) CopyOfStored(subject string, h map[string][]string, data []byte, to Routed) (publish.Message, bool) {
	tokens, ok := strings.CutPrefix(subject, r.Prefix)
	ids := h[event.HeaderMsgID]
	if !ok || !strings.HasPrefix(tokens, ".") || len(ids) == 0 || ids[0] == "" || r.InterestPrefix == "" {
		return publish.Message{}, false
	}
	return r.copyOf(tokens, ids[0], data, h, to), true
}

// NoticeToken is the subject token under an interest's own subjects
// (<InterestPrefix>.<name>.superseded.<collection>.<productType>) of the
// copies of the notices of supersession (event.Superseded) of the
// acquisitions of an interest that takes the latest versions only: a
// consumer of <InterestPrefix>.<name>.> gets them with the products. No
// subject template token is ever "superseded" at that place (the event,
// the collection, ...).
const NoticeToken = "superseded"

// NoticeCopy is the copy to the interest name of a notice of
// supersession with subject and headers h as stored (its Nats-Msg-Id
// event.SupersededMsgID), collection and productType those of its
// superseded product.
func (r *Route) NoticeCopy(h map[string][]string, data []byte, name, collection, productType string) publish.Message {
	var id string
	if ids := h[event.HeaderMsgID]; len(ids) > 0 {
		id = ids[0]
	}
	cid := InterestMsgID(name, id)
	return publish.Message{Subject: event.SupersededSubject(r.InterestPrefix+"."+name+"."+NoticeToken, collection, productType),
		MsgID: cid, Data: data, Header: copyHeaders(h, cid, Routed{Name: name})}
}

// InterestMsgID is the dedupe key of an interest's copy: its own, so that
// each interest stores an event once, whatever the product stream holds.
func InterestMsgID(name, id string) string { return "interest/" + name + "/" + id }

// CopyInterest is the interest of a copy's Nats-Msg-Id (InterestMsgID).
func CopyInterest(msgID string) (string, bool) {
	rest, ok := strings.CutPrefix(msgID, "interest/")
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, "/")
	return name, ok
}

// writeStacItemURL writes the product's STAC item to b: <base>/collections/
// <collection>/items/<name less .SAFE>; nothing when its product type has no
// known collection.
func (r *Route) writeStacItemURL(b *strings.Builder, n *notification.Notification) {
	coll, ok := r.StacCollections[n.ProductType]
	if !ok || r.StacURL == "" || n.ProductName == "" {
		return
	}
	b.WriteString(strings.TrimRight(r.StacURL, "/"))
	b.WriteString("/collections/")
	b.WriteString(coll)
	b.WriteString("/items/")
	b.WriteString(url.PathEscape(strings.TrimSuffix(n.ProductName, ".SAFE")))
}

// Outcome counts what JetStream said.
type Outcome struct {
	Accepted, Duplicates int
}

// Count tallies results.
func Count(results []publish.Result) Outcome {
	var o Outcome
	for _, r := range results {
		if r.Duplicate {
			o.Duplicates++
		} else {
			o.Accepted++
		}
	}
	return o
}
