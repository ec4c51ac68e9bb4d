// Package notification decodes and validates the catalogue's subscription
// notifications and derives from each one what the receiver routes on: its
// deduplication key and its NATS subject. The values it validates become
// the message headers in internal/ingest, which alone builds them.
//
// It is shared by every source of notifications (the PUSH webhook, the PULL
// queue, the reconciler), so that all of them accept, refuse and deduplicate
// exactly alike. It depends on nothing but the standard library, uuid, the
// public event package and internal/platform/jsonscan.
package notification

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/platform/jsonscan"
)

// UnknownCollection is the collection token used when neither the product's
// platformShortName attribute nor its name tells the mission.
const UnknownCollection = "UNKNOWN"

// Sentinel errors callers act on.
var (
	// ErrInvalid marks a body or a notification that breaks the interface
	// (bad JSON, wrong shape, missing or malformed field). Errors that wrap it
	// are *ValidationError values.
	ErrInvalid = errors.New("invalid notification")
	// ErrTooMany marks an array with more notifications than allowed.
	ErrTooMany = errors.New("too many notifications in one request")
)

// ValidationError says which notification and which field is wrong, and why.
type ValidationError struct {
	// Index is the position in an array body, or -1 for a single object.
	Index int
	// Field is the JSON member at fault ("ProductId", "value.Name"), or ""
	// when the body as a whole is at fault.
	Field  string
	Reason string
	// Syntax is true when the body is not JSON at all (malformed, not
	// UTF-8, empty), as opposed to JSON that breaks the interface.
	Syntax bool
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	if e.Index >= 0 {
		fmt.Fprintf(&b, "[%d]", e.Index)
	}
	if e.Field != "" {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e.Field)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap lets errors.Is(err, ErrInvalid) match.
func (e *ValidationError) Unwrap() error { return ErrInvalid }

// Notification is one validated notification.
type Notification struct {
	Event     event.Kind
	ProductID string // canonical lowercase UUID
	// ProductName is the top-level ProductName, else value.Name.
	ProductName    string
	SubscriptionID string // canonical UUID, or ""
	AckID          string
	// NotificationDate is zero when absent.
	NotificationDate time.Time
	// ModificationDate is the product's (value.ModificationDate), zero when
	// absent; it separates successive modifications of one product.
	ModificationDate time.Time
	// Collection is the sanitised mission token used in the subject.
	Collection string
	// Routing tokens, from the product's attributes (and, for Platform,
	// its name: "S2B" of "S2B_MSIL2A_..."), sanitised; "" when absent.
	ProductType, Platform, ProcessingLevel, TileID, RelativeOrbit string
	// Entity fields a consumer acts on, header-safe; "" when absent.
	PublicationDate, ContentLength, S3Path, Online string
	// ProcessingDate is the processingDate attribute, zero when absent or
	// unreadable.
	ProcessingDate time.Time
	// Published and Deleted are the product's PublicationDate and (for a
	// deleted product) DeletionDate, zero when absent or unreadable: with
	// ModificationDate, when the event happened (EventTime).
	Published, Deleted time.Time
	// Raw is the notification exactly as received: it becomes the message data.
	Raw []byte
	// Value is the product entity within Raw (its value member), nil for
	// the short form: what the interests are evaluated against.
	Value []byte
	// Entity is where Value's members lie, found by the walk that
	// validated them: the interests read the few values they compare
	// from here rather than walking the entity a second time.
	Entity Entity

	platform string // platformShortName, only while decoding
}

// The product attributes the receiver reads; every other one is the
// catalogue's business and stays unread in Raw.
const (
	attrPlatform        = "platformShortName"
	attrProductType     = "productType"
	attrProcessingLevel = "processingLevel"
	attrTileID          = "tileId"
	attrRelativeOrbit   = "relativeOrbitNumber"
	// attrProcessingDate orders Sentinel-1 versions (internal/cdse/versions).
	attrProcessingDate = "processingDate"
)

// Limits on what a notification field may hold. Real values are far shorter;
// the caps keep hostile input out of headers and logs.
const (
	maxNameLen       = 512
	maxAckIDLen      = 1024
	maxCollectionLen = 64
)

// Parse decodes a request body holding one notification object or a JSON
// array of them. The result is all-or-nothing: the first invalid element makes
// the whole body invalid. max bounds the number of elements of an array.
func Parse(body []byte, max int) ([]Notification, error) {
	return ParseWith(body, ParseOptions{Max: max})
}

// ParseOptions tune ParseWith.
type ParseOptions struct {
	// Max bounds the number of elements of an array body.
	Max int
	// NoEntity leaves Notification.Entity empty: a receiver without
	// interests reads none of the offsets, and noting those of some 23
	// attributes is an allocation and four spans each on every
	// notification (bench/RESULTS.md, 2026-11-24: the drift against
	// b8ff6f7). A reader of an empty Entity reads the entity whole
	// (productfilter.FromNotification), so this is only ever slower,
	// never wrong.
	NoEntity bool
}

// ParseWith is Parse with options.
func ParseWith(body []byte, o ParseOptions) ([]Notification, error) {
	max, note := o.Max, !o.NoEntity
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, &ValidationError{Index: -1, Reason: "empty body", Syntax: true}
	}
	if !utf8.Valid(body) {
		return nil, &ValidationError{Index: -1, Reason: "body is not valid UTF-8", Syntax: true}
	}
	ok, dup := checkJSON(body)
	if !ok {
		return nil, &ValidationError{Index: -1, Reason: "malformed JSON" + syntaxDetail(body), Syntax: true}
	}
	switch body[jsonscan.SkipSpace(body, 0)] {
	case '{':
		if dup >= 0 {
			return nil, duplicateError(body, dup, -1)
		}
		n, err := decode(body, -1, note)
		if err != nil {
			return nil, err
		}
		return []Notification{n}, nil
	case '[':
		elems, err := arrayElements(body, max)
		if errors.Is(err, errTooMany) {
			return nil, fmt.Errorf("%w: more than %d", ErrTooMany, max)
		}
		if err != nil {
			return nil, &ValidationError{Index: -1, Reason: "malformed JSON: " + err.Error(), Syntax: true}
		}
		if len(elems) == 0 {
			return nil, &ValidationError{Index: -1, Reason: "empty array: no notification"}
		}
		if dup >= 0 {
			idx := -1
			for i, e := range elems {
				if start := cap(body) - cap(e); dup >= start && dup < start+len(e) {
					idx = i
				}
			}
			return nil, duplicateError(body, dup, idx)
		}
		out := make([]Notification, len(elems))
		for i, e := range elems {
			if out[i], err = decode(e, i, note); err != nil {
				return nil, err
			}
		}
		return out, nil
	default:
		return nil, &ValidationError{Index: -1, Reason: "body must be a notification object or an array of them, not " + jsonKind(body)}
	}
}

