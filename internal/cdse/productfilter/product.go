package productfilter

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/peterstace/simplefeatures/geom"

	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/platform/jsonscan"
)

// Product is what a filter can see of one catalogue product (or deleted
// product). A zero field is a missing property: every comparison with it
// is false, whatever the operator, so that a product that does not say
// something never matches a condition on it by accident.
type Product struct {
	ID         string
	Name       string
	Collection string // Collection/Name; see FromEntity for how it is derived

	ContentStart, ContentEnd time.Time // ContentDate/Start, ContentDate/End
	PublicationDate          time.Time
	ModificationDate         time.Time
	OriginDate               time.Time
	DeletionDate             time.Time // deleted products only
	DeletionCause            string    // deleted products only

	Online    bool
	HasOnline bool // deleted products have no Online

	ContentLength    int64
	HasContentLength bool

	Attributes []Attribute

	// fp is behind a pointer so that a Product stays a plain value (copied
	// freely) while the footprint it refers to is parsed at most once.
	fp *footprint
}

// AttrType is the type of an attribute, as in the catalogue's
// OData.CSC.<Type>Attribute.
type AttrType uint8

// The attribute types of the catalogue.
const (
	StringAttr AttrType = iota + 1
	DoubleAttr
	IntegerAttr
	DateTimeOffsetAttr
	BooleanAttr // sliceProductFlag of Sentinel-1 products
)

var attrTypeNames = [...]string{StringAttr: "String", DoubleAttr: "Double", IntegerAttr: "Integer", DateTimeOffsetAttr: "DateTimeOffset", BooleanAttr: "Boolean"}

// String is the catalogue's ValueType name ("Double").
func (t AttrType) String() string {
	if int(t) < len(attrTypeNames) && attrTypeNames[t] != "" {
		return attrTypeNames[t]
	}
	return "unknown"
}

// AttrTypeOf reads a ValueType ("String", "Double", "Integer",
// "DateTimeOffset", "Boolean"); 0 for any other.
func AttrTypeOf(valueType string) AttrType {
	switch valueType {
	case "String":
		return StringAttr
	case "Double":
		return DoubleAttr
	case "Integer":
		return IntegerAttr
	case "DateTimeOffset":
		return DateTimeOffsetAttr
	case "Boolean":
		return BooleanAttr
	}
	return 0
}

// Attribute is one typed attribute; the field its Type names holds the
// value. (Bool beside Type takes the padding after it: an Attribute
// stays 80 bytes, and a product's attributes a slice of them.)
type Attribute struct {
	Name  string
	Type  AttrType
	Bool  bool
	Str   string
	Float float64
	Int   int64
	Time  time.Time
}

// Attr returns the attribute called name.
func (p *Product) Attr(name string) (Attribute, bool) {
	for _, a := range p.Attributes {
		if a.Name == name {
			return a, true
		}
	}
	return Attribute{}, false
}

// footprint holds the product's footprint as read, parsed on first use:
// most filters have no Intersects term, and parsing a footprint of a few
// hundred vertices costs more than reading the rest of the entity.
type footprint struct {
	once    sync.Once
	wkt     string // from Footprint, without geography'SRID=4326;...'
	geojson []byte // from GeoFootprint, used when there is no wkt
	g       geom.Geometry
	parts   []part
	err     error
	// bad is why the footprint is not tested against areas ("" when it
	// is): a coordinate no footprint has, or more than the caps allow.
	bad Unevaluated
}

// SetFootprint sets the product's footprint (lon/lat, EPSG:4326). An empty
// geometry means none.
func (p *Product) SetFootprint(g geom.Geometry) {
	fp := &footprint{g: g}
	fp.once.Do(fp.prepare)
	p.fp = fp
}

// Footprint returns the product's footprint as read (empty when the
// product has none), parsing it on first use.
func (p *Product) Footprint() (geom.Geometry, error) {
	if p.fp == nil {
		return geom.Geometry{}, nil
	}
	p.fp.load()
	return p.fp.g, p.fp.err
}

// FootprintUnevaluated is why the product's footprint is not tested
// against areas, "" when it is (or when the product has none, or one that
// cannot be read: no area matches those), parsing it on first use.
func (p *Product) FootprintUnevaluated() Unevaluated {
	if p.fp == nil {
		return ""
	}
	p.fp.load()
	return p.fp.bad
}

