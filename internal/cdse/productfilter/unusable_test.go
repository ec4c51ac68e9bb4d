package productfilter

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/peterstace/simplefeatures/geom"
)

// hangGuard is far above what reading and testing any footprint takes
// (microseconds; a second under the race detector on a loaded machine):
// it only turns a hang into a failure.
const hangGuard = 20 * time.Second

// returns runs f and fails the test when it has not returned within
// hangGuard. A hung f's goroutine spins on until the test binary exits;
// it cannot be stopped, which is the defect such a test looks for.
func returns[T any](t *testing.T, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(hangGuard):
		t.Fatalf("no answer within %v: the evaluation does not terminate", hangGuard)
	}
	panic("unreachable")
}

// Footprints the catalogue should never send but a notification can hold.
// Each is unusable, and an area test on it fails open.
const (
	alps     = "POLYGON((5.9 44.9,16.2 44.9,16.2 48.0,5.9 48.0,5.9 44.9))"
	sq       = "POLYGON((%s, 11 45, 11 46, 10 46, 10 45))" // the first vertex to fill in
	sqJSON   = `{"type":"Polygon","coordinates":[[[%s],[11,45],[11,46],[10,46],[10,45]]]}`
	alpsTerm = "OData.CSC.Intersects(area=geography'SRID=4326;" + alps + "')"
)

var unusableFootprints = []struct {
	name      string
	wkt, json string
}{
	{"lon 1e300", fmt.Sprintf(sq, "1e300 45"), ""},
	{"lon -1e300", fmt.Sprintf(sq, "-1e300 45"), ""},
	{"lon 1e13", fmt.Sprintf(sq, "1e13 45"), ""},
	{"lat 1e300", fmt.Sprintf(sq, "10 1e300"), ""},
	{"GeoJSON lon 1e300", "", fmt.Sprintf(sqJSON, "1e300,45")},
	{"lon 1e400 (overflows)", fmt.Sprintf(sq, "1e400 45"), ""},
	{"GeoJSON lon 1e400 (overflows)", "", fmt.Sprintf(sqJSON, "1e400,45")},
	{"lon NaN", fmt.Sprintf(sq, "NaN 45"), ""},
	{"lon Inf", fmt.Sprintf(sq, "Inf 45"), ""},
	{"lon -Infinity", fmt.Sprintf(sq, "-Infinity 45"), ""},
	{"lat 91", fmt.Sprintf(sq, "10 91"), ""},
	{"lat -90.5", fmt.Sprintf(sq, "10 -90.5"), ""},
	{"lon 541", fmt.Sprintf(sq, "541 45"), ""},
	{"lon -541", fmt.Sprintf(sq, "-541 45"), ""},
}

// TestUnusableFootprintFailsOpen (issue 29, defect 1): a footprint with a
// coordinate no footprint can have (1e300 pinned a core forever in the
// antimeridian unwrapping) is answered at once, and an area test on it
// fails open: the product goes to every interest whose other terms match,
// rather than to none (or nowhere, ever).
func TestUnusableFootprintFailsOpen(t *testing.T) {
	filters := []struct {
		filter string
		want   bool
	}{
		{alpsTerm, true},
		{"Name eq 'S2A_TEST' and " + alpsTerm, true},
		{"Name eq 'S1A_OTHER' and " + alpsTerm, false}, // the other term decides
		{"not " + alpsTerm, true},                      // unknown either way
		{alpsTerm + " or Name eq 'S1A_OTHER'", true},
	}
	for _, fp := range unusableFootprints {
		t.Run(fp.name, func(t *testing.T) {
			for _, tt := range filters {
				f, err := Parse(tt.filter)
				if err != nil {
					t.Fatal(err)
				}
				p := footprintEntity(t, fp.wkt, fp.json)
				if got := returns(t, func() bool { return f.Match(&p) }); got != tt.want {
					t.Errorf("%.60s: Match = %v, want %v", tt.filter, got, tt.want)
				}
			}
		})
	}
}