// Decode validates a single notification object (the PULL queue's Read
// returns them one by one).
func Decode(raw []byte) (Notification, error) {
	if !utf8.Valid(raw) {
		return Notification{}, &ValidationError{Index: -1, Reason: "malformed JSON", Syntax: true}
	}
	ok, dup := checkJSON(raw)
	if !ok {
		return Notification{}, &ValidationError{Index: -1, Reason: "malformed JSON", Syntax: true}
	}
	if dup >= 0 {
		return Notification{}, duplicateError(raw, dup, -1)
	}
	return decode(raw, -1, true)
}

// duplicateError says which member name repeats (the name literal starts
// at b[at]); idx is the array element, or -1.
func duplicateError(b []byte, at, idx int) error {
	name, err := jsonscan.Unquote(b[at:jsonscan.StringEnd(b, at)], KnownName)
	if err != nil {
		name = "?"
	}
	return &ValidationError{Index: idx, Field: name,
		Reason: fmt.Sprintf("duplicate member (the name repeats, exactly or in another case, in one object at offset %d): a reader could take either", at)}
}

func decode(raw []byte, idx int, note bool) (Notification, error) {
	bad := func(field, reason string) (Notification, error) {
		return Notification{}, &ValidationError{Index: idx, Field: field, Reason: reason}
	}
	n := Notification{Raw: raw}
	// The members are collected in one walk; the product entity is read on
	// the way, so its bytes are scanned once, not once to find its end and
	// again to read it.
	members := make([]member, 0, 12)
	var productErr *fieldError
	_, err := jsonscan.WalkObject(raw, 0, KnownName, func(name string, i int) int {
		end := -1
		if (name == "value" || name == "Value") && raw[i] == '{' && productErr == nil {
			end, productErr = n.readProduct(raw, i, note)
		}
		if end < 0 {
			end = jsonscan.ValueEnd(raw, i)
		}
		members = append(members, member{name: name, value: raw[i:end]})
		return end
	})
	if errors.Is(err, jsonscan.ErrNotObject) {
		return bad("", "notification must be a JSON object, not "+jsonKind(raw))
	}
	if err != nil {
		return bad("", "malformed JSON: "+err.Error())
	}
	var (
		value    []byte
		valueKey string
	)
	for _, m := range members {
		switch m.name {
		case "SubscriptionEvent":
			s, ok := jsonscan.String(m.value)
			if !ok {
				return bad(m.name, "must be a string: one of created, modified, deleted")
			}
			switch event.Kind(s) {
			case event.Created, event.Modified, event.Deleted:
				n.Event = event.Kind(s)
			default:
				return bad(m.name, fmt.Sprintf("unknown event %s: must be one of created, modified, deleted (lowercase)", quoteShort(s)))
			}
		case "ProductId":
			s, ok := jsonscan.String(m.value)
			if !ok {
				return bad(m.name, "must be a UUID string")
			}
			if n.ProductID, ok = canonicalUUID(s); !ok {
				return bad(m.name, "not a UUID: "+quoteShort(s))
			}
		case "SubscriptionId":
			s, ok := optionalString(m.value)
			if !ok {
				return bad(m.name, "must be a UUID string")
			}
			if s != "" {
				if n.SubscriptionID, ok = canonicalUUID(s); !ok {
					return bad(m.name, "not a UUID: "+quoteShort(s))
				}
			}
		case "ProductName":
			s, reason := headerString(m.value, maxNameLen)
			if reason != "" {
				return bad(m.name, reason)
			}
			n.ProductName = s
		case "AckId":
			s, reason := headerString(m.value, maxAckIDLen)
			if reason != "" {
				return bad(m.name, reason)
			}
			n.AckID = s
		case "NotificationDate":
			s, ok := optionalString(m.value)
			if !ok {
				return bad(m.name, "must be an ISO 8601 date-time string")
			}
			if s != "" {
				if n.NotificationDate, ok = ParseTime(s); !ok {
					return bad(m.name, "not an ISO 8601 date-time: "+quoteShort(s))
				}
			}
		case "@odata.context":
			if _, ok := optionalString(m.value); !ok {
				return bad(m.name, "must be a string")
			}
		case "value", "Value":
			if valueKey != "" {
				return bad(m.name, "both value and Value are present")
			}
			valueKey = m.name
			value = m.value
		}
	}
	switch {
	case n.Event == "":
		return bad("SubscriptionEvent", "missing")
	case n.ProductID == "":
		return bad("ProductId", "missing")
	}
	if valueKey != "" && string(value) != "null" && value[0] != '{' {
		return bad(valueKey, "must be the product entity object, not "+jsonKind(value))
	}
	if len(value) > 0 && value[0] == '{' {
		n.Value = value
	}
	if productErr != nil {
		field := valueKey
		if productErr.field != "" {
			field += "." + productErr.field
		}
		return bad(field, productErr.reason)
	}
	n.Collection = collectionOf(n.platform, n.ProductName)
	n.platform = ""
	n.Platform = platformOf(n.ProductName)
	return n, nil
}

