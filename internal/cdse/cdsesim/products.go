package cdsesim

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/peterstace/simplefeatures/geom"

	"github.com/cdse-jetstream/receiver/internal/cdse/productfilter"
)

// Product is a catalogue product of the simulator.
type Product struct {
	ID, Name, Collection                                                    string
	ContentLength                                                           int64
	OriginDate, PublicationDate, ModificationDate, ContentStart, ContentEnd time.Time
	Footprint                                                               [][2]float64
	Attributes                                                              []Attribute
	S3Path                                                                  string
	// ChecksumForm: both checksums (the default), [] or [{}].
	ChecksumForm ChecksumForm
	// Offline: "Online": false; its $value is refused (it would have to be
	// ordered).
	Offline bool
	// Set once deleted.
	DeletionDate  time.Time
	DeletionCause string

	sums *sums // the checksums, once computed (shared by clones)
}

// Attribute is one product attribute.
type Attribute struct {
	Name      string
	Value     any // string, float64 or int64
	ValueType string
}

// Mission of a generated product.
type Mission string

// The missions the generator knows.
const (
	Sentinel1  Mission = "S1"
	Sentinel2  Mission = "S2"
	Sentinel3  Mission = "S3"
	Sentinel5P Mission = "S5P"
)

// Missions lists them in a stable order.
var Missions = []Mission{Sentinel1, Sentinel2, Sentinel3, Sentinel5P}

// NewProduct generates a realistic product of mission m sensed shortly
// before now, published at now.
func NewProduct(m Mission, now time.Time, r *rand.Rand) *Product {
	if r == nil {
		r = rand.New(rand.NewPCG(uint64(now.UnixNano()), 7))
	}
	start := now.Add(-time.Duration(60+r.IntN(180)) * time.Minute).UTC().Truncate(time.Millisecond)
	end := start.Add(time.Duration(5+r.IntN(180)) * time.Second)
	p := &Product{
		ID:               uuid.NewString(),
		OriginDate:       start.Add(40 * time.Minute),
		PublicationDate:  now.UTC().Truncate(time.Microsecond), // the catalogue keeps microseconds
		ModificationDate: now.UTC().Truncate(time.Microsecond),
		ContentStart:     start,
		ContentEnd:       end,
		// Small by default: the simulator serves these bytes and hashes
		// them for the listing (Options.ContentLength for real sizes).
		ContentLength: int64(defaultMinSize + r.IntN(defaultMaxSize-defaultMinSize)),
		sums:          &sums{},
	}
	lon, lat := -180+r.Float64()*350, -80+r.Float64()*150
	p.Footprint = [][2]float64{{lon, lat}, {lon + 1, lat}, {lon + 1, lat + 1}, {lon, lat + 1}, {lon, lat}}
	ts := func(t time.Time) string { return t.Format("20060102T150405") }
	unit := string("ABC"[r.IntN(2)])
	orbit := 10000 + r.IntN(50000)
	str := func(n, v string) Attribute { return Attribute{n, v, "String"} }
	num := func(n string, v float64) Attribute { return Attribute{n, v, "Double"} }
	integer := func(n string, v int64) Attribute { return Attribute{n, v, "Integer"} }
	date := func(n string, v time.Time) Attribute {
		return Attribute{n, v.Format("2006-01-02T15:04:05.000Z"), "DateTimeOffset"}
	}
	common := []Attribute{str("origin", "ESA"), integer("orbitNumber", int64(orbit)), date("beginningDateTime", start), date("endingDateTime", end), str("platformSerialIdentifier", unit)}
	switch m {
	case Sentinel1:
		p.Collection = "SENTINEL-1"
		p.Name = fmt.Sprintf("S1%s_IW_GRDH_1SDV_%s_%s_%06d_%06X_%04X_COG.SAFE", unit, ts(start), ts(end), orbit, r.IntN(1<<24), r.IntN(1<<16))
		p.Attributes = append(common, str("platformShortName", "SENTINEL-1"), str("instrumentShortName", "SAR"), str("productType", "IW_GRDH_1S-COG"),
			str("operationalMode", "IW"), str("polarisationChannels", "VV&VH"), str("orbitDirection", []string{"ASCENDING", "DESCENDING"}[r.IntN(2)]), str("timeliness", "NRT-3h"))
		p.S3Path = "/eodata/Sentinel-1/SAR/IW_GRDH_1S-COG/" + start.Format("2006/01/02") + "/" + p.Name
	case Sentinel2:
		level := []string{"L1C", "L2A"}[r.IntN(2)]
		tile := fmt.Sprintf("%02d%c%c%c", 1+r.IntN(60), 'C'+rune(r.IntN(20)), 'A'+rune(r.IntN(26)), 'A'+rune(r.IntN(26)))
		p.Collection = "SENTINEL-2"
		p.Name = fmt.Sprintf("S2%s_MSI%s_%s_N0511_R%03d_T%s_%s.SAFE", unit, level, ts(start), 1+r.IntN(143), tile, ts(now))
		p.Attributes = append(common, str("platformShortName", "SENTINEL-2"), str("instrumentShortName", "MSI"), str("productType", "S2MSI"+strings.TrimPrefix(level, "L")),
			str("tileId", tile), num("cloudCover", float64(r.IntN(10000))/100), str("processorVersion", "05.11"))
		p.S3Path = "/eodata/Sentinel-2/MSI/" + level + "/" + start.Format("2006/01/02") + "/" + p.Name
	case Sentinel3:
		p.Collection = "SENTINEL-3"
		// Cycle, relative orbit (1-385) and along-track coordinate vary as
		// they do between real frames: they identify the acquisition
		// (versions.identifyS3), so constant ones made every generated
		// frame of a unit one acquisition's versions.
		p.Name = fmt.Sprintf("S3%s_OL_1_EFR____%s_%s_%s_0179_%03d_%03d_%04d_PS1_O_NR_004.SEN3", unit, ts(start), ts(end), ts(now), 1+r.IntN(150), 1+r.IntN(385), r.IntN(6000))
		p.Attributes = append(common, str("platformShortName", "SENTINEL-3"), str("instrumentShortName", "OLCI"), str("productType", "OL_1_EFR___"), str("timeliness", "NR"))
		p.S3Path = "/eodata/Sentinel-3/OLCI/OL_1_EFR/" + start.Format("2006/01/02") + "/" + p.Name
	default:
		p.Collection = "SENTINEL-5P"
		p.Name = fmt.Sprintf("S5P_NRTI_L2__NO2____%s_%s_%05d_03_020600_%s.nc", ts(start), ts(end), orbit, ts(now))
		p.Attributes = append(common, str("platformShortName", "SENTINEL-5P"), str("instrumentShortName", "TROPOMI"), str("productType", "L2__NO2___"), str("processingMode", "NRTI"))
		p.S3Path = "/eodata/Sentinel-5P/TROPOMI/L2__NO2___/" + start.Format("2006/01/02") + "/" + p.Name
	}
	return p
}