// TestHugeFootprintFailsOpen: a footprint of more parts or vertices than
// any real one is not tested against areas (the test's cost grows with
// their product: 17 000 parts against a 10 000-vertex area took 9 s); it
// fails open like an unusable one.
func TestHugeFootprintFailsOpen(t *testing.T) {
	manyParts := "MULTIPOLYGON(" + strings.Repeat("((20 20, 20.01 20, 20.01 20.01, 20 20)),", 1200)
	manyParts = strings.TrimSuffix(manyParts, ",") + ")"
	var b strings.Builder
	b.WriteString("POLYGON((0 0")
	for i := range 120_000 {
		fmt.Fprintf(&b, ", %g %g", float64(i)/12_000, 0.001*float64(i%2))
	}
	b.WriteString(", 0 0))")
	f, err := Parse(alpsTerm)
	if err != nil {
		t.Fatal(err)
	}
	for name, wkt := range map[string]string{"1200 parts": manyParts, "120 000 vertices": b.String()} {
		p := footprintEntity(t, wkt, "")
		if !returns(t, func() bool { return f.Match(&p) }) {
			t.Errorf("%s: no match; an area not evaluated fails open", name)
		}
	}
}

// circle is a valid polygon of n vertices round (x, y), of radius r°.
func circle(x, y, r float64, n int) string {
	var b strings.Builder
	b.WriteString("POLYGON((")
	for i := range n {
		a := 2 * math.Pi * float64(i) / float64(n)
		fmt.Fprintf(&b, "%g %g, ", x+r*math.Cos(a), y+r*math.Sin(a))
	}
	fmt.Fprintf(&b, "%g %g))", x+r, y)
	return b.String()
}

// multi is a MULTIPOLYGON of n copies of the polygon p (POLYGON((...))).
func multi(p string, n int) string {
	body := strings.TrimPrefix(p, "POLYGON")
	return "MULTIPOLYGON(" + strings.TrimSuffix(strings.Repeat(body+",", n), ",") + ")"
}

// TestFootprintUnevaluatedReasons: each footprint that is not tested says
// why, and an Intersects term on it is unknown: Evaluate matches and
// reports the reason, unless another term decides without it. The caps
// are exact: a footprint at a cap is tested.
func TestFootprintUnevaluatedReasons(t *testing.T) {
	tri := "POLYGON((20 20, 20.01 20, 20.01 20.01, 20 20))" // outside the Alps
	long := func(n int) string {                            // a ring of n vertices outside the Alps
		var b strings.Builder
		b.WriteString("POLYGON((0 0")
		for i := 1; i < n-1; i++ {
			fmt.Fprintf(&b, ", %g %g", float64(i)/float64(n), 0.001*float64(i%2))
		}
		b.WriteString(", 0 0))")
		return b.String()
	}
	tests := []struct {
		name      string
		wkt, json string
		want      Unevaluated
	}{
		{"lon 1e300", fmt.Sprintf(sq, "1e300 45"), "", LongitudeOutOfRange},
		{"lon -1e300", fmt.Sprintf(sq, "-1e300 45"), "", LongitudeOutOfRange},
		{"lat 1e300", fmt.Sprintf(sq, "10 1e300"), "", LatitudeOutOfRange},
		{"GeoJSON lon 1e300", "", fmt.Sprintf(sqJSON, "1e300,45"), LongitudeOutOfRange},
		{"lon 1e400", fmt.Sprintf(sq, "1e400 45"), "", NonFinite},
		{"lat -1e400", fmt.Sprintf(sq, "10 -1e400"), "", NonFinite},
		{"GeoJSON lon 1e400", "", fmt.Sprintf(sqJSON, "1e400,45"), NonFinite},
		{"lon NaN", fmt.Sprintf(sq, "NaN 45"), "", NonFinite},
		{"lat nan", fmt.Sprintf(sq, "10 nan"), "", NonFinite},
		{"lon Inf", fmt.Sprintf(sq, "Inf 45"), "", NonFinite},
		{"lon -Infinity", fmt.Sprintf(sq, "-Infinity 45"), "", NonFinite},
		{"POINT lon 1e400", "POINT (1e400 45)", "", NonFinite},
		{"lat 91", fmt.Sprintf(sq, "10 91"), "", LatitudeOutOfRange},
		{"lat -90.5", fmt.Sprintf(sq, "10 -90.5"), "", LatitudeOutOfRange},
		{"lon 541", fmt.Sprintf(sq, "541 45"), "", LongitudeOutOfRange},
		{"lon -541", fmt.Sprintf(sq, "-541 45"), "", LongitudeOutOfRange},
		{"GeoJSON lat 91", "", fmt.Sprintf(sqJSON, "10,91"), LatitudeOutOfRange},
		{"1001 parts", multi(tri, MaxFootprintParts+1), "", TooManyParts},
		{"100 001 vertices", long(MaxFootprintVertices + 1), "", TooManyVertices},
		{"parts checked before coordinates", multi(fmt.Sprintf(sq, "1e300 45"), MaxFootprintParts+1), "", TooManyParts},
		// Tested:
		{"1000 parts", multi(tri, MaxFootprintParts), "", ""},
		{"100 000 vertices", long(MaxFootprintVertices), "", ""},
		{"lat 90, lon 540", "POLYGON((540 90, 539 90, 539 89, 540 90))", "", ""},
		{"lat -90, lon -540", "POLYGON((-540 -90, -539 -90, -539 -89, -540 -90))", "", ""},
		{"across the antimeridian", "POLYGON ((179.5 -16, -179.5 -16, -179.5 -17, 179.5 -17, 179.5 -16))", "", ""},
		{"broken (matches no area)", "POLYGON ((1 2, 3", "", ""},
		{"broken GeoJSON", "", `{"type":"Polygonal","coordinates":[[[1,2]]]}`, ""},
		{"a name that is no number", "POLYGON ((Infinite 45, 11 45, 11 46, 10 45))", "", ""},
	}
	f, err := Parse(alpsTerm)
	if err != nil {
		t.Fatal(err)
	}
	other, err := Parse("Name eq 'S1A_OTHER' and " + alpsTerm)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := footprintEntity(t, tt.wkt, tt.json)
			if got := returns(t, p.FootprintUnevaluated); got != tt.want {
				t.Errorf("FootprintUnevaluated = %q, want %q", got, tt.want)
			}
			m, why := f.Evaluate(&p)
			if why != tt.want || (tt.want != "") != m {
				t.Errorf("Evaluate = %v, %q; want %v, %q", m, why, tt.want != "", tt.want)
			}
			if m, why := other.Evaluate(&p); m || why != "" {
				t.Errorf("with a term that fails: Evaluate = %v, %q; want false, \"\"", m, why)
			}
		})
	}
}

