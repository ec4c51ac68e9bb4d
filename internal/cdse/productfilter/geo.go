package productfilter

import (
	"math"

	"github.com/peterstace/simplefeatures/geom"
)

// part is one piece of a geometry as it is tested, with its envelope
// computed once: most footprints are far from most areas, and comparing
// envelopes first skips the exact test for them. n is its number of
// vertices, what an exact test with it costs (intersects' budget).
type part struct {
	g   geom.Geometry
	env geom.Envelope
	n   int
}

func newPart(g geom.Geometry) part { return part{g: g, env: g.Envelope(), n: vertices(g)} }

// intersects reports whether any piece of a touches any piece of b, or
// over when the exact tests that answer it would go through more than
// budget vertices. An exact test costs about 50 ns per vertex of its two
// pieces whether or not they meet (17 000 footprint pieces each against a
// 10 000-vertex area took 9 s), so the budget bounds the time one
// evaluation can take. Pieces whose envelopes do not meet cost nothing,
// however many: a huge footprint far from the area is still answered.
// The pieces are tested in their order, so the answer is the same every
// time.
func intersects(a, b []part, budget int) (hit, over bool) {
	for _, x := range a {
		for _, y := range b {
			if !x.env.Intersects(y.env) {
				continue
			}
			if budget -= x.n + y.n; budget < 0 {
				return false, true
			}
			if geom.Intersects(x.g, y.g) {
				return true, false
			}
		}
	}
	return false, false
}

// normalize returns the pieces to test for g, a lon/lat geometry, so that
// planar intersection is right across the antimeridian. The catalogue
// writes such a polygon with raw longitudes (179.5 … -179.5), which taken
// as planar coordinates is the wide polygon that goes the other way round
// the Earth. A ring in which consecutive longitudes jump by more than 180°
// crosses the antimeridian: its longitudes are unwrapped (made continuous,
// so it lies beyond ±180), and a copy shifted by 360° is added on the other
// side. Both geometries of a test being normalised this way, two shapes
// that meet anywhere meet in [-180, 180] in one pair of pieces, and a copy
// never adds a meeting that is not there on the sphere. Polygons that do
// not cross are a piece each.
func normalize(g geom.Geometry) []part {
	if g.IsEmpty() {
		return nil
	}
	switch {
	case g.IsPolygon():
		return polygonParts([]geom.Polygon{g.MustAsPolygon()})
	case g.IsMultiPolygon():
		return polygonParts(g.MustAsMultiPolygon().Dump())
	case g.IsGeometryCollection():
		gc := g.MustAsGeometryCollection()
		var parts []part
		for i := range gc.NumGeometries() {
			parts = append(parts, normalize(gc.GeometryN(i))...)
		}
		return parts
	}
	return []part{newPart(g)}
}

// pointParts are the pieces of a MULTIPOINT area: a piece per point, so
// that each is tested alone, by its envelope first, and an exact test
// costs what intersects counts (a multipoint tested whole against a
// polygon costs its points times the polygon's vertices). An empty point
// is no piece. A footprint (normalize) stays one piece, as the caps count
// it.
func pointParts(mp geom.MultiPoint) []part {
	parts := make([]part, 0, mp.NumPoints())
	for i := range mp.NumPoints() {
		if pt := mp.PointN(i); !pt.IsEmpty() {
			parts = append(parts, newPart(pt.AsGeometry()))
		}
	}
	return parts
}

