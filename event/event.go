// Package event is for the services that consume the receiver's stream: it
// decodes a stored message into a typed product event, and builds the filter
// subjects a consumer selects events with.
//
// A message on the stream holds the catalogue's notification exactly as the
// catalogue sent it, and headers the receiver derived from it (Cdse-*, and
// the CloudEvents attributes as ce-*). Decode reads both, so a consumer needs
// neither the catalogue's JSON layout nor the header names. The receiver
// itself takes its event kinds, header names, subject tokens and template
// from this package, so the two cannot drift apart.
//
// The fetcher (cmd/fetcher) downloads each product of that stream into a
// target (a directory, an S3 bucket) and publishes what became of it on a
// stream of its own (DefaultFetchedStream): a fetched event on
// <DefaultFetchedPrefix>.<event>.<collection>.<productType> for every
// product stored (or removed from the target, with FETCH_ON_DELETE=delete),
// read with DecodeFetched; a failed event on
// <DefaultFailedPrefix>.<collection>.<productType> for every product event
// it gave up, read with DecodeFailed. Both carry the product message's
// notification as their body and its Cdse-* headers; a fetched event adds
// the object's URL, size, the checksums verified and the time it took. A
// pipeline that needs the files consumes the fetched events rather than the
// notifications: when one arrives, the object is in place, verified
// unless Unverified says why not. A fetcher that skips superseded
// versions (FETCH_VERSIONS=latest) publishes a fetched event without an
// object for each product it skipped (DecodeFetched answers ErrSkipped;
// DecodeSkipped reads it), and one that removes them
// (FETCH_ON_SUPERSEDED=delete) a deleted one naming the notice
// (Fetched.Superseded).
//
// The product stream also holds the receiver's notices of supersession,
// outside the product subjects (DefaultSupersededPrefix): a newer version
// of an acquisition arrived, or a product arrived older than a version
// already known. Decode answers ErrNotice for them; DecodeSuperseded reads
// them.
//
// It depends on the standard library and nats.go only.
package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Kind is the catalogue's SubscriptionEvent.
type Kind string

// The events the catalogue announces.
const (
	Created  Kind = "created"
	Modified Kind = "modified"
	Deleted  Kind = "deleted"
)

// Kinds lists every event, in a stable order.
var Kinds = []Kind{Created, Modified, Deleted}