// TestAreaWorkIsBounded: a footprint within the caps whose pieces all lie
// in the bounding box of a large area, but outside it, would take an
// exact test of the whole area per piece (999 × 10 000 vertices, the
// shape of issue 29's 9 s); the test stops at MaxAreaWork and the term is
// unknown (too_complex). Near its area's pieces but outside them, the
// same footprint in few pieces is tested.
func TestAreaWorkIsBounded(t *testing.T) {
	area := circle(10, 45, 1, 10_000)
	// A corner of the circle's bounding box, outside the circle.
	corner := "POLYGON((10.95 45.95, 10.99 45.95, 10.99 45.99, 10.95 45.95))"
	f, err := Parse("OData.CSC.Intersects(area=geography'SRID=4326;" + area + "')")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		parts int
		match bool
		why   Unevaluated
	}{
		{"999 pieces", MaxFootprintParts - 1, true, TooComplex},
		{"5 pieces", 5, false, ""},
	} {
		p := footprintEntity(t, multi(corner, tt.parts), "")
		m, why := returns(t, func() tri { m, why := f.Evaluate(&p); return tri{m, why} }).unpack()
		if m != tt.match || why != tt.why {
			t.Errorf("%s: Evaluate = %v, %q; want %v, %q", tt.name, m, why, tt.match, tt.why)
		}
	}
}

func (t tri) unpack() (bool, Unevaluated) { return t.ok, t.why }