func (fp *footprint) load() {
	fp.once.Do(func() {
		// Footprints are the catalogue's data, not user input: they are
		// not validated (a slightly invalid ring still tests sensibly),
		// which also saves the validation's cost.
		switch {
		case fp.wkt != "":
			var ok bool
			if fp.g, ok = readFootprintWKT(fp.wkt); !ok {
				fp.g, fp.err = geom.UnmarshalWKT(fp.wkt, geom.NoValidate{})
			}
		case fp.geojson != nil:
			fp.g, fp.err = geom.UnmarshalGeoJSON(fp.geojson, geom.NoValidate{})
		}
		switch {
		case fp.err == nil:
			fp.prepare()
		case fp.wkt != "" && nonFiniteNumber(fp.wkt), fp.wkt == "" && nonFiniteNumber(string(fp.geojson)):
			// Not a broken footprint (which matches no area) but one with
			// a coordinate of 1e400 or NaN, which the parsers refuse.
			fp.bad = NonFinite
		}
		fp.wkt, fp.geojson = "", nil
	})
}

// prepare checks the footprint read and, when it can be tested, splits it
// for the antimeridian; the checks come first, so that nothing superlinear
// (nor the unwrapping, given a longitude of 1e300) runs on a footprint
// that is not tested.
func (fp *footprint) prepare() {
	if fp.bad = checkFootprint(fp.g); fp.bad == "" {
		fp.parts = normalize(fp.g)
	}
}

// ErrNotEntity is returned by FromEntity for input that is not one JSON
// object.
var ErrNotEntity = errors.New("productfilter: not a product entity (a JSON object)")

// FromEntity reads a catalogue Product or DeletedProduct entity (a
// notification's value). It fails only on input that is not one JSON
// object: a property that is absent, null or of an unexpected type is
// missing, as is an attribute whose value does not fit its ValueType, so
// the catalogue's oddities (EvictionDate "", Checksum [{}]) never make a
// whole product unreadable. The footprint is taken from Footprint
// (geography'SRID=4326;...') or else GeoFootprint (GeoJSON) and parsed only
// when a filter needs it.
//
// Collection/Name is not part of a pushed entity; Collection is derived as
// the receiver derives the collection of its subjects (see collectionOf).
func FromEntity(raw []byte) (Product, error) {
	if !json.Valid(raw) {
		return Product{}, ErrNotEntity
	}
	e, err := notification.ReadEntity(raw)
	if err != nil {
		return Product{}, ErrNotEntity
	}
	return fromEntity(raw, &e, &Everything), nil
}

// FromNotification is the product of a notification the receiver
// accepted, as far as filters that need what needs says read it: the
// receiver's way, which decodes a few values where the notification's
// validation found them (notification.Entity) instead of walking the
// entity again. ok is false for the short form, which has no product.
func FromNotification(n *notification.Notification, needs *Needs) (p Product, ok bool) {
	if len(n.Value) == 0 {
		return Product{}, false
	}
	if n.Entity.Members == ([notification.NumMembers]notification.Span{}) && n.Entity.Attributes == nil {
		// Nothing noted: a Notification not made by notification's
		// decoder (or an empty entity, which costs nothing to read). Read
		// whole rather than as a product with nothing in it.
		p, _ := FromEntity(n.Value)
		return p, true
	}
	return fromEntity(n.Value, &n.Entity, needs), true
}