// ParseKinds reads a comma-separated list of events ("created,deleted"),
// each once, in the order given.
func ParseKinds(s string) ([]Kind, error) {
	var out []Kind
	for _, f := range strings.Split(s, ",") {
		k := Kind(strings.TrimSpace(f))
		if !slices.Contains(Kinds, k) {
			return nil, fmt.Errorf("unknown event %q: want created, modified, deleted", k)
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// Header names on every stored message (a header is left out when its
// value is unknown).
const (
	// HeaderMsgID is JetStream's deduplication id; the receiver sets it to
	// the event's identity: "<event>:<product id>", and for a modification
	// ":<ModificationDate>" after it.
	HeaderMsgID          = "Nats-Msg-Id"
	HeaderEvent          = "Cdse-Event"
	HeaderProductID      = "Cdse-Product-Id"
	HeaderProductName    = "Cdse-Product-Name"
	HeaderSubscriptionID = "Cdse-Subscription-Id"
	HeaderCollection     = "Cdse-Collection"
	// HeaderSource says how the event reached the stream: push, pull,
	// reconcile, backfill.
	HeaderSource = "Cdse-Source"
	// HeaderInterest names the interest a copy was routed to (absent on
	// the product subjects).
	HeaderInterest = "Cdse-Interest"
	// HeaderAreaUnevaluated is set on an interest's copy routed without
	// its area evaluated: the product matches the interest's other terms,
	// and whether it lies in the area is unknown (its footprint could not
	// be tested: a coordinate out of range, more vertices than the
	// receiver's caps). The value is the reason ("non_finite",
	// "longitude_out_of_range", "too_many_vertices", ...; docs/interests.md
	// lists them). Absent when the area was evaluated or the interest has
	// none, and on the product subjects.
	HeaderAreaUnevaluated = "Cdse-Area-Unevaluated"
	// HeaderLatestInterests, on a product message only, names the
	// interests that take the latest versions only (versions: latest)
	// the receiver routed the event to when it stored it: the versions
	// consumer copies it to those, after its decision, and to no other.
	// Comma-separated names, each followed by "=" and the reason when its
	// area was not evaluated (as HeaderAreaUnevaluated). Absent when no
	// such interest took the event, and on every copy.
	HeaderLatestInterests = "Cdse-Latest-Interests"

	// HeaderAcquisition is a stable key of what the product shows (its
	// mission's acquisition: datatake and tile, orbit and frame, ...),
	// the same for every processing of it, and HeaderVersion a string
	// that sorts as that acquisition's versions do (byte order; for S1
	// only between versions of the same first letter, P or U): set
	// only where a mission's naming rule decides (docs/consumers.md,
	// "Versions of one acquisition"), never a guess.
	HeaderAcquisition = "Cdse-Acquisition"
	HeaderVersion     = "Cdse-Version"

	HeaderProductType      = "Cdse-Product-Type"
	HeaderPublicationDate  = "Cdse-Publication-Date"
	HeaderModificationDate = "Cdse-Modification-Date"
	HeaderContentLength    = "Cdse-Content-Length"
	HeaderS3Path           = "Cdse-S3-Path"
	HeaderOnline           = "Cdse-Online"
	// HeaderDownloadURL is the catalogue's Products(<id>)/$value.
	HeaderDownloadURL = "Cdse-Download-Url"
	// HeaderStacURL is the product's item in the STAC catalogue, set for
	// the product types whose STAC collection the receiver knows.
	HeaderStacURL = "Cdse-Stac-Url"
	// HeaderStacItem, on the fetcher's fetched events, is the STAC 1.1.0
	// item the fetcher wrote beside the stored product (its URL in the
	// target, s3://… or file://…), ready for a STAC API or pgstac; absent
	// with FETCH_STAC=false.
	HeaderStacItem = "Cdse-Stac-Item"
	// HeaderReplayed is set on a body replayed from the quarantine: the
	// quarantine's sequence number.
	HeaderReplayed = "Cdse-Replayed"
)

// CloudEventsTypePrefix starts the CloudEvents type of every event:
// eu.copernicus.dataspace.product.created.
const CloudEventsTypePrefix = "eu.copernicus.dataspace.product."

// ErrNotNotification marks data that is not a catalogue notification.
var ErrNotNotification = errors.New("event: not a catalogue notification")

// Msg is what Decode reads: jetstream.Msg is one. For a core *nats.Msg,
// call DecodeData(m.Data, m.Header).
type Msg interface {
	Data() []byte
	Headers() nats.Header
}

// Notification is one product event as stored on the stream.
type Notification struct {
	Event Kind
	// ID identifies the event (the Nats-Msg-Id, also the CloudEvents id):
	// a consumer can use it to make its own processing idempotent.
	ID string
	// Source is how it reached the stream: push, pull, reconcile, backfill.
	Source string
	// Interest is the named interest this copy was routed to; "" on the
	// product subjects.
	Interest string
	// AreaUnevaluated is why the interest's area was not evaluated for
	// this copy (HeaderAreaUnevaluated): it was routed failing open, and
	// the product may lie outside the area. "" when it was evaluated.
	AreaUnevaluated string

	ProductID, ProductName, SubscriptionID string
	// Collection and ProductType are the subject's tokens ("SENTINEL-2",
	// "S2MSI2A"); "" when the notification does not tell.
	Collection, ProductType string

	NotificationDate, OriginDate, PublicationDate, ModificationDate time.Time
	// ContentStart and ContentEnd are the sensing period (ContentDate).
	ContentStart, ContentEnd time.Time

	ContentLength int64
	// Online is nil when the notification does not say.
	Online *bool
	// S3Path is the product's /eodata/... path.
	S3Path string
	// DownloadURL is the catalogue's download address; StacURL the STAC
	// item's. "" when unknown.
	DownloadURL, StacURL string
	// Footprint is the product's GeoFootprint: a GeoJSON geometry, as the
	// catalogue wrote it; nil when absent.
	Footprint json.RawMessage
	// Attributes are the product's attributes by name.
	Attributes map[string]Attribute
	// Acquisition and Version are the Cdse-Acquisition and Cdse-Version
	// headers: "" where no naming rule decided.
	Acquisition, Version string

	// Data is the notification exactly as the catalogue sent it.
	Data []byte
}

// Attribute is one product attribute; Value is a string, int64, float64,
// bool or time.Time as its ValueType says (the raw JSON for a type this
// package does not know).
type Attribute struct {
	Name      string
	ValueType string
	Value     any
}

// String is the attribute's value as a string, whatever its type.
func (a Attribute) String() string {
	switch v := a.Value.(type) {
	case string:
		return v
	case time.Time:
		return v.Format(time.RFC3339Nano)
	case json.RawMessage:
		return string(v)
	default:
		return fmt.Sprint(v)
	}
}

// Attr returns the named attribute.
func (n *Notification) Attr(name string) (Attribute, bool) {
	a, ok := n.Attributes[name]
	return a, ok
}

// Float returns a numeric attribute (cloudCover, for one) as a float64.
func (n *Notification) Float(name string) (float64, bool) {
	switch v := n.Attributes[name].Value.(type) {
	case float64:
		return v, true
	case int64:
		return float64(v), true
	}
	return 0, false
}

// Decode reads a message of the receiver's stream: a product event, or
// ErrNotice for a notice of the receiver's (ack it and go on, or read it
// with DecodeSuperseded).
func Decode(m Msg) (*Notification, error) {
	return DecodeData(m.Data(), m.Headers())
}

// wire is the notification's layout, read with encoding/json: a consumer
// decodes each event once, so the receiver's hand-written fast path is not
// worth its weight here.
type wire struct {
	// Notice is set on a notice of the receiver's (Superseded), never on
	// a notification.
	Notice            string `json:"notice"`
	SubscriptionEvent Kind
	ProductID         string `json:"ProductId"`
	ProductName       string
	SubscriptionID    string `json:"SubscriptionId"`
	NotificationDate  string
	Value             *struct {
		ID                                            string `json:"Id"`
		Name                                          string
		ContentLength                                 *int64
		OriginDate, PublicationDate, ModificationDate string
		Online                                        *bool
		S3Path                                        string
		ContentDate                                   *struct{ Start, End string }
		GeoFootprint                                  json.RawMessage
		Attributes                                    []struct {
			Name      string
			ValueType string
			Value     json.RawMessage
		}
		Locations []struct {
			FormatType, DownloadLink string
		}
	} `json:"value"`
}

// DecodeData reads a notification and its message headers (h may be nil).
// What the body says wins; the headers fill in what a short notification
// leaves out (the receiver may have read the product name from elsewhere)
// and what only the receiver knows (ID, Source, DownloadURL, StacURL).
// A notice of the receiver's (a Superseded) is ErrNotice.
func DecodeData(data []byte, h nats.Header) (*Notification, error) {
	if IsNotice(h) {
		return nil, ErrNotice
	}
	var w wire
	if !bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("{")) {
		return nil, ErrNotNotification
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotNotification, err)
	}
	if w.Notice != "" {
		return nil, ErrNotice
	}
	n := &Notification{
		Event: w.SubscriptionEvent, ProductID: w.ProductID, ProductName: w.ProductName,
		SubscriptionID: w.SubscriptionID, NotificationDate: parseTime(w.NotificationDate),
		Data: data, Attributes: map[string]Attribute{},
	}
	if v := w.Value; v != nil {
		or(&n.ProductID, v.ID)
		or(&n.ProductName, v.Name)
		if v.ContentLength != nil {
			n.ContentLength = *v.ContentLength
		}
		n.OriginDate, n.PublicationDate, n.ModificationDate = parseTime(v.OriginDate), parseTime(v.PublicationDate), parseTime(v.ModificationDate)
		n.Online, n.S3Path = v.Online, v.S3Path
		if v.ContentDate != nil {
			n.ContentStart, n.ContentEnd = parseTime(v.ContentDate.Start), parseTime(v.ContentDate.End)
		}
		if len(v.GeoFootprint) > 0 && string(v.GeoFootprint) != "null" {
			n.Footprint = v.GeoFootprint
		}
		for _, a := range v.Attributes {
			n.Attributes[a.Name] = Attribute{Name: a.Name, ValueType: a.ValueType, Value: attrValue(a.ValueType, a.Value)}
		}
		for _, l := range v.Locations {
			if l.FormatType == "Extracted" && n.DownloadURL == "" {
				n.DownloadURL = l.DownloadLink
			}
		}
	}
	if a, ok := n.Attributes["productType"]; ok {
		n.ProductType = SanitizeToken(a.String())
	}
	if a, ok := n.Attributes["platformShortName"]; ok {
		n.Collection = SanitizeToken(a.String())
	}
	get := func(k string) string {
		if h == nil {
			return ""
		}
		return h.Get(k)
	}
	or(&n.ProductID, get(HeaderProductID))
	or(&n.ProductName, get(HeaderProductName))
	or(&n.SubscriptionID, get(HeaderSubscriptionID))
	or(&n.ProductType, get(HeaderProductType))
	or(&n.S3Path, get(HeaderS3Path))
	if n.Event == "" {
		n.Event = Kind(get(HeaderEvent))
	}
	if n.ContentLength == 0 {
		n.ContentLength, _ = strconv.ParseInt(get(HeaderContentLength), 10, 64)
	}
	if n.Online == nil {
		if b, err := strconv.ParseBool(get(HeaderOnline)); err == nil {
			n.Online = &b
		}
	}
	if n.PublicationDate.IsZero() {
		n.PublicationDate = parseTime(get(HeaderPublicationDate))
	}
	if n.ModificationDate.IsZero() {
		n.ModificationDate = parseTime(get(HeaderModificationDate))
	}
	if c := get(HeaderCollection); c != "" {
		n.Collection = c // also derived from the name when the attribute is absent
	}
	n.ID, n.Source, n.Interest = get(HeaderMsgID), get(HeaderSource), get(HeaderInterest)
	n.AreaUnevaluated = get(HeaderAreaUnevaluated)
	n.Acquisition, n.Version = get(HeaderAcquisition), get(HeaderVersion)
	if u := get(HeaderDownloadURL); u != "" {
		n.DownloadURL = u // the configured catalogue's, not a mirror's
	}
	n.StacURL = get(HeaderStacURL)
	switch n.Event {
	case Created, Modified, Deleted:
	default:
		return nil, fmt.Errorf("%w: unknown SubscriptionEvent %q", ErrNotNotification, n.Event)
	}
	if n.ProductID == "" {
		return nil, fmt.Errorf("%w: no ProductId", ErrNotNotification)
	}
	return n, nil
}

func or(dst *string, v string) {
	if *dst == "" {
		*dst = v
	}
}

// ParseTime reads the date-times the catalogue writes: RFC 3339 with 0 to 9
// fractional digits and "Z" or a numeric offset, or the same without a zone
// (taken as UTC).
func ParseTime(s string) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, true
	}
	if t, err := time.Parse("2006-01-02T15:04:05.999999999", s); err == nil {
		return t, true
	}
	return time.Time{}, false
}

// parseTime is ParseTime, zero when absent or unreadable.
func parseTime(s string) time.Time {
	t, _ := ParseTime(s)
	return t
}

// attrValue types an attribute's value by its ValueType (the catalogue's
// names: String, Integer, Double, Boolean, DateTimeOffset).
func attrValue(typ string, raw json.RawMessage) any {
	switch strings.ToLower(typ) {
	case "string":
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case "integer", "int64", "int32":
		var i int64
		if json.Unmarshal(raw, &i) == nil {
			return i
		}
	case "double", "single", "decimal":
		var f float64
		if json.Unmarshal(raw, &f) == nil {
			return f
		}
	case "boolean":
		var b bool
		if json.Unmarshal(raw, &b) == nil {
			return b
		}
	case "datetimeoffset", "datetime":
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if t := parseTime(s); !t.IsZero() {
				return t
			}
			return s
		}
	}
	return raw
}
