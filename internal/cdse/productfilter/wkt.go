package productfilter

import (
	"strconv"
	"strings"

	"github.com/peterstace/simplefeatures/geom"
)

// readFootprintWKT reads the two shapes the catalogue's footprints take,
// POLYGON and MULTIPOLYGON with 2D coordinates, without simplefeatures'
// general WKT parser. That parser, a text/scanner lexer, took 30 of the
// 65 µs that 20 interests cost per product (a 48-vertex Sentinel-2
// footprint, BenchmarkRouterMatch); this one reads the same footprint in
// about 2.5 µs (BenchmarkFootprintWKT). Anything else, or anything it is
// not sure of (another type, Z or M, EMPTY, a malformed number), returns
// ok false, and the general parser decides; TestReadFootprintWKT checks
// that both read the same geometry.
func readFootprintWKT(s string) (g geom.Geometry, ok bool) {
	r := wktReader{s: s}
	r.space()
	switch {
	case r.word("MULTIPOLYGON"):
		r.space()
		if !r.byte('(') {
			return g, false
		}
		var polys []geom.Polygon
		for {
			p, ok := r.polygon()
			if !ok {
				return g, false
			}
			polys = append(polys, p)
			if r.space(); !r.byte(',') {
				break
			}
		}
		if r.space(); !r.byte(')') || !r.end() {
			return g, false
		}
		return geom.NewMultiPolygon(polys).AsGeometry(), true
	case r.word("POLYGON"):
		p, ok := r.polygon()
		if !ok || !r.end() {
			return g, false
		}
		return p.AsGeometry(), true
	}
	return g, false
}

type wktReader struct {
	s string
	i int
}

func (r *wktReader) space() {
	for r.i < len(r.s) && (r.s[r.i] == ' ' || r.s[r.i] == '\t' || r.s[r.i] == '\n' || r.s[r.i] == '\r') {
		r.i++
	}
}

func (r *wktReader) byte(c byte) bool {
	if r.i < len(r.s) && r.s[r.i] == c {
		r.i++
		return true
	}
	return false
}

// word reads w, which must not run on into another letter (POLYGONZ).
func (r *wktReader) word(w string) bool {
	if len(r.s)-r.i < len(w) || r.s[r.i:r.i+len(w)] != w {
		return false
	}
	if j := r.i + len(w); j < len(r.s) && (r.s[j] >= 'A' && r.s[j] <= 'Z' || r.s[j] >= 'a' && r.s[j] <= 'z') {
		return false
	}
	r.i += len(w)
	return true
}

func (r *wktReader) end() bool {
	r.space()
	return r.i == len(r.s)
}

// polygon reads ( ring , ring ... ).
func (r *wktReader) polygon() (geom.Polygon, bool) {
	r.space()
	if !r.byte('(') {
		return geom.Polygon{}, false
	}
	var rings []geom.LineString
	for {
		ring, ok := r.ring()
		if !ok {
			return geom.Polygon{}, false
		}
		rings = append(rings, ring)
		if r.space(); !r.byte(',') {
			break
		}
	}
	if r.space(); !r.byte(')') {
		return geom.Polygon{}, false
	}
	return geom.NewPolygon(rings), true
}

// ring reads ( x y , x y ... ).
func (r *wktReader) ring() (geom.LineString, bool) {
	r.space()
	if !r.byte('(') {
		return geom.LineString{}, false
	}
	xy := make([]float64, 0, 64)
	for {
		x, ok := r.number()
		if !ok {
			return geom.LineString{}, false
		}
		y, ok := r.number()
		if !ok {
			return geom.LineString{}, false
		}
		xy = append(xy, x, y)
		if r.space(); !r.byte(',') {
			break
		}
	}
	if r.space(); !r.byte(')') {
		return geom.LineString{}, false
	}
	return geom.NewLineString(geom.NewSequence(xy, geom.DimXY)), true
}

// number reads a decimal number as WKT writes it (a minus, digits, a
// point, an exponent); NaN, Inf, hex and a leading plus, which the general
// parser refuses, are left to it.
func (r *wktReader) number() (float64, bool) {
	r.space()
	if f, n, ok := shortDecimal(r.s[r.i:]); ok {
		r.i += n
		return f, true
	}
	if r.i < len(r.s) && r.s[r.i] == '+' {
		return 0, false
	}
	j := r.i
	for j < len(r.s) {
		c := r.s[j]
		if c >= '0' && c <= '9' || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E' {
			j++
			continue
		}
		break
	}
	if j == r.i {
		return 0, false
	}
	lit := r.s[r.i:j]
	if d := strings.TrimPrefix(lit, "-"); len(d) > 1 && d[0] == '0' && d[1] >= '0' && d[1] <= '9' {
		return 0, false // 08: an octal literal to the general parser's lexer
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return 0, false
	}
	r.i = j
	return f, true
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// shortDecimal reads the number at the start of s when it is -ddd or
// -ddd.ddd with at most 15 or so significant digits (the mantissa at most
// 2^53) and at most 22 decimals, the way footprints write coordinates; n is
// its length. Such a number is the mantissa divided by a power of ten, both
// exact in a float64, so one division rounds it correctly (Clinger's fast
// path): the same float64 as strconv.ParseFloat, which is also the
// fallback for everything else (FuzzShortDecimal). strconv's general
// reader (bases, underscores, Inf) took a third of a footprint's reading:
// 20 interests with areas read every product's footprint
// (bench/RESULTS.md, "named interests").
func shortDecimal(s string) (f float64, n int, ok bool) {
	i := 0
	neg := i < len(s) && s[i] == '-'
	if neg {
		i++
	}
	start := i
	var m uint64
	for i < len(s) && s[i]-'0' <= 9 {
		m = m*10 + uint64(s[i]-'0')
		i++
	}
	intDigits := i - start
	if intDigits == 0 || s[start] == '0' && intDigits > 1 { // 08 is for the slow path to refuse
		return 0, 0, false
	}
	frac := 0
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for i < len(s) && s[i]-'0' <= 9 {
			m = m*10 + uint64(s[i]-'0')
			i++
		}
		if frac = i - fs; frac == 0 {
			return 0, 0, false
		}
	}
	if i < len(s) {
		switch s[i] {
		case 'e', 'E', '+', '-', '.': // an exponent, or not a number: the slow path decides
			return 0, 0, false
		}
	}
	// 19 digits cannot overflow m; fewer than 2^53 is exact.
	if intDigits+frac > 19 || m > 1<<53 || frac >= len(pow10) {
		return 0, 0, false
	}
	f = float64(m) / pow10[frac]
	if neg {
		f = -f
	}
	return f, i, true
}