// fromEntity decodes what needs asks for from the members e notes in raw.
// The strings it keeps are copies: raw may be a buffer the caller reuses.
func fromEntity(raw []byte, e *notification.Entity, needs *Needs) Product {
	var p Product
	val := func(m notification.Member) []byte { return e.Members[m].Bytes(raw) }
	if needs.has(needID) {
		p.ID, _ = jsonscan.String(val(notification.MemberID))
	}
	if needs.has(needName) || needs.has(needCollection) {
		p.Name, _ = jsonscan.String(val(notification.MemberName))
	}
	if needs.has(needDeletionCause) {
		p.DeletionCause, _ = jsonscan.String(val(notification.MemberDeletionCause))
	}
	if v := val(notification.MemberContentLength); v != nil && needs.has(needContentLength) {
		p.ContentLength, p.HasContentLength = integer(v)
	}
	for _, d := range [...]struct {
		need need
		m    notification.Member
		t    *time.Time
	}{
		{needOrigin, notification.MemberOriginDate, &p.OriginDate},
		{needPublication, notification.MemberPublicationDate, &p.PublicationDate},
		{needModification, notification.MemberModificationDate, &p.ModificationDate},
		{needDeletion, notification.MemberDeletionDate, &p.DeletionDate},
	} {
		if needs.has(d.need) {
			*d.t = date(val(d.m))
		}
	}
	if v := val(notification.MemberOnline); v != nil && needs.has(needOnline) {
		p.Online, p.HasOnline = boolean(v)
	}
	if sp := e.Members[notification.MemberContentDate]; sp.End != 0 && raw[sp.Start] == '{' &&
		(needs.has(needContentStart) || needs.has(needContentEnd)) {
		_, _ = jsonscan.WalkObject(raw, int(sp.Start), notification.KnownName, func(name string, w int) int {
			we := jsonscan.ValueEnd(raw, w)
			switch name {
			case "Start":
				p.ContentStart = date(raw[w:we])
			case "End":
				p.ContentEnd = date(raw[w:we])
			}
			return we
		})
	}
	if needs.has(needFootprint) {
		var fp footprint
		if f, ok := jsonscan.String(val(notification.MemberFootprint)); ok {
			fp.wkt = footprintWKT(f)
		}
		if v := val(notification.MemberGeoFootprint); fp.wkt == "" && v != nil && v[0] == '{' {
			fp.geojson = bytes.Clone(v)
		}
		if fp.wkt != "" || fp.geojson != nil {
			p.fp = &footprint{wkt: fp.wkt, geojson: fp.geojson}
		}
	}
	p.readAttributes(raw, e.Attributes, needs)
	if needs.has(needCollection) {
		p.Collection = collectionOf(&p)
	}
	return p
}

// readAttributes reads the attributes needs asks for.
func (p *Product) readAttributes(raw []byte, spans []notification.AttributeSpans, needs *Needs) {
	if len(spans) == 0 || !needs.all && len(needs.attrs) == 0 {
		return
	}
	for _, as := range spans {
		lit := as.Name.Bytes(raw)
		if lit == nil {
			continue
		}
		var name string
		var ok bool
		if needs.all {
			name, ok = attributeName(lit)
		} else {
			name, ok = needs.attribute(lit)
		}
		if !ok || name == "" {
			continue
		}
		if at, ok := readAttribute(name, raw, as); ok {
			if p.Attributes == nil {
				n := len(spans)
				if !needs.all {
					n = len(needs.attrs)
				}
				p.Attributes = make([]Attribute, 0, n)
			}
			p.Attributes = append(p.Attributes, at)
		}
	}
}

// The value readers take one whole JSON value; one of another type reads
// as missing (ok false).

// date reads a date-time string; dates hold no escapes, and a quoted one
// that does is not a date.
func date(v []byte) time.Time {
	if len(v) < 2 || v[0] != '"' {
		return time.Time{}
	}
	t, _ := parseDateTime(string(v[1 : len(v)-1]))
	return t
}

func number(v []byte) bool { return v[0] == '-' || v[0] >= '0' && v[0] <= '9' }

// integer reads an integer, also one written as a double (5.0).
func integer(v []byte) (int64, bool) {
	if !number(v) {
		return 0, false
	}
	if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return i, true
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err == nil && f == float64(int64(f)) {
		return int64(f), true
	}
	return 0, false
}

