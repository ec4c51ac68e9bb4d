package ingest

import (
	"maps"
	"strings"
	"time"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/cdse/versions"
)

// This file is the one place that knows the message headers: their names,
// the order they are set in, and how their values share memory. Every
// message the ingest path makes, the product message and its interest
// copies, gets its headers here.

// consumerHeaders says whether messages carry the headers added for
// consumers (product type, dates, size, S3 path, download and STAC URLs,
// CloudEvents) on top of the routing ones. It is false only in the baseline
// build of `make bench-headers` (-tags benchbaseheaders, routing_only.go),
// which measures what those headers cost.
//
// A build tag rather than a Route field set from a setting: the comparison
// is between two binaries anyway, and no setting of a released receiver
// can then take its consumers' headers away; the tag touches no other
// package (config, app) and leaves one branch, in buildHeaders. A variable
// that the tag's one file sets at init, rather than a constant, which would
// need a second file for the other value; nothing changes it afterwards.
var consumerHeaders = true

// headerCap sizes a product message's header map and its values: the 24
// headers with every option on, and Nats-Expected-Stream, which nats.go
// sets when Publish sends the message. (A copy's map is a clone of it.)
// Cdse-Latest-Interests, set only when an interest that takes the latest
// versions only took the event, is not counted: a map made for 26 holds
// 28 before it grows (32 slots, 7/8 full).
const headerCap = 26

// headerWriter sets headers whose values share one backing slice instead
// of a slice each: on the request path every allocation counts. Each
// header's slice is capped at its one value, so that appending to it (as
// nats.Header.Add does) copies it rather than writing over the next
// header's value.
type headerWriter struct {
	h    map[string][]string
	vals []string
}

// set adds header k with value v; an empty v leaves the header out.
func (w *headerWriter) set(k, v string) {
	if v == "" {
		return
	}
	if len(w.vals) == cap(w.vals) {
		w.vals = make([]string, 0, 8)
	}
	w.vals = append(w.vals, v)
	w.h[k] = w.vals[len(w.vals)-1 : len(w.vals) : len(w.vals)]
}

// headers are a product message's headers (Nats-Msg-Id, the dedupe key
// id, among them).
func headers(n *notification.Notification, id, source string, r *Route) map[string][]string {
	return buildHeaders(n, id, source, r, consumerHeaders)
}

// buildHeaders builds the headers; consumer adds the consumer headers to
// the routing ones. They are built for every message stored, so
// allocations are kept few: all values share one slice (headerWriter), and
// the values the receiver composes (URLs, dates) are written into one
// string and sliced from it. Measured with BenchmarkHeaders: 15
// allocations and 3.2 µs a message before, when each value was its own
// string and ce-source was parsed as a URL for every message
// (CDSE_CATALOGUE_URL is now checked once, by the receiver's
// Config.Validate); 6 since the modification date is composed too.
func buildHeaders(n *notification.Notification, id, source string, r *Route, consumer bool) map[string][]string {
	w := headerWriter{h: make(map[string][]string, headerCap), vals: make([]string, 0, headerCap)}
	// The routing headers, on every message since the first release.
	w.set(event.HeaderMsgID, id)
	w.set(event.HeaderEvent, string(n.Event))
	w.set(event.HeaderProductID, n.ProductID)
	w.set(event.HeaderCollection, n.Collection)
	w.set(event.HeaderProductName, n.ProductName)
	w.set(event.HeaderSubscriptionID, n.SubscriptionID)
	w.set(event.HeaderSource, source)
	if !consumer {
		return w.h
	}

	// The composed values, end to end in b; ends[k] is where value k ends.
	const (
		modified = iota
		download
		stac
		ceSource
		ceTime
		composed
	)
	base := strings.TrimRight(r.CatalogueURL, "/") // no copy unless it ends in '/'
	var b strings.Builder
	var ends [composed]int
	b.Grow(3*len(base) + len(r.StacURL) + 2*len(n.ProductName) + 200)
	var t [64]byte
	if !n.ModificationDate.IsZero() {
		b.Write(n.ModificationDate.UTC().AppendFormat(t[:0], time.RFC3339Nano))
	}
	ends[modified] = b.Len()
	if base != "" {
		// Products(<id>)/$value, as the catalogue's Locations give it; the
		// id is a canonical UUID, safe in a URL and a header.
		b.WriteString(base)
		b.WriteString("/Products(")
		b.WriteString(n.ProductID)
		b.WriteString(")/$value")
	}
	ends[download] = b.Len()
	r.writeStacItemURL(&b, n)
	ends[stac] = b.Len()
	if r.CloudEvents {
		// The subscription id is a canonical UUID: base plus this path is
		// a URI whenever base is.
		if base == "" {
			b.WriteString("urn:cdse:catalogue")
		} else {
			b.WriteString(base)
			if n.SubscriptionID != "" {
				b.WriteString("/Subscriptions(")
				b.WriteString(n.SubscriptionID)
				b.WriteString(")")
			}
		}
		ends[ceSource] = b.Len()
		if !n.NotificationDate.IsZero() {
			b.Write(n.NotificationDate.UTC().AppendFormat(t[:0], time.RFC3339Nano))
		}
		ends[ceTime] = b.Len()
	}
	all := b.String()
	value := func(k int) string {
		start := 0
		if k > 0 {
			start = ends[k-1]
		}
		return all[start:ends[k]]
	}

	w.set(event.HeaderProductType, n.ProductType)
	w.set(event.HeaderPublicationDate, n.PublicationDate)
	// What the product shows, from its name alone (internal/cdse/versions):
	// only where a mission's rule decides; otherwise no header, counted.
	if v, ok := versions.Identify(n.ProductName, versions.Attrs{ProcessingDate: n.ProcessingDate, PublicationDate: n.Published}); ok {
		w.set(event.HeaderAcquisition, v.Acquisition)
		w.set(event.HeaderVersion, v.Version)
	} else if r.Unversioned != nil {
		r.Unversioned(string(v.Reason))
	}
	w.set(event.HeaderModificationDate, value(modified))
	w.set(event.HeaderContentLength, n.ContentLength)
	w.set(event.HeaderS3Path, n.S3Path)
	w.set(event.HeaderOnline, n.Online)
	w.set(event.HeaderDownloadURL, value(download))
	w.set(event.HeaderStacURL, value(stac))
	if r.CloudEvents {
		// The attributes of the CloudEvents NATS binding's binary content
		// mode: lower-case ce-* headers, and datacontenttype as
		// content-type (the name the binding and sdk-go read).
		w.set("ce-specversion", "1.0")
		w.set("ce-id", id)
		typ, ok := cloudEventsTypes[n.Event]
		if !ok {
			typ = event.CloudEventsTypePrefix + string(n.Event)
		}
		w.set("ce-type", typ)
		w.set("ce-source", value(ceSource))
		w.set("ce-time", value(ceTime))
		w.set("ce-subject", n.ProductName)
		w.set("content-type", "application/json")
	}
	return w.h
}