type fieldError struct{ field, reason string }

// readProduct takes from the product entity that starts at raw[i] the
// little the receiver needs: Name, ModificationDate and the
// platformShortName attribute, and notes in n.Entity where the members a
// filter can name lie (unless note is false). The rest is forwarded
// untouched in Raw and never decoded. raw is known to be valid JSON. It returns the offset just past
// the entity, or -1 when it is not an object.
func (n *Notification) readProduct(raw []byte, i int, note bool) (int, *fieldError) {
	if len(raw)-i > maxEntity {
		return -1, &fieldError{"", "product entity longer than 2 GiB"}
	}
	var ferr *fieldError
	fail := func(field, reason string) {
		if ferr == nil {
			ferr = &fieldError{field, reason}
		}
	}
	end, err := jsonscan.WalkObject(raw, i, KnownName, func(name string, v int) int {
		if name == "Attributes" {
			if raw[v] != '[' {
				e := jsonscan.ValueEnd(raw, v)
				if string(raw[v:e]) != "null" {
					fail("Attributes", "must be an array, not "+jsonKind(raw[v:e]))
				}
				return e
			}
			if note && n.Entity.Attributes == nil {
				n.Entity.Attributes = make([]AttributeSpans, 0, 24) // a Sentinel-2 product has 23
			}
			e, _ := jsonscan.WalkArray(raw, v, func(a int) int {
				if raw[a] != '{' {
					return -1
				}
				ae, spans, name, value := attribute(raw, a, i, note)
				if note {
					n.Entity.Attributes = append(n.Entity.Attributes, spans)
				}
				if value == nil {
					return ae
				}
				switch name {
				case attrPlatform:
					if s, ok := jsonscan.String(value); ok && n.platform == "" {
						n.platform = s
					}
				case attrProductType:
					setToken(&n.ProductType, value)
				case attrProcessingLevel:
					setToken(&n.ProcessingLevel, value)
				case attrTileID:
					setToken(&n.TileID, value)
				case attrRelativeOrbit:
					setToken(&n.RelativeOrbit, value)
				case attrProcessingDate:
					// Unreadable: no date, and so no Sentinel-1 version;
					// the notification itself is not refused for it.
					if s, ok := jsonscan.String(value); ok && n.ProcessingDate.IsZero() {
						n.ProcessingDate, _ = ParseTime(s)
					}
				}
				return ae
			})
			return e
		}
		e := jsonscan.ValueEnd(raw, v)
		if m, ok := memberOf(name); ok && note {
			n.Entity.Members[m] = spanAt(v, e, i)
		}
		val := raw[v:e]
		switch name {
		case "Name":
			s, ok := optionalString(val)
			if !ok {
				fail("Name", "must be a string, not "+jsonKind(val))
			} else if reason := headerSafe(s, maxNameLen); reason != "" {
				fail("Name", reason)
			} else if n.ProductName == "" {
				n.ProductName = s
			}
		case "ModificationDate":
			s, ok := optionalString(val)
			switch {
			case !ok:
				fail("ModificationDate", "must be an ISO 8601 date-time string, not "+jsonKind(val))
			case s != "":
				if t, ok := ParseTime(s); ok {
					n.ModificationDate = t
				} else {
					fail("ModificationDate", "not an ISO 8601 date-time: "+quoteShort(s))
				}
			}
		case "DeletionDate":
			// Read for the delivery delay only: never a reason to refuse.
			if s, ok := jsonscan.String(val); ok {
				n.Deleted, _ = ParseTime(s)
			}
		// Fields that only become headers: a value that cannot be one is
		// left out, never a reason to refuse the notification.
		case "PublicationDate":
			if s, ok := jsonscan.String(val); ok {
				if t, ok := ParseTime(s); ok {
					n.Published = t
					n.PublicationDate = t.UTC().Format(time.RFC3339Nano)
				}
			}
		case "ContentLength":
			if isDigits(val) && len(val) <= 20 {
				n.ContentLength = string(val)
			}
		case "S3Path":
			if s, ok := jsonscan.String(val); ok && headerSafe(s, maxNameLen) == "" {
				n.S3Path = s
			}
		case "Online":
			if lit := string(val); lit == "true" || lit == "false" {
				n.Online = lit
			}
		}
		return e
	})
	if err != nil {
		return -1, &fieldError{"", "malformed product entity"}
	}
	return end, ferr
}

