package productfilter

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/peterstace/simplefeatures/geom"
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
			fp.g, fp.err = geom.UnmarshalWKT(fp.wkt, geom.NoValidate{})
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

type entityDecoder struct {
	d jsontext.Decoder
}

var decoders = sync.Pool{New: func() any { return new(entityDecoder) }}

var emptyReader = new(bytes.Buffer)

// decodeOpts: the receiver has already refused repeated names and invalid
// UTF-8 in what it stores, so checking them again per product and per
// interest evaluation would be wasted.
var decodeOpts = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

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
	var p Product
	ed := decoders.Get().(*entityDecoder)
	defer func() {
		ed.d.Reset(emptyReader) // do not keep the caller's bytes alive
		decoders.Put(ed)
	}()
	// A bytes.Buffer lets the decoder read raw in place, without a copy.
	d := &ed.d
	d.Reset(bytes.NewBuffer(raw), decodeOpts...)
	if err := p.decode(d); err != nil {
		return Product{}, err
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return Product{}, ErrNotEntity
	}
	p.Collection = collectionOf(&p)
	return p, nil
}

func (p *Product) decode(d *jsontext.Decoder) error {
	if t, err := d.ReadToken(); err != nil || t.Kind() != '{' {
		return ErrNotEntity
	}
	var fp footprint
	for d.PeekKind() != '}' {
		name, err := d.ReadValue()
		if err != nil {
			return ErrNotEntity
		}
		switch string(name) {
		case `"Id"`:
			p.ID, err = readString(d)
		case `"Name"`:
			p.Name, err = readString(d)
		case `"ContentLength"`:
			p.ContentLength, p.HasContentLength, err = readInt(d)
		case `"OriginDate"`:
			p.OriginDate, err = readTime(d)
		case `"PublicationDate"`:
			p.PublicationDate, err = readTime(d)
		case `"ModificationDate"`:
			p.ModificationDate, err = readTime(d)
		case `"DeletionDate"`:
			p.DeletionDate, err = readTime(d)
		case `"DeletionCause"`:
			p.DeletionCause, err = readString(d)
		case `"Online"`:
			p.Online, p.HasOnline, err = readBool(d)
		case `"ContentDate"`:
			err = p.readContentDate(d)
		case `"Footprint"`:
			var s string
			if s, err = readString(d); err == nil {
				fp.wkt = footprintWKT(s)
			}
		case `"GeoFootprint"`:
			// Footprint usually comes first and says the same.
			if d.PeekKind() == '{' && fp.wkt == "" {
				var v jsontext.Value
				if v, err = d.ReadValue(); err == nil {
					fp.geojson = bytes.Clone(v)
				}
			} else {
				err = d.SkipValue()
			}
		case `"Attributes"`:
			err = p.readAttributes(d)
		default:
			err = d.SkipValue()
		}
		if err != nil {
			return ErrNotEntity
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return ErrNotEntity
	}
	if fp.wkt != "" || fp.geojson != nil {
		if fp.wkt != "" {
			fp.geojson = nil
		}
		p.fp = &footprint{wkt: fp.wkt, geojson: fp.geojson}
	}
	return nil
}

// The read helpers return an error only for broken JSON; a value of
// another type is skipped and reads as missing.

func readString(d *jsontext.Decoder) (string, error) {
	if d.PeekKind() != '"' {
		return "", d.SkipValue()
	}
	t, err := d.ReadToken()
	if err != nil {
		return "", err
	}
	return t.String(), nil
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

func readName(d *jsontext.Decoder) (string, error) {
	if d.PeekKind() != '"' {
		return "", d.SkipValue()
	}
	v, err := d.ReadValue()
	if err != nil {
		return "", err
	}
	if n, ok := attributeNames[string(v[1:len(v)-1])]; ok { // no allocation
		return n, nil
	}
	b, err := jsontext.AppendUnquote(nil, v)
	return string(b), err
}

func readTime(d *jsontext.Decoder) (time.Time, error) {
	if d.PeekKind() != '"' {
		return time.Time{}, d.SkipValue()
	}
	v, err := d.ReadValue()
	if err != nil {
		return time.Time{}, err
	}
	// Dates hold no escapes; a quoted one that does is not a date.
	t, _ := parseDateTime(string(v[1 : len(v)-1]))
	return t, nil
}

func readInt(d *jsontext.Decoder) (int64, bool, error) {
	if d.PeekKind() != '0' {
		return 0, false, d.SkipValue()
	}
	t, err := d.ReadToken()
	if err != nil {
		return 0, false, err
	}
	i, ok := intOf(t)
	return i, ok, nil
}

func intOf(t jsontext.Token) (int64, bool) {
	if i, err := t.Int(); err == nil {
		return i, true
	}
	// 5.0 is an integer written as a double.
	f, err := t.Float()
	if err == nil && f == float64(int64(f)) {
		return int64(f), true
	}
	return 0, false
}

func readBool(d *jsontext.Decoder) (bool, bool, error) {
	switch d.PeekKind() {
	case 't', 'f':
		t, err := d.ReadToken()
		if err != nil {
			return false, false, err
		}
		return t.Bool(), true, nil
	}
	return false, false, d.SkipValue()
}

func (p *Product) readContentDate(d *jsontext.Decoder) error {
	if d.PeekKind() != '{' {
		return d.SkipValue()
	}
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	for d.PeekKind() != '}' {
		name, err := d.ReadValue()
		if err != nil {
			return err
		}
		switch string(name) {
		case `"Start"`:
			p.ContentStart, err = readTime(d)
		case `"End"`:
			p.ContentEnd, err = readTime(d)
		default:
			err = d.SkipValue()
		}
		if err != nil {
			return err
		}
	}
	_, err := d.ReadToken()
	return err
}

func (p *Product) readAttributes(d *jsontext.Decoder) error {
	if d.PeekKind() != '[' {
		return d.SkipValue()
	}
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	if p.Attributes == nil {
		p.Attributes = make([]Attribute, 0, 24) // a Sentinel-2 product has 23
	}
	for d.PeekKind() != ']' {
		a, ok, err := readAttribute(d)
		if err != nil {
			return err
		}
		if ok {
			p.Attributes = append(p.Attributes, a)
		}
	}
	_, err := d.ReadToken()
	return err
}

// readAttribute reads one attribute object, whose Value may come before
// the ValueType that says how to read it.
func readAttribute(d *jsontext.Decoder) (Attribute, bool, error) {
	if d.PeekKind() != '{' {
		return Attribute{}, false, d.SkipValue()
	}
	if _, err := d.ReadToken(); err != nil {
		return Attribute{}, false, err
	}
	var (
		a                Attribute
		valueType, otype string
		kind             jsontext.Kind
		str              string
		f                float64
		i                int64
		fOK, iOK         bool
	)
	for d.PeekKind() != '}' {
		name, err := d.ReadValue()
		if err != nil {
			return a, false, err
		}
		switch string(name) {
		case `"Name"`:
			a.Name, err = readName(d)
		case `"ValueType"`:
			valueType, err = readString(d)
		case `"@odata.type"`:
			otype, err = readString(d)
		case `"Value"`:
			switch kind = d.PeekKind(); kind {
			case '"':
				str, err = readString(d)
			case '0':
				// The token is only valid until the next read: take both
				// readings now.
				var t jsontext.Token
				if t, err = d.ReadToken(); err == nil {
					var ferr error
					f, ferr = t.Float()
					fOK = ferr == nil
					i, iOK = intOf(t)
				}
			default:
				err = d.SkipValue()
			}
		default:
			err = d.SkipValue()
		}
		if err != nil {
			return a, false, err
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return a, false, err
	}
	a.Type = AttrTypeOf(valueType)
	if a.Type == 0 && valueType == "" {
		// "#OData.CSC.DoubleAttribute" says the same.
		a.Type = AttrTypeOf(strings.TrimSuffix(strings.TrimPrefix(otype, "#OData.CSC."), "Attribute"))
	}
	ok := false
	switch {
	case a.Name == "":
	case a.Type == StringAttr && kind == '"':
		a.Str, ok = str, true
	case a.Type == DateTimeOffsetAttr && kind == '"':
		a.Time, ok = parseDateTime(str)
	case a.Type == DoubleAttr && kind == '0':
		a.Float, ok = f, fOK
	case a.Type == IntegerAttr && kind == '0':
		a.Int, ok = i, iOK
	}
	return a, ok, nil
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
	switch n := p.Name; {
	case strings.HasPrefix(n, "S1"):
		return "SENTINEL-1"
	case strings.HasPrefix(n, "S2"):
		return "SENTINEL-2"
	case strings.HasPrefix(n, "S3"):
		return "SENTINEL-3"
	case strings.HasPrefix(n, "S5P"):
		return "SENTINEL-5P"
	}
	return ""
}