// The range of a generated product's ContentLength unless
// Options.ContentLength says otherwise.
const (
	defaultMinSize = 64 << 10
	defaultMaxSize = 256 << 10
)

const odataTime = "2006-01-02T15:04:05.000000Z"

func fmtTime(t time.Time) string { return t.UTC().Format(odataTime) }

// Entity renders the product as the catalogue's JSON entity (a map, encoded
// by encoding/json with sorted keys, which the receiver does not mind).
func (p *Product) Entity() map[string]any {
	coords := make([][]float64, len(p.Footprint))
	var wkt []string
	for i, c := range p.Footprint {
		coords[i] = []float64{c[0], c[1]}
		wkt = append(wkt, fmt.Sprintf("%.6f %.6f", c[0], c[1]))
	}
	attrs := make([]map[string]any, len(p.Attributes))
	for i, a := range p.Attributes {
		attrs[i] = map[string]any{"@odata.type": "#OData.CSC." + a.ValueType + "Attribute", "Name": a.Name, "Value": a.Value, "ValueType": a.ValueType}
	}
	checksum := p.checksumEntity()
	e := map[string]any{
		"@odata.mediaContentType": "application/octet-stream",
		"Id":                      p.ID,
		"Name":                    p.Name,
		"ContentType":             "application/octet-stream",
		"ContentLength":           p.ContentLength,
		"OriginDate":              fmtTime(p.OriginDate),
		"Checksum":                checksum,
		"ContentDate":             map[string]any{"Start": fmtTime(p.ContentStart), "End": fmtTime(p.ContentEnd)},
		"Footprint":               "geography'SRID=4326;POLYGON ((" + strings.Join(wkt, ", ") + "))'",
		"GeoFootprint":            map[string]any{"type": "Polygon", "coordinates": [][][]float64{coords}},
		"Attributes":              attrs,
	}
	if !p.DeletionDate.IsZero() {
		e["@odata.context"] = "$metadata#DeletedProducts(Attributes())/$entity"
		e["DeletionDate"] = fmtTime(p.DeletionDate)
		e["DeletionCause"] = p.DeletionCause
		return e
	}
	e["@odata.context"] = "$metadata#Products(Attributes())(Assets())(Locations())/$entity"
	e["PublicationDate"] = fmtTime(p.PublicationDate)
	e["ModificationDate"] = fmtTime(p.ModificationDate)
	e["EvictionDate"] = ""
	e["Online"] = !p.Offline
	e["S3Path"] = p.S3Path
	e["Assets"] = []any{}
	e["Locations"] = []map[string]any{{"FormatType": "Extracted", "DownloadLink": "https://catalogue.dataspace.copernicus.eu/odata/v1/Products(" + p.ID + ")/$value", "ContentLength": p.ContentLength, "Checksum": checksum, "S3Path": p.S3Path}}
	return e
}