// attribute reads the attribute object at raw[i]: it returns the offset
// past it, where its members lie (relative to an entity that starts at
// base) and, if it is one the receiver reads (its Name is one of the attr*
// constants), that name and the raw bytes of its Value. Attributes of other
// shapes are ignored: they are the catalogue's business. Nothing is decoded
// but the name (and only when it has escapes), so the usual twenty-odd
// attributes cost no allocation.
func attribute(raw []byte, i, base int, note bool) (end int, at AttributeSpans, name string, value []byte) {
	end, err := jsonscan.WalkObject(raw, i, KnownName, func(member string, v int) int {
		var sp *Span
		switch {
		case member == "Name":
			sp = &at.Name
		case member == "Value":
			sp = &at.Value
		case member == "ValueType" && note:
			sp = &at.ValueType
		case member == "@odata.type" && note:
			sp = &at.ODataType
		default:
			return -1
		}
		e := jsonscan.ValueEnd(raw, v)
		*sp = spanAt(v, e, base)
		return e
	})
	entity := raw[base:]
	if err != nil || at.Value.End == 0 || at.Name.End == 0 {
		return end, at, "", nil
	}
	if name = readAttributeName(at.Name.Bytes(entity)); name == "" {
		return end, at, "", nil
	}
	return end, at, name, at.Value.Bytes(entity)
}