func polygonParts(polys []geom.Polygon) []part {
	var parts []part
	plain := polys[:0:0]
	for _, p := range polys {
		if p.IsEmpty() {
			continue
		}
		u, moved := unwrapPolygon(p)
		if !moved {
			plain = append(plain, p)
			continue
		}
		parts = append(parts, newPart(u.AsGeometry()))
		env := u.Envelope()
		lo, hi, _ := env.MinMaxXYs()
		if hi.X > 180 {
			parts = append(parts, newPart(shift(u, -360)))
		}
		if lo.X < -180 {
			parts = append(parts, newPart(shift(u, 360)))
		}
	}
	// Each polygon is a part of its own, with its own envelope: an area of
	// several regions (Iberia and the Alps) then rejects a footprint near
	// one of them by envelopes alone, where the multipolygon's one envelope
	// spanning both sent every footprint between them to the full test
	// (7 % of the receiver's CPU with 20 interests, bench/RESULTS.md).
	for _, p := range plain {
		parts = append(parts, newPart(p.AsGeometry()))
	}
	return parts
}

func shift(p geom.Polygon, dx float64) geom.Geometry {
	return p.TransformXY(func(xy geom.XY) geom.XY { return geom.XY{X: xy.X + dx, Y: xy.Y} }).AsGeometry()
}

// unwrapPolygon returns p with continuous longitudes, and whether that
// differs from p: a ring crossed the antimeridian, or p already lies
// partly beyond ±180 (written unwrapped by its author).
func unwrapPolygon(p geom.Polygon) (geom.Polygon, bool) {
	rings := p.DumpRings()
	ext, crossed := unwrapRing(rings[0].Coordinates())
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := 0; i < len(ext); i += 2 {
		lo, hi = min(lo, ext[i]), max(hi, ext[i])
	}
	if !crossed && lo >= -180 && hi <= 180 {
		return p, false
	}
	out := make([]geom.LineString, len(rings))
	out[0] = geom.NewLineString(geom.NewSequence(ext, geom.DimXY))
	centre := (lo + hi) / 2
	for i, r := range rings[1:] {
		hole, _ := unwrapRing(r.Coordinates())
		// A hole lies inside its exterior: move it by whole turns to
		// where the unwrapped exterior is.
		hlo, hhi := math.Inf(1), math.Inf(-1)
		for j := 0; j < len(hole); j += 2 {
			hlo, hhi = min(hlo, hole[j]), max(hhi, hole[j])
		}
		if turns := math.Round((centre - (hlo+hhi)/2) / 360); turns != 0 {
			for j := 0; j < len(hole); j += 2 {
				hole[j] += turns * 360
			}
		}
		out[i+1] = geom.NewLineString(geom.NewSequence(hole, geom.DimXY))
	}
	return geom.NewPolygon(out), true
}

// unwrapRing returns the ring's coordinates (x, y interleaved) with each
// longitude moved by whole turns to within 180° of the one before, and
// whether any was moved. A ring that goes once round a pole (the
// footprint of a polar pass) no longer closes once unwrapped; it is closed
// along that pole, which is what it encloses.
func unwrapRing(seq geom.Sequence) ([]float64, bool) {
	n := seq.Length()
	out := make([]float64, 0, 2*n+6)
	off, prev, crossed := 0.0, 0.0, false
	sumY := 0.0
	for i := range n {
		xy := seq.GetXY(i)
		x := xy.X + off
		// The whole turns to take off, computed rather than counted: a
		// loop of 360° steps never ended on a longitude of 1e300, where
		// x-360 == x (issue 29). Ceil keeps the loop's answer at exactly
		// ±180 (a step of 180° is not a crossing; one of 540° is one turn).
		if d := x - prev; i > 0 && d > 180 {
			t := 360 * math.Ceil((d-180)/360)
			off, x, crossed = off-t, x-t, true
		} else if i > 0 && d < -180 {
			t := 360 * math.Ceil((-180-d)/360)
			off, x, crossed = off+t, x+t, true
		}
		out = append(out, x, xy.Y)
		sumY += xy.Y
		prev = x
	}
	if crossed && n > 1 && math.Abs(out[2*n-2]-out[0]) > 180 {
		pole := 90.0
		if sumY < 0 {
			pole = -90
		}
		out = append(out, out[2*n-2], pole, out[0], pole, out[0], out[1])
	}
	return out, crossed
}