// TestIntersectsBudget: the budget counts the vertices of the pairs of
// pieces tested exactly, and only those: pieces whose envelopes do not
// meet cost nothing.
func TestIntersectsBudget(t *testing.T) {
	piece := func(wkt string) part {
		g, ok := readFootprintWKT(wkt)
		if !ok {
			t.Fatalf("%s: not read", wkt)
		}
		return newPart(g)
	}
	a := piece("POLYGON((0 0, 10 0, 10 10, 0 10, 0 0))")                // 5 vertices
	near := piece("POLYGON((20 20, 21 20, 21 21, 20 20))")              // 4, envelopes apart
	inBox := piece("POLYGON((10.5 10.5, 11 10.5, 11 11, 10.5 10.5))")   // 4, apart too
	touching := piece("POLYGON((5 5, 6 5, 6 6, 5 5))")                  // 4, meets a
	edge := piece("POLYGON((9.9 -1, 11 -1, 11 0.5, 10.2 0.5, 9.9 -1))") // 5, envelope meets, a corner apart
	for _, tt := range []struct {
		name      string
		b         []part
		budget    int
		hit, over bool
	}{
		{"far pieces cost nothing", []part{near, inBox, near, inBox}, 0, false, false},
		{"one exact test within budget", []part{touching}, 9, true, false},
		{"one exact test over budget", []part{touching}, 8, false, true},
		{"two tests, the second over", []part{edge, touching}, 18, false, true},
		{"two tests within budget", []part{edge, touching}, 19, true, false},
	} {
		hit, over := intersects([]part{a}, tt.b, tt.budget)
		if hit != tt.hit || over != tt.over {
			t.Errorf("%s: intersects = %v, over %v; want %v, %v", tt.name, hit, over, tt.hit, tt.over)
		}
	}
}

// unwrapByLoop is unwrapRing's longitude rule as it was: a 360° step at
// a time, for comparison on longitudes a footprint may have.
func unwrapByLoop(xs []float64) ([]float64, bool) {
	out := make([]float64, len(xs))
	off, prev, crossed := 0.0, 0.0, false
	for i, x := range xs {
		x += off
		if i > 0 {
			for x-prev > 180 {
				off, x, crossed = off-360, x-360, true
			}
			for x-prev < -180 {
				off, x, crossed = off+360, x+360, true
			}
		}
		out[i], prev = x, x
	}
	return out, crossed
}

// TestUnwrapRingTurns: the turns computed at once are those the loop
// counted, for every longitude within ±540 (steps of exactly 180° and
// 540° included), and
// a longitude of 1e300 no longer takes forever.
func TestUnwrapRingTurns(t *testing.T) {
	rings := [][]float64{
		{179.5, -179.5, -179.5, 179.5, 179.5},
		{0, 180, 0, -180, 0},
		{0, 180.5, 0},
		{-540, 540, -540, 0, 360, -360, 540.5 - 1},
		{170, -170, 170, -170, 170},
		{10, 190, 370, 530, -530, 10},
		{0, 90, 180, -90, 0},
	}
	rng := rand.New(rand.NewPCG(29, 1))
	for range 2000 {
		r := make([]float64, 2+rng.IntN(8))
		for i := range r {
			switch rng.IntN(3) {
			case 0:
				r[i] = float64(rng.IntN(7)-3) * 180 // the boundaries
			default:
				r[i] = (rng.Float64()*2 - 1) * 540
			}
		}
		rings = append(rings, r)
	}
	for _, xs := range rings {
		xy := make([]float64, 0, 2*len(xs))
		for _, x := range xs {
			xy = append(xy, x, 45)
		}
		got, crossed := unwrapRing(geom.NewSequence(xy, geom.DimXY))
		want, wantCrossed := unwrapByLoop(xs)
		if crossed != wantCrossed {
			t.Fatalf("%v: crossed %v, the loop %v", xs, crossed, wantCrossed)
		}
		for i, w := range want {
			// The same but for rounding: the loop added 360 a turn at a
			// time, the unwrapping adds them at once.
			if math.Abs(got[2*i]-w) > 1e-9 {
				t.Fatalf("%v: unwrapped %v, the loop %v", xs, got, want)
			}
		}
	}
	huge := geom.NewSequence([]float64{0, 45, 1e300, 45, -1e300, 45, 0, 45}, geom.DimXY)
	returns(t, func() bool { unwrapRing(huge); return true })
}

// TestFixtureFootprintsAreTested: every footprint of the catalogue's
// fixtures is within the caps and tested.
func TestFixtureFootprintsAreTested(t *testing.T) {
	for _, fx := range fixtures(t) {
		p := fx.p
		if why := p.FootprintUnevaluated(); why != "" {
			t.Errorf("%s: footprint not tested: %s", fx.name, why)
		}
	}
}