// readAttributeName is the attribute's name if it is one the receiver
// reads, else "".
func readAttributeName(lit []byte) string {
	switch string(lit) {
	case `"` + attrPlatform + `"`:
		return attrPlatform
	case `"` + attrProductType + `"`:
		return attrProductType
	case `"` + attrProcessingLevel + `"`:
		return attrProcessingLevel
	case `"` + attrTileID + `"`:
		return attrTileID
	case `"` + attrRelativeOrbit + `"`:
		return attrRelativeOrbit
	case `"` + attrProcessingDate + `"`:
		return attrProcessingDate
	}
	if bytes.IndexByte(lit, '\\') < 0 {
		return ""
	}
	s, ok := jsonscan.String(lit) // a name spelt with escapes
	if !ok {
		return ""
	}
	switch s {
	case attrPlatform, attrProductType, attrProcessingLevel, attrTileID, attrRelativeOrbit, attrProcessingDate:
		return s
	}
	return ""
}

// setToken sets *dst, once, to a string or integer attribute value made a
// subject token.
func setToken(dst *string, value []byte) {
	if *dst != "" {
		return
	}
	if s, ok := jsonscan.String(value); ok {
		*dst = event.SanitizeToken(s)
	} else if isDigits(value) {
		*dst = event.SanitizeToken(string(value))
	}
}

func isDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// platformOf is the platform of a product from its name's first part:
// "S2B" of "S2B_MSIL2A_...", "S5P" of "S5P_NRTI_...".
func platformOf(name string) string {
	p, _, found := strings.Cut(name, "_")
	if !found || len(p) < 2 || len(p) > 8 {
		return ""
	}
	return event.SanitizeToken(p)
}

// DedupeKey identifies the fact a notification announces: the same product
// and event (and, for modifications, the same modification) from any
// subscription, retry or source gives the same key. It is used as the
// JetStream Nats-Msg-Id. Only validated, canonical values go into it, so it
// is safe as a header value.
func (n *Notification) DedupeKey() string {
	return DedupeKey(n.Event, n.ProductID, n.ModificationDate)
}

