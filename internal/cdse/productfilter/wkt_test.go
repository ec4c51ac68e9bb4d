package productfilter

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"

	"github.com/peterstace/simplefeatures/geom"
)

// wktCases are footprints as the catalogue writes them and the forms the
// fast reader must leave to the general parser.
var wktCases = []string{
	"POLYGON ((11.5 45.0, 12.6 45.0, 12.6 46.0, 11.5 46.0, 11.5 45.0))",
	"POLYGON((-3.312 40.512,-2.011 40.734,-1.742 39.745,-3.031 39.524,-3.312 40.512))",
	"POLYGON ((0 0, 10 0, 10 10, 0 10, 0 0), (2 2, 2 4, 4 4, 4 2, 2 2))",
	"MULTIPOLYGON (((179.5 60, 180 60, 180 61, 179.5 61, 179.5 60)), ((-180 60, -179.2 60, -179.2 61, -180 61, -180 60)))",
	"MULTIPOLYGON(((-6 37,0 37,0 39.6,-5 39.6,-5 44,-6 44,-6 37)),((11 44,13 44,13 47,11 47,11 44)))",
	"  POLYGON ( ( 1e1 -2.5E-1 , 3 4 , 5 6 , 1e1 -2.5E-1 ) )  ",
	// Left to the general parser (ok false):
	"POLYGON Z ((0 0 1, 1 0 1, 1 1 1, 0 0 1))",
	"POLYGON EMPTY",
	"POINT (1 2)",
	"polygon ((0 0, 1 0, 1 1, 0 0))",
	"POLYGONZ ((0 0 1, 1 0 1, 1 1 1, 0 0 1))",
	"POLYGON ((0 0, 1 0, 1 1, 0 0)) trailing",
	"POLYGON ((0 0, 1-0, 1 1, 0 0))",
	"POLYGON ((0 0, 1 0, 1 1, 0 0)",
	"MULTIPOLYGON (((0 0, 1 0, 1 1, 0 0))",
	"POLYGON ((0x1p1 0, 1 0, 1 1, 0 0))",
	"POLYGON ((+5 0, 1 0, 1 1, +5 0))",
	"MULTIPOLYGON(((0 08)))",
	"POLYGON ((NaN 0, 1 0, 1 1, NaN 0))",
	"",
}

// TestReadFootprintWKT: what the fast reader reads, the general parser
// reads the same; what it declines, it declines whole.
func TestReadFootprintWKT(t *testing.T) {
	fast := 0
	for _, s := range wktCases {
		checkWKT(t, s)
		if _, ok := readFootprintWKT(s); ok {
			fast++
		}
	}
	if fast != 6 {
		t.Errorf("the fast reader read %d of the catalogue's 6 forms", fast)
	}
	// Every fixture's footprint, each read by the fast path.
	for _, fx := range fixtures(t) {
		if fx.p.fp == nil || fx.p.fp.wkt == "" {
			continue
		}
		if _, ok := readFootprintWKT(fx.p.fp.wkt); !ok {
			t.Errorf("%s: the fast reader declined the catalogue's footprint %.60s...", fx.name, fx.p.fp.wkt)
		}
		checkWKT(t, fx.p.fp.wkt)
	}
}

func checkWKT(t testing.TB, s string) {
	t.Helper()
	g, ok := readFootprintWKT(s)
	if !ok {
		return
	}
	want, err := geom.UnmarshalWKT(s, geom.NoValidate{})
	if err != nil {
		t.Fatalf("%q: read fast as %s, refused by the general parser: %v", s, g.AsText(), err)
	}
	if !geom.ExactEquals(g, want) {
		t.Fatalf("%q: fast %s, general %s", s, g.AsText(), want.AsText())
	}
}

func FuzzReadFootprintWKT(f *testing.F) {
	for _, s := range wktCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkWKT(t, s) })
}

// decimals are numbers at and around the edges of shortDecimal's path:
// the mantissa at 2^53 and past it, 22 decimals and 23, 19 digits and 20,
// and what it must leave to strconv.
var decimals = []string{
	"0", "-0", "1", "-1", "45.0", "11.59166667", "-179.99999999999997", "12.655118166047592",
	"9007199254740992", "9007199254740993", "0.9007199254740993", "900719925474099.2",
	"0.1234567890123456789012", "0.12345678901234567890123", "1234567890123456789", "12345678901234567890",
	"0.0000000000000000000001", "1.0000000000000002", "1.00000000000000011102230246251565",
	"08", "-08", "1.", ".5", "1e5", "1.5E-3", "1-", "1+", "1.2.3", "-", "", "+5", "0x10", "1_0", "Inf", "NaN",
}

// TestShortDecimal: every number shortDecimal reads, it reads as
// strconv.ParseFloat does, to the bit; the footprint's numbers are all read
// on its path.
func TestShortDecimal(t *testing.T) {
	for _, s := range decimals {
		checkDecimal(t, s)
	}
	for _, s := range []string{"11.59166667", "45.08333333", "-60.0", "-2.96333333", "6.535492", "-0", "9007199254740992", "900719925474099.2", "0.123456789012345"} {
		if _, _, ok := shortDecimal(s); !ok {
			t.Errorf("%s: left to strconv", s)
		}
	}
}

func checkDecimal(t testing.TB, s string) bool {
	t.Helper()
	f, n, ok := shortDecimal(s)
	if !ok {
		return false
	}
	want, err := strconv.ParseFloat(s[:n], 64)
	if err != nil {
		t.Fatalf("%q: shortDecimal read %q as %v, strconv refuses it: %v", s, s[:n], f, err)
	}
	if math.Float64bits(f) != math.Float64bits(want) {
		t.Fatalf("%q: shortDecimal %v (%x), strconv %v (%x)", s, f, math.Float64bits(f), want, math.Float64bits(want))
	}
	return true
}

func FuzzShortDecimal(f *testing.F) {
	for _, s := range decimals {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkDecimal(t, s) })
}

// BenchmarkFootprintWKT: a Sentinel-2 tile's 48-vertex footprint, by the
// fast reader and by simplefeatures' general parser.
func BenchmarkFootprintWKT(b *testing.B) {
	var s string
	for _, fx := range fixtures(b) {
		if fx.name == "created-s2" {
			var e struct{ Footprint string }
			if err := json.Unmarshal(fx.raw, &e); err != nil {
				b.Fatal(err)
			}
			s = footprintWKT(e.Footprint)
		}
	}
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			if _, ok := readFootprintWKT(s); !ok {
				b.Fatal("declined")
			}
		}
	})
	b.Run("general", func(b *testing.B) {
		for b.Loop() {
			if _, err := geom.UnmarshalWKT(s, geom.NoValidate{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