func boolean(v []byte) (bool, bool) {
	switch string(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// attributeNames are the names of the catalogue's attributes (those of
// the Sentinel missions), kept once rather than allocated again for every
// product read.
var attributeNames = func() map[string]string {
	m := map[string]string{}
	for _, n := range strings.Fields(`authority baselineCollection beginningDateTime brightCover cloudCover
		coordinateReferenceSystem cycleNumber datastripId datatakeID endingDateTime granuleIdentifier
		illuminationAzimuthAngle illuminationZenithAngle instrumentConfigurationID instrumentShortName
		lastOrbitDirection lastOrbitNumber lastRelativeOrbitNumber operationalMode orbitDirection orbitNumber
		origin platformSerialIdentifier platformShortName polarisationChannels processingCenter processingDate
		processingLevel processingMode processorName processorVersion productClass productComposition
		productGroupId productType qualityStatus relativeOrbitNumber segmentStartTime sliceNumber
		sourceProduct sourceProductOriginDate spatialResolution startTimeFromAscendingNode swathIdentifier
		tileId timeliness totalSlices`) {
		m[n] = n
	}
	return m
}()

// attributeName is the name the string literal lit holds, without an
// allocation for the catalogue's own names.
func attributeName(lit []byte) (string, bool) {
	if len(lit) < 2 || lit[0] != '"' {
		return "", false
	}
	if n, ok := attributeNames[string(lit[1:len(lit)-1])]; ok { // no allocation
		return n, true
	}
	return jsonscan.String(lit)
}

// readAttribute makes one attribute of its members' values (the Value may
// come before the ValueType that says how to read it).
func readAttribute(name string, raw []byte, as notification.AttributeSpans) (Attribute, bool) {
	a := Attribute{Name: name}
	v := as.Value.Bytes(raw)
	if v == nil {
		return a, false
	}
	var unsaid bool
	a.Type, unsaid = valueType(as.ValueType.Bytes(raw))
	if a.Type == 0 && unsaid {
		// "#OData.CSC.DoubleAttribute" says the same.
		ot, _ := jsonscan.String(as.ODataType.Bytes(raw))
		a.Type = AttrTypeOf(strings.TrimSuffix(strings.TrimPrefix(ot, "#OData.CSC."), "Attribute"))
	}
	var ok bool
	switch {
	case a.Type == StringAttr && v[0] == '"':
		a.Str, ok = jsonscan.String(v)
	case a.Type == DateTimeOffsetAttr && v[0] == '"':
		s, _ := jsonscan.String(v)
		a.Time, ok = parseDateTime(s)
	case a.Type == DoubleAttr && number(v):
		f, err := strconv.ParseFloat(string(v), 64)
		a.Float, ok = f, err == nil
	case a.Type == IntegerAttr && number(v):
		a.Int, ok = integer(v)
	case a.Type == BooleanAttr:
		a.Bool, ok = boolean(v)
	default:
		ok = false
	}
	return a, ok
}

// valueType reads a ValueType member's value (nil when absent): the type
// it names, and whether it says none (absent, not a string, or empty), in
// which case the @odata.type may say it.
func valueType(v []byte) (t AttrType, unsaid bool) {
	if len(v) < 2 || v[0] != '"' {
		return 0, true
	}
	inner := v[1 : len(v)-1]
	if bytes.IndexByte(inner, '\\') >= 0 {
		s, _ := jsonscan.String(v)
		return AttrTypeOf(s), s == ""
	}
	return AttrTypeOf(string(inner)), len(inner) == 0 // no allocation
}

// footprintWKT strips the OData geography literal around the WKT:
// geography'SRID=4326;POLYGON ((...))'. A footprint in another reference
// system is dropped (it would be compared in the wrong coordinates).
func footprintWKT(s string) string {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "geography'"); ok {
		s = strings.TrimSuffix(rest, "'")
	}
	if len(s) > 5 && strings.EqualFold(s[:5], "SRID=") {
		srid, rest, ok := strings.Cut(s[5:], ";")
		if !ok || srid != "4326" {
			return ""
		}
		s = rest
	}
	return s
}

// collectionAttribute is the attribute that names a product's collection.
const collectionAttribute = "platformShortName"

// collectionOf derives Collection/Name as internal/cdse/notification's
// (unexported) collectionOf does for subjects: the platformShortName
// attribute, else the mission of the product name. It differs in two ways
// on purpose: the attribute is taken as it is, not sanitised into a subject
// token, because a filter compares it with the catalogue's spelling; and a
// product of no known mission has no collection (a missing property, so
// Collection/Name eq 'UNKNOWN' does not match it) rather than UNKNOWN.
func collectionOf(p *Product) string {
	if a, ok := p.Attr(collectionAttribute); ok && a.Type == StringAttr && a.Str != "" {
		return a.Str
	}
	return notification.MissionOf(p.Name)
}
