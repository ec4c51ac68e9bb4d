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

	"github.com/cdse-jetstream/receiver/internal/jsonscan"
	"github.com/cdse-jetstream/receiver/internal/notification"
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
)

var attrTypeNames = [...]string{StringAttr: "String", DoubleAttr: "Double", IntegerAttr: "Integer", DateTimeOffsetAttr: "DateTimeOffset"}

// String is the catalogue's ValueType name ("Double").
func (t AttrType) String() string {
	if int(t) < len(attrTypeNames) && attrTypeNames[t] != "" {
		return attrTypeNames[t]
	}
	return "unknown"
}

// AttrTypeOf reads a ValueType ("String", "Double", "Integer",
// "DateTimeOffset"); 0 for any other.
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
	}
	return 0
}

// Attribute is one typed attribute; the field its Type names holds the
// value.
type Attribute struct {
	Name  string
	Type  AttrType
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
}

// SetFootprint sets the product's footprint (lon/lat, EPSG:4326). An empty
// geometry means none.
func (p *Product) SetFootprint(g geom.Geometry) {
	fp := &footprint{g: g}
	fp.once.Do(func() { fp.parts = normalize(g) })
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

// parts returns the footprint split for the antimeridian, nil when there
// is none or it cannot be read.
func (p *Product) parts() []part {
	if p.fp == nil {
		return nil
	}
	p.fp.load()
	return p.fp.parts
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
		if fp.err == nil {
			fp.parts = normalize(fp.g)
		}
		fp.wkt, fp.geojson = "", nil
	})
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
	return FromValidEntity(raw)
}

