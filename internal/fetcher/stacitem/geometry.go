package stacitem

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/peterstace/simplefeatures/geom"
)

// pt is a lon/lat position.
type pt struct{ x, y float64 }

// ring is a closed linear ring (its last position is its first).
type ring []pt

// polygon is an exterior ring and its holes.
type polygon []ring

// geometry is an item's geometry and bbox: a Polygon or MultiPolygon as
// RFC 7946 wants them, longitudes within [-180, 180].
type geometry struct {
	polygons []polygon
	multi    bool
	bbox     [4]float64 // west, south, east, north
}

// MarshalJSON writes the GeoJSON geometry.
func (g *geometry) MarshalJSON() ([]byte, error) {
	coords := func(p polygon) [][][2]float64 {
		out := make([][][2]float64, len(p))
		for i, r := range p {
			out[i] = make([][2]float64, len(r))
			for j, q := range r {
				out[i][j] = [2]float64{q.x, q.y}
			}
		}
		return out
	}
	if !g.multi {
		return json.Marshal(map[string]any{"type": "Polygon", "coordinates": coords(g.polygons[0])})
	}
	all := make([][][][2]float64, len(g.polygons))
	for i, p := range g.polygons {
		all[i] = coords(p)
	}
	return json.Marshal(map[string]any{"type": "MultiPolygon", "coordinates": all})
}

// errFootprint marks a footprint that cannot become an item's geometry.
var errFootprint = errors.New("stacitem: unusable footprint")

// footprintOf reads the product's footprint: the GeoFootprint (GeoJSON),
// which event.Notification keeps, else the OData literal of Footprint
// (geography'SRID=4326;POLYGON ((...))') in the notification itself. nil
// when the product has none: an item without geometry is valid STAC.
func footprintOf(geoJSON json.RawMessage, data []byte) (*geometry, error) {
	var g geom.Geometry
	var err error
	switch {
	case len(geoJSON) > 0 && string(geoJSON) != "null":
		g, err = geom.UnmarshalGeoJSON(geoJSON, geom.NoValidate{})
	default:
		wkt, werr := footprintWKT(data)
		if werr != nil || wkt == "" {
			return nil, werr
		}
		g, err = geom.UnmarshalWKT(wkt, geom.NoValidate{})
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errFootprint, err)
	}
	var polys []polygon
	switch {
	case g.IsEmpty():
		return nil, nil
	case g.IsPolygon():
		polys = []polygon{polygonOf(g.MustAsPolygon())}
	case g.IsMultiPolygon():
		for _, p := range g.MustAsMultiPolygon().Dump() {
			if !p.IsEmpty() {
				polys = append(polys, polygonOf(p))
			}
		}
	default:
		// Every catalogue footprint is an area; a point or a line would
		// need a geometry of its own kind and a bbox of zero width.
		return nil, fmt.Errorf("%w: a %s, not a Polygon or MultiPolygon", errFootprint, g.Type())
	}
	for _, p := range polys {
		for _, r := range p {
			if len(r) < 4 || r[0] != r[len(r)-1] {
				return nil, fmt.Errorf("%w: a ring of %d positions that is not closed, or not a ring", errFootprint, len(r))
			}
			for _, q := range r {
				if math.IsNaN(q.x) || math.IsInf(q.x, 0) || math.Abs(q.x) > 540 || !(q.y >= -90 && q.y <= 90) {
					return nil, fmt.Errorf("%w: position (%v, %v) is not a longitude and latitude", errFootprint, q.x, q.y)
				}
			}
		}
	}
	return wrapped(polys, g.IsMultiPolygon()), nil
}

