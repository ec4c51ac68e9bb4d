// Package ingest turns validated notifications into the messages every
// source publishes — the webhook (push), the PULL queue (pull), the
// reconciler (reconcile) and the backfill command (backfill) — so that all
// of them route and deduplicate exactly alike: same subject, same headers,
// same Nats-Msg-Id.
package ingest

import (
	"net/url"
	"strings"
	"time"

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
}

// Headers set from the route.
const (
	HeaderDownloadURL = "Cdse-Download-Url"
	// CloudEventsType prefixes ce-type: eu.copernicus.dataspace.product.created.
	CloudEventsType = "eu.copernicus.dataspace.product."
)

// Messages builds one message per notification, its data the notification's
// own bytes.
func Messages(ns []notification.Notification, r Route, source string) []publish.Message {
	msgs := make([]publish.Message, len(ns))
	base := strings.TrimRight(r.CatalogueURL, "/")
	for i := range ns {
		n := &ns[i]
		msgs[i] = publish.Message{Subject: r.Template.Subject(r.Prefix, n), MsgID: n.DedupeKey(), Data: n.Raw,
			Headers: func() map[string][]string { return headers(n, source, base, r.CloudEvents) }}
	}
	return msgs
}

// headers are the message's headers (Nats-Msg-Id, the dedupe key, among
// them), all values in one slice: one allocation, not one each.
func headers(n *notification.Notification, source, base string, cloudEvents bool) map[string][]string {
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
	if cloudEvents {
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