// stampLatest names in h, a product message's headers, the interests of
// routes that take the latest versions only (event.HeaderLatestInterests:
// name, or name=reason when its area was not evaluated, comma-separated).
// Nothing is set, built or allocated when there is none: the products no
// such interest takes cost what they cost before.
func stampLatest(h map[string][]string, routes []Routed) {
	var b strings.Builder
	for _, to := range routes {
		if !to.Later {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(to.Name)
		if to.AreaUnevaluated != "" {
			b.WriteByte('=')
			b.WriteString(to.AreaUnevaluated)
		}
	}
	if b.Len() > 0 {
		h[event.HeaderLatestInterests] = []string{b.String()}
	}
}

// LatestInterests are the interests a product message's headers h name
// as taking it when it was stored (stampLatest), each with why its area
// was not evaluated; none when h names none.
func LatestInterests(h map[string][]string) []Routed {
	v := h[event.HeaderLatestInterests]
	if len(v) == 0 || v[0] == "" {
		return nil
	}
	var out []Routed
	for item := range strings.SplitSeq(v[0], ",") {
		name, why, _ := strings.Cut(strings.TrimSpace(item), "=")
		if name != "" {
			out = append(out, Routed{Name: name, AreaUnevaluated: why, Later: true})
		}
	}
	return out
}

// copyHeaders are an interest copy's headers: product, the product
// message's, cloned, and only what differs set: the copy's own Nats-Msg-Id
// cid, Cdse-Interest and Cdse-Area-Unevaluated. No value is composed again.
//
// product is the map Publish sent, not a pristine build: nats.go has set
// Nats-Expected-Stream in it, which Publish sets on the copy as well (the
// same stream), and a replay from the quarantine has added Cdse-Replayed,
// which marks the replayed message only: its copies never carried it, and
// it is taken out. The clone shares product's values, which nobody writes
// into once built (nats.Header.Set replaces a map entry, never a shared
// value).
func copyHeaders(product map[string][]string, cid string, to Routed) map[string][]string {
	w := headerWriter{h: maps.Clone(product), vals: make([]string, 0, 3)}
	delete(w.h, event.HeaderReplayed)
	// The product message's routing to the versions consumer, not the
	// copy's.
	delete(w.h, event.HeaderLatestInterests)
	w.set(event.HeaderMsgID, cid)
	w.set(event.HeaderInterest, to.Name)
	w.set(event.HeaderAreaUnevaluated, to.AreaUnevaluated)
	return w.h
}

// cloudEventsTypes are the ce-type values, built once rather than per message.
var cloudEventsTypes = map[event.Kind]string{
	event.Created:  event.CloudEventsTypePrefix + string(event.Created),
	event.Modified: event.CloudEventsTypePrefix + string(event.Modified),
	event.Deleted:  event.CloudEventsTypePrefix + string(event.Deleted),
}
