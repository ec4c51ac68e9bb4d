package productfilter

import (
	"errors"
	"math/bits"
	"strings"
	"testing"
)

// FuzzParseFilter: whatever the filter (the interests file is written by
// people, the simulator's by requests), Parse returns a filter or a
// *SyntaxError inside it, without panicking, and what it returns
// evaluates no deeper than the nesting limit allows.
//
//	go test ./internal/cdse/productfilter -run '^$' -fuzz FuzzParseFilter -fuzztime 10m -fuzzminimizetime 1s
func FuzzParseFilter(f *testing.F) {
	fx := fixtures(f)
	for _, tt := range matchCases {
		f.Add(tt.filter)
	}
	for _, tt := range spellings {
		f.Add(tt.form)
	}
	for _, s := range []string{
		// Literals at their edges: huge, non-finite, NaN in the spellings
		// OData and Go know.
		"ContentLength gt 99999999999999999999999999999999",
		"ContentLength gt -9223372036854775808",
		"ContentLength gt +1",
		"Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value le 1e400)",
		"Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value le -1e400)",
		"Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value le 1e-400)",
		"Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value le NaN)",
		"Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value le -NaN)",
		"Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value le nan)",
		"Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value le INF)",
		"Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value le -Infinity)",
		"Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value le 0x1p-2)",
		"Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value le 1_0)",
		"Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value le 1" + strings.Repeat("0", 400) + ")",
		"Attributes/OData.CSC.IntegerAttribute/any(att:att/Name eq 'orbitNumber' and att/OData.CSC.IntegerAttribute/Value eq 1e3)",
		"Attributes/OData.CSC.DateTimeOffsetAttribute/any(att:att/Name eq 'processingDate' and att/OData.CSC.DateTimeOffsetAttribute/Value lt 9999-12-31T23:59:59.999999999+23:59)",
		"ContentDate/Start gt 0000-01-01",
		"Id eq 0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f",
		"Id eq 0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5",
		"Name eq 'it''s' or Name eq ''''",
		"OData.CSC.Intersects(area=geography'SRID=4326;MULTIPOLYGON(((179 -16,-179 -16,-179 -17,179 -17,179 -16)))')",
		"OData.CSC.Intersects(area=geography'SRID=4326;POINT(180 90)')",
		// The forms of issue 32, at their edges.
		"OData.CSC.Intersects(Footprint=geography'SRID=4326;POINT(0 0)')",
		"OData.CSC.Intersects(Footprint=)",
		"OData.CSC.Intersects(Footprint geography'SRID=4326;POINT(0 0)')",
		"OData.CSC.Intersects(footprint=geography'SRID=4326;POINT(0 0)')",
		"OData.CSC.Intersects(area=geography'SRID=4326;MULTIPOINT EMPTY')",
		"OData.CSC.Intersects(area=geography'SRID=4326;MULTIPOINT (EMPTY)')",
		"OData.CSC.Intersects(area=geography'SRID=4326;MULTIPOINT (EMPTY, (179.9 -16.5))')",
		"OData.CSC.Intersects(area=geography'SRID=4326;MULTIPOINT ((1e400 0), (0 0))')",
		"OData.CSC.Intersects(area=geography'SRID=4326;MULTIPOINT (0 0, 1)')",
		"OData.CSC.Intersects(area=geography'SRID=4326;MULTIPOINT Z ((0 0 1))')",
		"name", "not name", "contains(name)", "contains(name,", "attributes/", "attributes/OData.CSC.", "a/OData.CSC.StringAttribute/any(",
		"attributes/OData.CSC.StringAttribute/any(att:att/Name eq 'x' and att/OData.CSC.StringAttribute/Value eq 'y')",
		"Attributes/any(", "Attributes/any(a:a/Name eq 'x' and a/Value", "Attributes/any(a:a/Name eq 'x' and a/Value eq)",
		"Attributes/any(a:a/Name eq 'x' and a/Value eq 9223372036854775807)",
		"Attributes/any(a:a/Name eq 'x' and a/Value eq -9223372036854775809)",
		"Attributes/any(a:a/Name eq 'x' and a/Value ge 1e3) or Attributes/any(a:a/Name eq 'x' and a/Value lt -0.5e-3)",
		"Attributes/any(a:a/Name eq 'x' and a/Value eq 2024-01-01)",
		"Attributes/any(a:a/Name eq 'x' and a/Value eq 2024-1)",
		"Attributes/any(a:a/Name eq 'x' and a/OData.CSC.IntegerAttribute/Value eq 1)",
		"Attributes/OData.CSC.IntegerAttribute/any(i0:i0/Name eq 'x' and i0/Value eq 1.5)",
		"Online eq tRuE", "Online ne FALSE", "Online eq TRUEE", "Online eq T", "(Online eq True)",
		"Attributes/OData.CSC.BooleanAttribute/any(att:att/Name eq 'sliceProductFlag' and att/OData.CSC.BooleanAttribute/Value eq true)",
		"Attributes/OData.CSC.BooleanAttribute/any(att:att/Name eq 'sliceProductFlag' and att/Value ne FALSE)",
		"Attributes/OData.CSC.BooleanAttribute/any(att:att/Name eq 'sliceProductFlag' and att/Value lt true)",
		"Attributes/any(a:a/Name eq 'sliceProductFlag' and a/Value eq tRUE)",
		"Attributes/OData.CSC.IntegerAttribute/any(att:att/Name eq 'relativeOrbitNumber' and att/OData.CSC.StringAttribute/Value eq 117)",
		"Attributes/OData.CSC.IntegerAttribute/any(att:att/Name eq 'relativeOrbitNumber' and att/OData.CSC.StringAttribute/Value eq '117')",
		"Attributes/OData.CSC.IntegerAttribute/any(att:att/Name eq 'relativeOrbitNumber' and att/OData.CSC.StringAttribute/Value eq 'unterminated)",
		"Attributes/OData.CSC.IntegerAttribute/any(att:att/Name eq 'relativeOrbitNumber' and att/OData.CSC.StringAttribute/Value eq",
		"Attributes/OData.CSC.DateTimeOffsetAttribute/any(att:att/Name eq 'x' and att/OData.CSC.BooleanAttribute/Value ne 2024-01-01)",
		"Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'x' and att/OData.CSC.IntegerAttribute/Value eq 1)",
		// Nesting at and past the limit, every way.
		nest(depthLimit, "Online eq true"),
		nest(depthLimit+1, "Online eq true"),
		nest(20000, "Online eq true"),
		strings.Repeat("(", 20000),
		strings.Repeat(")", 20000),
		strings.Repeat("not ", 200) + "(Online eq true)",
		strings.Repeat("not (", 60) + "Online eq true" + strings.Repeat(")", 60),
		nest(depthLimit, anyCloud),
		nest(depthLimit, "contains(Name,'S2')"),
		"Online eq true" + strings.Repeat(" or Online eq true", 2000),
		// Oddities of the lexer.
		"", " ", "(", ")", "'", "''", "not", "not not", "and", "Online eq true)",
		"Name eq '\xff'", "\x00", "Online\teq\ntrue",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		flt, err := Parse(s)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("%T %v, want a *SyntaxError", err, err)
			}
			if se.Pos < 0 || se.Pos > len(s) {
				t.Fatalf("error at %d, outside the filter of %d bytes: %v", se.Pos, len(s), err)
			}
			if len(se.Msg) > 1000 {
				t.Fatalf("an error of %d bytes", len(se.Msg))
			}
			return
		}
		if flt.String() != s {
			t.Fatalf("String() = %q", flt.String())
		}
		if flt.root == nil {
			return
		}
		// Each nesting level adds at most its own node, and each chain
		// inside it a balanced tree: log2(len(s)) + 1 levels.
		if d, most := depth(flt.root), (depthLimit+1)*(bits.Len(uint(len(s)))+2); d > most {
			t.Fatalf("evaluates %d deep, more than %d", d, most)
		}
		var empty Product
		for _, p := range append([]*Product{&empty}, fixtureProducts(fx)...) {
			if ok, _ := flt.Explain(p); ok != flt.Match(p) {
				t.Fatalf("Explain says %v, Match the opposite", ok)
			}
		}
	})
}

func fixtureProducts(fx []fixture) []*Product {
	out := make([]*Product, len(fx))
	for i := range fx {
		out[i] = &fx[i].p
	}
	return out
}