// footprintWKT is the WKT of the notification's Footprint member, without
// the OData literal around it; "" when there is none.
func footprintWKT(data []byte) (string, error) {
	var w struct {
		Value *struct{ Footprint string } `json:"value"`
	}
	if len(data) == 0 || json.Unmarshal(data, &w) != nil || w.Value == nil {
		return "", nil
	}
	s := strings.TrimSpace(w.Value.Footprint)
	if rest, ok := strings.CutPrefix(s, "geography'"); ok {
		s = strings.TrimSuffix(rest, "'")
	}
	if len(s) > 5 && strings.EqualFold(s[:5], "SRID=") {
		srid, rest, _ := strings.Cut(s[5:], ";")
		if srid != "4326" {
			// Taken as lon/lat, another system's coordinates would put
			// the item somewhere else on Earth.
			return "", fmt.Errorf("%w: SRID %s, not 4326 (lon/lat)", errFootprint, srid)
		}
		s = rest
	}
	return strings.TrimSpace(s), nil
}

func polygonOf(p geom.Polygon) polygon {
	var out polygon
	for _, r := range p.DumpRings() {
		seq := r.Coordinates()
		rr := make(ring, seq.Length())
		for i := range rr {
			xy := seq.GetXY(i)
			rr[i] = pt{xy.X, xy.Y}
		}
		out = append(out, rr)
	}
	return out
}

// wrapped is the footprint as RFC 7946 wants it (section 3.1.9): a polygon
// that crosses the antimeridian is cut there into one piece on each side,
// so that a reader taking the coordinates as planar gets the small area
// the footprint is, not the band around the rest of the Earth. The
// catalogue writes such a footprint with raw longitudes (179.5 ...
// -179.5): a jump of more than 180° between consecutive positions is a
// crossing. A footprint that already lies within [-180, 180] without a
// crossing is kept as it is, a Polygon staying a Polygon.
func wrapped(polys []polygon, multi bool) *geometry {
	g := &geometry{multi: multi}
	for _, p := range polys {
		pieces, cut := split(p)
		g.polygons = append(g.polygons, pieces...)
		g.multi = g.multi || cut
	}
	g.bbox = bboxOf(g.polygons)
	return g
}

// split returns p cut at the antimeridian, and whether it was.
func split(p polygon) ([]polygon, bool) {
	ext, crossed := unwrap(p[0])
	lo, hi := xRange(ext)
	if !crossed && lo >= -180 && hi <= 180 {
		return []polygon{p}, false
	}
	// Whole turns that bring the westernmost point into [-180, 180).
	turn := -360 * math.Floor((lo+180)/360)
	shiftRing(ext, turn)
	lo, hi = lo+turn, hi+turn
	holes := make([]ring, 0, len(p)-1)
	for _, h := range p[1:] {
		u, _ := unwrap(h)
		// A hole lies inside its exterior: move it by whole turns to
		// where the unwrapped exterior is.
		hlo, hhi := xRange(u)
		shiftRing(u, 360*math.Round(((lo+hi)-(hlo+hhi))/2/360))
		holes = append(holes, u)
	}
	// One window of 360° after another, each piece moved back into
	// [-180, 180]: two windows for a footprint that crosses once, more
	// only for one longer than a turn (a ring round a pole is closed
	// along the pole by unwrap, and spans exactly one).
	var out []polygon
	for west := -180.0; west < hi; west += 360 {
		piece := clipWindow(ext, west)
		if piece == nil {
			continue
		}
		pp := polygon{piece}
		for _, h := range holes {
			if c := clipWindow(h, west); c != nil {
				pp = append(pp, c)
			}
		}
		out = append(out, pp)
	}
	return out, true
}

// unwrap returns r with each longitude moved by whole turns to within 180°
// of the one before, and whether any was moved. A ring that goes once
// round a pole no longer closes once unwrapped; it is closed along that
// pole, which is what it encloses.
func unwrap(r ring) (ring, bool) {
	out := make(ring, len(r), len(r)+3)
	off, crossed, sumY := 0.0, false, 0.0
	for i, q := range r {
		x := q.x + off
		if i > 0 {
			// Computed, not counted, so that no longitude loops; a step
			// of exactly 180° is not a crossing.
			if d := x - out[i-1].x; d > 180 {
				t := 360 * math.Ceil((d-180)/360)
				off, x, crossed = off-t, x-t, true
			} else if d < -180 {
				t := 360 * math.Ceil((-180-d)/360)
				off, x, crossed = off+t, x+t, true
			}
		}
		out[i] = pt{x, q.y}
		sumY += q.y
	}
	if n := len(out); crossed && n > 1 && math.Abs(out[n-1].x-out[0].x) > 180 {
		pole := 90.0
		if sumY < 0 {
			pole = -90
		}
		out = append(out, pt{out[n-1].x, pole}, pt{out[0].x, pole}, out[0])
	}
	return out, crossed
}

