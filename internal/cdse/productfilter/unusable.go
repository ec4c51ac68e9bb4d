package productfilter

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/peterstace/simplefeatures/geom"
)

// Unevaluated says why an OData.CSC.Intersects term was not evaluated
// against a product's footprint: a short token, the same in the
// Cdse-Area-Unevaluated header, the metric's reason label and the log.
// Such a term is unknown, and a filter whose answer rests on it fails open
// (Filter.Evaluate): a product with a footprint the receiver cannot test
// still reaches the interests whose other terms it matches, marked, rather
// than silently none, or a request that never returns (issue 29).
type Unevaluated string

// The reasons, a closed set (a metric label).
const (
	// NonFinite: a coordinate is NaN or infinite, or a number too large
	// for a float64 (1e400).
	NonFinite Unevaluated = "non_finite"
	// LatitudeOutOfRange: a latitude beyond ±90.
	LatitudeOutOfRange Unevaluated = "latitude_out_of_range"
	// LongitudeOutOfRange: a longitude beyond ±540, further than any
	// footprint written across the antimeridian reaches (and than areas
	// may, parseArea).
	LongitudeOutOfRange Unevaluated = "longitude_out_of_range"
	// TooManyParts: more than MaxFootprintParts polygons.
	TooManyParts Unevaluated = "too_many_parts"
	// TooManyVertices: more than MaxFootprintVertices vertices.
	TooManyVertices Unevaluated = "too_many_vertices"
	// TooComplex: the exact tests of the footprint against one area would
	// go through more than MaxAreaWork vertices.
	TooComplex Unevaluated = "too_complex"
)

// UnevaluatedReasons are all the reasons, for a metric's labels.
var UnevaluatedReasons = []Unevaluated{NonFinite, LatitudeOutOfRange, LongitudeOutOfRange, TooManyParts, TooManyVertices, TooComplex}

// The caps on what one product's footprint may cost. Real footprints are
// far below them: a Sentinel footprint has a few dozen to a few hundred
// vertices in one to a handful of polygons (the largest of
// testdata/notifications, a Sentinel-5P orbit, has 161). The caps are
// there for a notification that is not what the catalogue means to send:
// the 17 000-polygon footprint of issue 29 held an interest for 9 s
// against a 10 000-vertex area, 82 s against 100 000.
const (
	// MaxFootprintParts is the most polygons (or other pieces) a
	// footprint may have to be tested.
	MaxFootprintParts = 1000
	// MaxFootprintVertices is the most vertices a footprint may have to
	// be tested. Reading a footprint costs time in proportion to its
	// text (tens of milliseconds for 100 000 vertices), which the body
	// limit bounds; testing it against areas costs more, and MaxAreaWork
	// bounds that too.
	MaxFootprintVertices = 100_000
	// MaxAreaWork is the most vertices the exact tests of one
	// Intersects term against one footprint may go through: 10 to 20 ms
	// at the 50 to 100 ns a vertex they take (TestAreaWorkIsBounded's 999
	// pieces stop there). A footprint of a few hundred vertices in a
	// handful of polygons against an area of 20 000 vertices (far more
	// than the few dozen a region needs, docs/interests.md) costs about
	// 100 000.
	MaxAreaWork = 200_000
)

// checkFootprint is why g cannot be tested against areas, "" when it can.
// The counts come first: they need no walk of the coordinates.
func checkFootprint(g geom.Geometry) Unevaluated {
	if pieces(g) > MaxFootprintParts {
		return TooManyParts
	}
	if vertices(g) > MaxFootprintVertices {
		return TooManyVertices
	}
	return checkCoordinates(g)
}

// pieces counts the parts normalize makes of g (before the antimeridian
// copies): its polygons, and each other geometry as one.
func pieces(g geom.Geometry) int {
	switch {
	case g.IsMultiPolygon():
		return g.MustAsMultiPolygon().NumPolygons()
	case g.IsGeometryCollection():
		gc := g.MustAsGeometryCollection()
		n := 0
		for i := range gc.NumGeometries() {
			n += pieces(gc.GeometryN(i))
		}
		return n
	}
	return 1
}