// DedupeKey builds the key from its parts; productID must be canonical.
// A modification without ModificationDate falls back to product + event.
func DedupeKey(ev event.Kind, productID string, modified time.Time) string {
	if ev == event.Modified && !modified.IsZero() {
		return string(ev) + ":" + productID + ":" + modified.UTC().Format(time.RFC3339Nano)
	}
	return string(ev) + ":" + productID
}

// EventTime is when the catalogue says the event happened: the product's
// PublicationDate for created, ModificationDate for modified, DeletionDate
// for deleted; zero when the notification does not carry it (the short
// form of an old PULL notification).
func (n *Notification) EventTime() time.Time {
	switch n.Event {
	case event.Created:
		return n.Published
	case event.Modified:
		return n.ModificationDate
	case event.Deleted:
		return n.Deleted
	}
	return time.Time{}
}

// Subject is the notification's subject under prefix with the default
// template: "<prefix>.<event>.<collection>.<productType>".
func (n *Notification) Subject(prefix string) string {
	return event.DefaultTemplate.Subject(prefix, n)
}

// collectionOf derives the collection token: the platformShortName attribute
// when present, else the mission prefix of the product name, else UNKNOWN.
func collectionOf(platform, name string) string {
	if c := event.SanitizeToken(platform); c != "" {
		return c
	}
	if c := MissionOf(name); c != "" {
		return c
	}
	return UnknownCollection
}

// MissionOf is the collection of a product name's mission prefix
// (S2B_MSIL2A_... is SENTINEL-2); "" for a name of no known mission.
func MissionOf(name string) string {
	switch {
	case strings.HasPrefix(name, "S1"):
		return "SENTINEL-1"
	case strings.HasPrefix(name, "S2"):
		return "SENTINEL-2"
	case strings.HasPrefix(name, "S3"):
		return "SENTINEL-3"
	case strings.HasPrefix(name, "S5P"):
		return "SENTINEL-5P"
	}
	return ""
}

// ParseTime accepts the date-time spellings the catalogue uses (the event
// package's, which consumers decode with).
func ParseTime(s string) (time.Time, bool) { return event.ParseTime(s) }

func canonicalUUID(s string) (string, bool) {
	if len(s) != 36 { // only the hyphenated form the catalogue uses
		return "", false
	}
	u, err := uuid.Parse(s)
	if err != nil {
		return "", false
	}
	return u.String(), true
}

// optionalString decodes a JSON string or null ("" for null).
func optionalString(raw []byte) (string, bool) {
	if string(raw) == "null" {
		return "", true
	}
	return jsonscan.String(raw)
}

// headerString decodes an optional string that goes into a NATS header:
// the string, or why it cannot.
func headerString(raw []byte, max int) (s, reason string) {
	s, ok := optionalString(raw)
	if !ok {
		return "", "must be a string"
	}
	return s, headerSafe(s, max)
}

// headerSafe returns why s may not go into a NATS header, or "".
func headerSafe(s string, max int) string {
	if len(s) > max {
		return "longer than " + strconv.Itoa(max) + " bytes"
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return "contains a control character"
		}
	}
	return ""
}

func jsonKind(raw []byte) string {
	i := jsonscan.SkipSpace(raw, 0)
	if i >= len(raw) {
		return "nothing"
	}
	switch raw[i] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// quoteShort quotes s for an error message, cut to a readable length so a
// 10 MB field does not come back in the response.
func quoteShort(s string) string {
	const max = 64
	if len(s) > max {
		return strconv.Quote(s[:max]) + "…"
	}
	return strconv.Quote(s)
}

func syntaxDetail(body []byte) string {
	var v json.RawMessage // validates without building values
	err := json.Unmarshal(body, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf(" at offset %d", se.Offset)
	}
	return ""
}