// matches reports whether the product satisfies f (nil: no filter). The
// simulator uses the receiver's own evaluator (productfilter), so what its
// subscriptions and listings select is what the receiver's interests would.
func (p *Product) matches(f *productfilter.Filter) bool {
	if f == nil || strings.TrimSpace(f.String()) == "" {
		return true // no need to build a view to match everything
	}
	v := p.filterView(f.UsesGeometry())
	return f.Match(&v)
}

// filterView is the product as productfilter sees it, with the properties
// its Entity has: a deleted product (a DeletedProducts entity) has no
// Online, PublicationDate or ModificationDate, a live one no deletion. The
// footprint is built only for a filter that tests geometry.
func (p *Product) filterView(geometry bool) productfilter.Product {
	v := productfilter.Product{
		ID: p.ID, Name: p.Name, Collection: p.Collection,
		ContentStart: p.ContentStart, ContentEnd: p.ContentEnd,
		PublicationDate: p.PublicationDate, ModificationDate: p.ModificationDate, OriginDate: p.OriginDate,
		DeletionDate: p.DeletionDate, DeletionCause: p.DeletionCause,
		ContentLength: p.ContentLength, HasContentLength: true,
		Attributes: make([]productfilter.Attribute, 0, len(p.Attributes)),
	}
	if p.DeletionDate.IsZero() {
		v.Online, v.HasOnline = !p.Offline, true
		v.DeletionCause = ""
	} else {
		v.PublicationDate, v.ModificationDate = time.Time{}, time.Time{}
	}
	for _, a := range p.Attributes {
		if fa, ok := filterAttribute(a); ok {
			v.Attributes = append(v.Attributes, fa)
		}
	}
	if geometry && len(p.Footprint) >= 4 {
		coords := make([]float64, 0, 2*len(p.Footprint))
		for _, c := range p.Footprint {
			coords = append(coords, c[0], c[1])
		}
		ring := geom.NewLineString(geom.NewSequence(coords, geom.DimXY))
		v.SetFootprint(geom.NewPolygon([]geom.LineString{ring}).AsGeometry())
	}
	return v
}

// filterAttribute types an attribute by its ValueType, or by its Go value
// for one built without (a test's Attribute{Name, 12.5, ""}).
func filterAttribute(a Attribute) (productfilter.Attribute, bool) {
	fa := productfilter.Attribute{Name: a.Name, Type: productfilter.AttrTypeOf(a.ValueType)}
	if a.ValueType == "" {
		switch a.Value.(type) {
		case string:
			fa.Type = productfilter.StringAttr
		case float64:
			fa.Type = productfilter.DoubleAttr
		case int, int64:
			fa.Type = productfilter.IntegerAttr
		case time.Time:
			fa.Type = productfilter.DateTimeOffsetAttr
		}
	}
	switch x := a.Value.(type) {
	case string:
		switch fa.Type {
		case productfilter.StringAttr:
			fa.Str = x
			return fa, true
		case productfilter.DateTimeOffsetAttr:
			t, err := time.Parse(time.RFC3339Nano, x)
			fa.Time = t
			return fa, err == nil
		}
	case float64:
		fa.Float = x
		return fa, fa.Type == productfilter.DoubleAttr
	case int:
		fa.Int = int64(x)
		return fa, fa.Type == productfilter.IntegerAttr
	case int64:
		fa.Int = x
		return fa, fa.Type == productfilter.IntegerAttr
	case time.Time:
		fa.Time = x
		return fa, fa.Type == productfilter.DateTimeOffsetAttr
	}
	return fa, false
}

// clone returns a copy safe to change (modify, delete).
func (p *Product) clone() *Product {
	c := *p
	c.Attributes = append([]Attribute(nil), p.Attributes...)
	c.Footprint = append([][2]float64(nil), p.Footprint...)
	return &c
}