// FuzzFootprint: whatever a notification's footprint holds (WKT in
// Footprint, or GeoJSON in GeoFootprint: huge and non-finite numbers,
// latitudes past the poles, longitudes many turns round), reading it and
// testing it against areas returns (within the hang guard), never
// panics, and a footprint that is tested has only finite coordinates
// within ±90 and ±540, and no more parts and vertices than the caps;
// one that is not fails open, saying why.
//
//	go test ./internal/cdse/productfilter -run '^$' -fuzz FuzzFootprint -fuzztime 10m -fuzzminimizetime 1s
func FuzzFootprint(f *testing.F) {
	for _, x := range []string{"1e300", "-1e300", "1e13", "NaN", "Inf", "-Inf", "1e400", "-1e400", "541", "-541", "540", "179.5", "-179.5", "0"} {
		f.Add(fmt.Sprintf(sq, x+" 45"), "")
		f.Add("", fmt.Sprintf(sqJSON, x+",45"))
	}
	for _, y := range []string{"91", "-91", "90", "1e300", "NaN", "1e400"} {
		f.Add(fmt.Sprintf(sq, "10 "+y), "")
		f.Add("", fmt.Sprintf(sqJSON, "10,"+y))
	}
	for _, s := range wktCases {
		f.Add(s, "")
	}
	f.Add("MULTIPOLYGON (((179.5 60, 180 60, 180 61, 179.5 61, 179.5 60)), ((-180 60, -179.2 60, -179.2 61, -180 61, -180 60)))", "")
	f.Add("POLYGON ((0 80, 90 80, 180 80, -90 80, 0 80))", "")
	f.Add("POLYGON ((10 45, 1e300 45, -1e300 46, 10 45), (1e300 1, 2 2, 1e300 1))", "")
	f.Add("GEOMETRYCOLLECTION (POINT (1e300 0), POLYGON ((10 45, 11 45, 11 46, 10 45)))", "")
	f.Add("POINT (1e400 1)", "")
	f.Add("", `{"type":"MultiPolygon","coordinates":[[[[1e300,1],[2,2],[3,3],[1e300,1]]]]}`)
	f.Add("", `{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1e400,1]}]}`)
	filters := make([]*Filter, 0, 3)
	for _, s := range []string{
		alpsTerm,
		"OData.CSC.Intersects(area=geography'SRID=4326;POLYGON((179 -16, -179 -16, -179 -17, 179 -17, 179 -16))')",
		"not OData.CSC.Intersects(area=geography'SRID=4326;POINT(10.5 45.5)')",
	} {
		flt, err := Parse(s)
		if err != nil {
			f.Fatal(err)
		}
		filters = append(filters, flt)
	}
	f.Fuzz(func(t *testing.T, wkt, geojson string) {
		raw := map[string]any{"Id": "11111111-2222-4333-8444-555555555555", "Name": "S2A_TEST"}
		if wkt != "" {
			raw["Footprint"] = "geography'SRID=4326;" + wkt + "'"
		}
		if json.Valid([]byte(geojson)) {
			raw["GeoFootprint"] = json.RawMessage(geojson)
		}
		b, err := json.Marshal(raw)
		if err != nil {
			t.Fatal(err)
		}
		p, err := FromEntity(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		why := returns(t, p.FootprintUnevaluated)
		for _, flt := range filters {
			m, got := returns(t, func() tri { m, got := flt.Evaluate(&p); return tri{m, got} }).unpack()
			switch {
			case why != "" && (!m || got != why):
				t.Fatalf("footprint not tested (%s), but %q: Evaluate = %v, %q", why, flt, m, got)
			case got != "" && got != why && got != TooComplex:
				t.Fatalf("%q: Evaluate says %q, the footprint %q", flt, got, why)
			case flt.Match(&p) != m:
				t.Fatalf("%q: Match disagrees with Evaluate", flt)
			}
		}
		g, err := p.Footprint()
		if why != "" || err != nil {
			return
		}
		if n := pieces(g); n > MaxFootprintParts {
			t.Fatalf("tested with %d parts", n)
		}
		seq := g.DumpCoordinates()
		if seq.Length() > MaxFootprintVertices {
			t.Fatalf("tested with %d vertices", seq.Length())
		}
		for i := range seq.Length() {
			xy := seq.GetXY(i)
			if math.IsNaN(xy.X) || math.IsNaN(xy.Y) || math.Abs(xy.X) > 540 || math.Abs(xy.Y) > 90 {
				t.Fatalf("tested with the coordinate %v %v", xy.X, xy.Y)
			}
		}
	})
}