// FromValidEntity is FromEntity for raw known to be valid JSON: the
// product of a notification the receiver accepted. It walks the entity by
// offsets (internal/jsonscan) and decodes only the values a filter can
// read; a general JSON decoder took 25 of the 65 µs that 20 interests cost
// per product, mostly skipping GeoFootprint, Checksum and Assets token by
// token (BenchmarkRouterMatch).
func FromValidEntity(raw []byte) (Product, error) {
	var p Product
	var fp footprint
	// Every string the product keeps (names, attribute values, the
	// footprint) is a piece of one copy of the entity, not an allocation
	// of its own: one 7 KB copy costs less than the twenty-odd strings.
	text := string(raw)
	s := func(v, e int) (string, bool) { return str(text, raw, v, e) }
	end, err := jsonscan.WalkObject(raw, 0, func(name string, v int) int {
		e := jsonscan.ValueEnd(raw, v)
		val := raw[v:e]
		if len(val) == 0 { // only in JSON that is not valid, which callers rule out
			return e
		}
		switch name {
		case "Id":
			p.ID, _ = s(v, e)
		case "Name":
			p.Name, _ = s(v, e)
		case "ContentLength":
			p.ContentLength, p.HasContentLength = integer(val)
		case "OriginDate":
			p.OriginDate = date(val)
		case "PublicationDate":
			p.PublicationDate = date(val)
		case "ModificationDate":
			p.ModificationDate = date(val)
		case "DeletionDate":
			p.DeletionDate = date(val)
		case "DeletionCause":
			p.DeletionCause, _ = s(v, e)
		case "Online":
			p.Online, p.HasOnline = boolean(val)
		case "ContentDate":
			if val[0] == '{' {
				_, _ = jsonscan.WalkObject(raw, v, func(name string, w int) int {
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
		case "Footprint":
			if f, ok := s(v, e); ok {
				fp.wkt = footprintWKT(f)
			}
		case "GeoFootprint":
			// Footprint usually comes first and says the same.
			if val[0] == '{' && fp.wkt == "" {
				fp.geojson = bytes.Clone(val)
			}
		case "Attributes":
			if val[0] == '[' {
				p.readAttributes(text, raw, v)
			}
		}
		return e
	})
	if err != nil || jsonscan.SkipSpace(raw, end) != len(raw) {
		return Product{}, ErrNotEntity
	}
	if fp.wkt != "" || fp.geojson != nil {
		if fp.wkt != "" {
			fp.geojson = nil
		}
		p.fp = &footprint{wkt: fp.wkt, geojson: fp.geojson}
	}
	p.Collection = collectionOf(&p)
	return p, nil
}

// str reads the string value raw[v:e] (text is raw as a string): a piece
// of text when it has no escapes. ok is false for a value of another type.
func str(text string, raw []byte, v, e int) (string, bool) {
	if raw[v] != '"' {
		return "", false
	}
	if inner := raw[v+1 : e-1]; bytes.IndexByte(inner, '\\') < 0 {
		return text[v+1 : e-1], true
	}
	u, err := jsonscan.Unquote(raw[v:e])
	return u, err == nil
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

// attributeName is the name raw[v:e], without an allocation for the
// catalogue's own names.
func attributeName(text string, raw []byte, v, e int) (string, bool) {
	if raw[v] != '"' {
		return "", false
	}
	if n, ok := attributeNames[string(raw[v+1:e-1])]; ok { // no allocation
		return n, true
	}
	return str(text, raw, v, e)
}

// span is a member's value, raw[start:end]; end 0 when absent.
type span struct{ start, end int }

func (p *Product) readAttributes(text string, raw []byte, i int) {
	if p.Attributes == nil {
		p.Attributes = make([]Attribute, 0, 24) // a Sentinel-2 product has 23
	}
	_, _ = jsonscan.WalkArray(raw, i, func(a int) int {
		if raw[a] != '{' {
			return -1
		}
		var name, value, valueType, otype span
		end, _ := jsonscan.WalkObject(raw, a, func(member string, v int) int {
			e := jsonscan.ValueEnd(raw, v)
			switch member {
			case "Name":
				name = span{v, e}
			case "Value":
				value = span{v, e}
			case "ValueType":
				valueType = span{v, e}
			case "@odata.type":
				otype = span{v, e}
			}
			return e
		})
		if at, ok := readAttribute(text, raw, name, value, valueType, otype); ok {
			p.Attributes = append(p.Attributes, at)
		}
		return end
	})
}

// readAttribute makes one attribute of its members' values (the Value may
// come before the ValueType that says how to read it).
func readAttribute(text string, raw []byte, name, value, valueType, otype span) (Attribute, bool) {
	var a Attribute
	if name.end == 0 || value.end == 0 {
		return a, false
	}
	var ok bool
	if a.Name, ok = attributeName(text, raw, name.start, name.end); !ok || a.Name == "" {
		return a, false
	}
	var vt string
	if valueType.end != 0 {
		vt, _ = str(text, raw, valueType.start, valueType.end)
	}
	a.Type = AttrTypeOf(vt)
	if a.Type == 0 && vt == "" && otype.end != 0 {
		// "#OData.CSC.DoubleAttribute" says the same.
		ot, _ := str(text, raw, otype.start, otype.end)
		a.Type = AttrTypeOf(strings.TrimSuffix(strings.TrimPrefix(ot, "#OData.CSC."), "Attribute"))
	}
	v := raw[value.start:value.end]
	switch {
	case a.Type == StringAttr && v[0] == '"':
		a.Str, ok = str(text, raw, value.start, value.end)
	case a.Type == DateTimeOffsetAttr && v[0] == '"':
		s, _ := str(text, raw, value.start, value.end)
		a.Time, ok = parseDateTime(s)
	case a.Type == DoubleAttr && number(v):
		f, err := strconv.ParseFloat(string(v), 64)
		a.Float, ok = f, err == nil
	case a.Type == IntegerAttr && number(v):
		a.Int, ok = integer(v)
	default:
		ok = false
	}
	return a, ok
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

// collectionOf derives Collection/Name as internal/notification's
// (unexported) collectionOf does for subjects: the platformShortName
// attribute, else the mission of the product name. It differs in two ways
// on purpose: the attribute is taken as it is, not sanitised into a subject
// token, because a filter compares it with the catalogue's spelling; and a
// product of no known mission has no collection (a missing property, so
// Collection/Name eq 'UNKNOWN' does not match it) rather than UNKNOWN.
func collectionOf(p *Product) string {
	if a, ok := p.Attr("platformShortName"); ok && a.Type == StringAttr && a.Str != "" {
		return a.Str
	}
	return notification.MissionOf(p.Name)
}