func xRange(r ring) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, q := range r {
		lo, hi = min(lo, q.x), max(hi, q.x)
	}
	return lo, hi
}

func shiftRing(r ring, dx float64) {
	for i := range r {
		r[i].x += dx
	}
}

// clipWindow is the part of r within [west, west+360], moved into
// [-180, 180]; nil when that part has no area. The cut positions lie at
// exactly ±180: the windows' edges are whole turns from ±180, which
// float64 holds exactly.
func clipWindow(r ring, west float64) ring {
	c := clipX(clipX(r[:len(r)-1], west, false), west+360, true)
	shift := -180 - west
	out := make(ring, 0, len(c)+1)
	for _, q := range c {
		q.x += shift
		if len(out) == 0 || out[len(out)-1] != q {
			out = append(out, q)
		}
	}
	if len(out) > 1 && out[0] == out[len(out)-1] {
		out = out[:len(out)-1]
	}
	if len(out) < 3 || area(out) == 0 {
		return nil
	}
	return append(out, out[0])
}

// clipX is the open ring r clipped to x <= at (left) or x >= at
// (Sutherland–Hodgman against one vertical line); a position on the line
// belongs to both sides.
func clipX(r []pt, at float64, left bool) []pt {
	in := func(q pt) bool {
		if left {
			return q.x <= at
		}
		return q.x >= at
	}
	var out []pt
	for i, cur := range r {
		prev := r[(i+len(r)-1)%len(r)]
		if in(cur) != in(prev) {
			// The positions are on either side, so cur.x != prev.x.
			f := (at - prev.x) / (cur.x - prev.x)
			out = append(out, pt{at, prev.y + f*(cur.y-prev.y)})
		}
		if in(cur) {
			out = append(out, cur)
		}
	}
	return out
}

// area is the shoelace sum of the open ring r (twice its signed area).
func area(r ring) float64 {
	s := 0.0
	for i, q := range r {
		n := r[(i+1)%len(r)]
		s += q.x*n.y - n.x*q.y
	}
	return s
}

// bboxOf is the bbox of polygons within [-180, 180] as RFC 7946 section
// 5.2 has it: the smallest span of longitudes that holds them all, which
// for a footprint across the antimeridian runs from its western edge
// (east of 0°) over 180° to its eastern edge, so west > east. The span is
// the circle less the widest gap between the longitudes the pieces cover.
func bboxOf(polys []polygon) [4]float64 {
	type span struct{ lo, hi float64 }
	var spans []span
	south, north := math.Inf(1), math.Inf(-1)
	for _, p := range polys {
		lo, hi := xRange(p[0])
		spans = append(spans, span{lo, hi})
		for _, q := range p[0] {
			south, north = min(south, q.y), max(north, q.y)
		}
	}
	slices.SortFunc(spans, func(a, b span) int {
		switch {
		case a.lo < b.lo:
			return -1
		case a.lo > b.lo:
			return 1
		}
		return 0
	})
	merged := spans[:1]
	for _, s := range spans[1:] {
		if last := &merged[len(merged)-1]; s.lo <= last.hi {
			last.hi = max(last.hi, s.hi)
		} else {
			merged = append(merged, s)
		}
	}
	first, last := merged[0], merged[len(merged)-1]
	// The gap across the antimeridian first: a footprint that does not
	// cross keeps a plain west < east bbox even when a gap elsewhere is
	// as wide.
	west, east, gap := first.lo, last.hi, first.lo+360-last.hi
	for i := 1; i < len(merged); i++ {
		if g := merged[i].lo - merged[i-1].hi; g > gap {
			west, east, gap = merged[i].lo, merged[i-1].hi, g
		}
	}
	if gap <= 0 {
		west, east = -180, 180
	}
	return [4]float64{west, south, east, north}
}
