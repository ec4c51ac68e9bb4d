// Package ingest turns validated notifications into the messages every
// source publishes — the webhook (push), the PULL queue (pull), the
// reconciler (reconcile) and the backfill command (backfill) — so that all
// of them route and deduplicate exactly alike: same subject, same headers,
// same Nats-Msg-Id.
package ingest

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/notification"
	"github.com/cdse-jetstream/receiver/internal/publish"
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
	// rest (the zero Template is notification.DefaultTemplate).
	Prefix   string
	Template notification.Template
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
}

// DefaultStacCollections are the product types whose STAC collection and
// item id the CDSE documentation gives: the STAC item id is the product
// name without ".SAFE".
const DefaultStacCollections = "S2MSI1C=sentinel-2-l1c,S2MSI2A=sentinel-2-l2a"

// ParseStacCollections reads "S2MSI2A=sentinel-2-l2a,..." and says
// everything wrong with it at once.
func ParseStacCollections(s string) (map[string]string, error) {
	m := map[string]string{}
	var errs []error
	for _, pair := range strings.Split(s, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		typ, coll, ok := strings.Cut(pair, "=")
		typ, coll = strings.TrimSpace(typ), strings.TrimSpace(coll)
		if !ok || typ == "" || coll == "" || notification.SanitizeToken(typ) != typ || url.PathEscape(coll) != coll {
			errs = append(errs, fmt.Errorf("%q is not productType=collection (a product type as in subjects, a collection id that needs no escaping)", pair))
			continue
		}
		m[typ] = coll
	}
	return m, errors.Join(errs...)
}

// Headers set from the route.
const (
	HeaderDownloadURL = event.HeaderDownloadURL
	HeaderStacURL     = event.HeaderStacURL
	// CloudEventsType prefixes ce-type: eu.copernicus.dataspace.product.created.
	CloudEventsType = event.CloudEventsTypePrefix
)

// Messages builds one message per notification, its data the notification's
// own bytes.
// r is shared by the messages' lazy headers, not copied per request.
func Messages(ns []notification.Notification, r *Route, source string) []publish.Message {
	msgs := make([]publish.Message, len(ns))
	for i := range ns {
		n := &ns[i]
		msgs[i] = publish.Message{Subject: r.Template.Subject(r.Prefix, n), MsgID: n.DedupeKey(), Data: n.Raw,
			Headers: func() map[string][]string { return headers(n, source, r) }}
	}
	return msgs
}

// StacItemURL is the product's STAC item: <base>/collections/<collection>/
// items/<name less .SAFE>, "" when its product type has no known collection.
func (r *Route) StacItemURL(n *notification.Notification) string {
	coll, ok := r.StacCollections[n.ProductType]
	if !ok || r.StacURL == "" || n.ProductName == "" {
		return ""
	}
	return strings.TrimRight(r.StacURL, "/") + "/collections/" + coll + "/items/" + url.PathEscape(strings.TrimSuffix(n.ProductName, ".SAFE"))
}

// headers are the message's headers (Nats-Msg-Id, the dedupe key, among
// them), all values in one slice: one allocation, not one each.
func headers(n *notification.Notification, source string, r *Route) map[string][]string {
	base := strings.TrimRight(r.CatalogueURL, "/") // no copy unless it ends in '/'
	h := make(map[string][]string, 24)
	vals := n.AppendHeaders(h, make([]string, 0, 24), source)
	set := func(k, v string) {
		if len(vals) == cap(vals) {
			vals = make([]string, 0, 8)
		}
		vals = append(vals, v)
		h[k] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	if base != "" {
		// Products(<id>)/$value, as the catalogue's Locations give it; the
		// id is a canonical UUID, safe in a URL and a header.
		set(HeaderDownloadURL, base+"/Products("+n.ProductID+")/$value")
	}
	if u := r.StacItemURL(n); u != "" {
		set(HeaderStacURL, u)
	}
	if r.CloudEvents {
		cloudEvent(set, n, h[notification.HeaderMsgID][0], base)
	}
	return h
}

// cloudEvent adds the CloudEvents 1.0 attributes as the NATS binding's
// binary content mode carries them: lower-case ce-* headers, and
// datacontenttype as content-type (the name the binding and sdk-go read).
func cloudEvent(set func(k, v string), n *notification.Notification, id, base string) {
	set("ce-specversion", "1.0")
	set("ce-id", id)
	set("ce-type", CloudEventsType+string(n.Event))
	source := base
	if n.SubscriptionID != "" && base != "" {
		source = base + "/Subscriptions(" + n.SubscriptionID + ")"
	}
	if source == "" {
		source = "urn:cdse:catalogue"
	}
	if _, err := url.Parse(source); err != nil {
		source = "urn:cdse:catalogue"
	}
	set("ce-source", source)
	if !n.NotificationDate.IsZero() {
		set("ce-time", n.NotificationDate.UTC().Format(time.RFC3339Nano))
	}
	if n.ProductName != "" {
		set("ce-subject", n.ProductName)
	}
	set("content-type", "application/json")
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