// vertices counts g's coordinates without copying them.
func vertices(g geom.Geometry) int {
	switch {
	case g.IsPoint():
		if g.IsEmpty() {
			return 0
		}
		return 1
	case g.IsLineString():
		return g.MustAsLineString().Coordinates().Length()
	case g.IsPolygon():
		return polygonVertices(g.MustAsPolygon())
	case g.IsMultiPoint():
		return g.MustAsMultiPoint().NumPoints()
	case g.IsMultiLineString():
		m := g.MustAsMultiLineString()
		n := 0
		for i := range m.NumLineStrings() {
			n += m.LineStringN(i).Coordinates().Length()
		}
		return n
	case g.IsMultiPolygon():
		m := g.MustAsMultiPolygon()
		n := 0
		for i := range m.NumPolygons() {
			n += polygonVertices(m.PolygonN(i))
		}
		return n
	case g.IsGeometryCollection():
		gc := g.MustAsGeometryCollection()
		n := 0
		for i := range gc.NumGeometries() {
			n += vertices(gc.GeometryN(i))
		}
		return n
	}
	return 0
}

func polygonVertices(p geom.Polygon) int {
	n := p.ExteriorRing().Coordinates().Length()
	for i := range p.NumInteriorRings() {
		n += p.InteriorRingN(i).Coordinates().Length()
	}
	return n
}

// checkCoordinates is the first reason a coordinate of g gives not to
// test it: non-finite, a latitude beyond ±90, a longitude beyond ±540.
func checkCoordinates(g geom.Geometry) Unevaluated {
	switch {
	case g.IsPoint():
		xy, ok := g.MustAsPoint().XY()
		if !ok {
			return ""
		}
		return checkXY(xy)
	case g.IsLineString():
		return checkSequence(g.MustAsLineString().Coordinates())
	case g.IsPolygon():
		return checkPolygon(g.MustAsPolygon())
	case g.IsMultiPoint():
		return checkSequence(g.MustAsMultiPoint().Coordinates())
	case g.IsMultiLineString():
		m := g.MustAsMultiLineString()
		for i := range m.NumLineStrings() {
			if why := checkSequence(m.LineStringN(i).Coordinates()); why != "" {
				return why
			}
		}
	case g.IsMultiPolygon():
		m := g.MustAsMultiPolygon()
		for i := range m.NumPolygons() {
			if why := checkPolygon(m.PolygonN(i)); why != "" {
				return why
			}
		}
	case g.IsGeometryCollection():
		gc := g.MustAsGeometryCollection()
		for i := range gc.NumGeometries() {
			if why := checkCoordinates(gc.GeometryN(i)); why != "" {
				return why
			}
		}
	}
	return ""
}

func checkPolygon(p geom.Polygon) Unevaluated {
	if why := checkSequence(p.ExteriorRing().Coordinates()); why != "" {
		return why
	}
	for i := range p.NumInteriorRings() {
		if why := checkSequence(p.InteriorRingN(i).Coordinates()); why != "" {
			return why
		}
	}
	return ""
}

func checkSequence(s geom.Sequence) Unevaluated {
	for i := range s.Length() {
		if why := checkXY(s.GetXY(i)); why != "" {
			return why
		}
	}
	return ""
}

func checkXY(xy geom.XY) Unevaluated {
	switch {
	case math.IsNaN(xy.X) || math.IsInf(xy.X, 0) || math.IsNaN(xy.Y) || math.IsInf(xy.Y, 0):
		return NonFinite
	case xy.Y < -90 || xy.Y > 90:
		return LatitudeOutOfRange
	case xy.X < -540 || xy.X > 540:
		return LongitudeOutOfRange
	}
	return ""
}

// nonFiniteNumber reports whether the text of a footprint that could not
// be read (WKT or GeoJSON) holds a number no float64 holds: NaN, Inf,
// Infinity (WKT has no such words; simplefeatures refuses them) or one
// that overflows (1e400). Such a footprint is not merely broken: it is
// one with a non-finite coordinate, and fails open as the others do. Only
// called when reading failed, so it costs nothing on the way of every
// product. GeoJSON's strings ("type": "Polygon") are skipped.
func nonFiniteNumber(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c == '"' { // a JSON string, to its closing quote
			i++
			for i < len(s) && s[i] != '"' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			i++
			continue
		}
		if !tokenByte(c) {
			i++
			continue
		}
		j := i
		for j < len(s) && tokenByte(s[j]) {
			j++
		}
		if nonFiniteToken(s[i:j]) {
			return true
		}
		i = j
	}
	return false
}

func tokenByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '+' || c == '-'
}

func nonFiniteToken(tok string) bool {
	word := strings.TrimLeft(tok, "+-")
	switch strings.ToLower(word) {
	case "nan", "inf", "infinity":
		return true
	}
	if word == "" || !(word[0] >= '0' && word[0] <= '9' || word[0] == '.') {
		return false
	}
	f, err := strconv.ParseFloat(tok, 64)
	return errors.Is(err, strconv.ErrRange) && math.IsInf(f, 0)
}
