package productfilter

import (
	"errors"
	"strings"
	"testing"
)

// The documented limits, written out here rather than read from the
// constants so that the tests say what the documentation promises.
const (
	depthLimit  = 100
	lengthLimit = 1 << 20
)

const anyCloud = "Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value le 10)"

// nest wraps cond in n parentheses.
func nest(n int, cond string) string {
	return strings.Repeat("(", n) + cond + strings.Repeat(")", n)
}

// TestNestingDepth: every way the parser goes deeper (a parenthesis, a
// not, the parentheses of a function call or of any()) counts one level;
// past the limit the filter is refused at the token that goes over, as
// the other syntax errors are, instead of recursing as deep as the input
// (1 000 000 parentheses overflowed the stack of the running receiver).
func TestNestingDepth(t *testing.T) {
	const over = -1 // placeholder: accepted
	tests := []struct {
		name   string
		filter string
		at     int // position of the refusal, or over for accepted
	}{
		{"parentheses at the limit", nest(depthLimit, "Online eq true"), over},
		{"parentheses past the limit", nest(depthLimit+1, "Online eq true"), depthLimit},
		{"20 000 parentheses", nest(20000, "Online eq true"), depthLimit},
		{"unclosed parentheses", strings.Repeat("(", 20000), depthLimit},
		{"not at the limit", strings.Repeat("not ", depthLimit-1) + "(Online eq true)", over},
		{"not past the limit", strings.Repeat("not ", depthLimit) + "(Online eq true)", 4 * depthLimit},
		{"20 000 nots", strings.Repeat("not ", 20000) + "(Online eq true)", 4 * depthLimit},
		{"not and parentheses", strings.Repeat("not (", 51) + "Online eq true" + strings.Repeat(")", 51), 5 * 50},
		{"function call at the limit", nest(depthLimit-1, "contains(Name,'S2')"), over},
		{"function call past the limit", nest(depthLimit, "contains(Name,'S2')"), depthLimit + len("contains")},
		{"any() at the limit", nest(depthLimit-1, anyCloud), over},
		{"any() past the limit", nest(depthLimit, anyCloud), depthLimit + strings.Index(anyCloud, "(")},
		{"Intersects past the limit", nest(depthLimit, "OData.CSC.Intersects(area=geography'SRID=4326;POINT(0 0)')"), depthLimit + len("OData.CSC.Intersects")},
		// Chains are not nesting: a long list of tiles is a real filter.
		{"long or chain", "contains(Name,'T32TLR')" + strings.Repeat(" or contains(Name,'T32TLR')", 5000), over},
		{"long and chain", nest(depthLimit-1, "Online eq true"+strings.Repeat(" and Online eq true", 5000)), over},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse(tt.filter)
			if tt.at == over {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse = %v, %v; want a *SyntaxError at %d", f != nil, err, tt.at)
			}
			if se.Pos != tt.at || !strings.Contains(se.Msg, "nested deeper than 100") {
				t.Errorf("error %q, want at %d: nested deeper than 100 ...", err, tt.at)
			}
		})
	}
}

// TestDeepNestingIsRefusedCheaply: the refusal costs the same whatever the
// depth of the input (500 000 parentheses allocated about 1 GB).
func TestDeepNestingIsRefusedCheaply(t *testing.T) {
	for _, n := range []int{20000, 1000000} {
		s := nest(n, "Online eq true")
		var err error
		allocs := testing.AllocsPerRun(3, func() { _, err = Parse(s) })
		if err == nil {
			// Do not go on to 1 000 000: the parser before the limit
			// overflows the stack there, ending the test binary.
			t.Fatalf("%d parentheses accepted (%v allocations)", n, allocs)
		}
		if allocs > 10 {
			t.Errorf("%d parentheses: %v allocations to refuse", n, allocs)
		}
	}
}

// depth is how deep evaluating n recurses.
func depth(n node) int {
	switch n := n.(type) {
	case andNode:
		return 1 + max(depth(n.a), depth(n.b))
	case orNode:
		return 1 + max(depth(n.a), depth(n.b))
	case notNode:
		return 1 + depth(n.a)
	}
	return 1
}

// TestChainsEvaluateShallow: and/or chains, which the parser reads in a
// loop, are built as balanced trees, so that evaluating a chain of n terms
// recurses log n deep, not n.
func TestChainsEvaluateShallow(t *testing.T) {
	fx := fixtures(t)
	for _, tt := range []struct {
		name, first, sep, term string
		n                      int
	}{
		{"or", "Collection/Name eq 'SENTINEL-9'", " or ", "Collection/Name eq 'SENTINEL-2'", 20000},
		{"and", "Online eq true", " and ", "Online eq true", 20000},
		{"short", "Online eq true", " and ", "Online eq true", 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.first + strings.Repeat(tt.sep+tt.term, tt.n-1)
			f, err := Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			if d := depth(f.root); d > 20 {
				t.Errorf("a chain of %d terms evaluates %d deep", tt.n, d)
			}
			// The same answer as the chain's single term.
			one, err := Parse(tt.term)
			if err != nil {
				t.Fatal(err)
			}
			for i := range fx {
				if got, want := f.Match(&fx[i].p), one.Match(&fx[i].p); got != want {
					t.Errorf("%s: %v, want %v", fx[i].name, got, want)
				}
			}
		})
	}
}

// TestChainsKeepOrder: a balanced tree evaluates the terms left to right,
// as written, and says the same as the left-nested one.
func TestChainsKeepOrder(t *testing.T) {
	fx := fixtures(t)
	terms := []string{"Collection/Name eq 'SENTINEL-2'", "Online eq true", "startswith(Name,'S2B')", "not (contains(Name,'L1C'))", "ContentLength gt 1000"}
	for _, sep := range []string{" and ", " or "} {
		for n := 1; n <= len(terms); n++ {
			src := strings.Join(terms[:n], sep)
			left := strings.Repeat("(", n-1) + terms[0]
			for _, term := range terms[1:n] {
				left += sep + term + ")"
			}
			f, err := Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			g, err := Parse(left)
			if err != nil {
				t.Fatal(err)
			}
			for i := range fx {
				if f.Match(&fx[i].p) != g.Match(&fx[i].p) {
					t.Errorf("%s: %q says %v, %q says %v", fx[i].name, src, f.Match(&fx[i].p), left, g.Match(&fx[i].p))
				}
			}
		}
	}
}

// TestFilterLength: a filter longer than the limit is refused where it
// passes the limit, having read no further (a 1 MiB limit is that of a
// Kubernetes ConfigMap, which holds the interests file).
func TestFilterLength(t *testing.T) {
	pad := func(s string, n int) string { return s + strings.Repeat(" ", n-len(s)) }
	tests := []struct {
		name   string
		filter string
		ok     bool
	}{
		{"at the limit", pad("Online eq true", lengthLimit), true},
		{"one byte past", pad("Online eq true", lengthLimit+1), false},
		{"a string past the limit", "Name eq '" + strings.Repeat("x", 2*lengthLimit) + "'", false},
		{"a quoted string with quotes past the limit", "Name eq '" + strings.Repeat("''", lengthLimit) + "'", false},
		{"a word across the limit", pad("Online eq true and", lengthLimit-3) + "Online eq true", false},
		{"a chain past the limit", "Online eq true" + strings.Repeat(" or Online eq true", lengthLimit/18), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.filter)
			if tt.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var se *SyntaxError
			if !errors.As(err, &se) || se.Pos != lengthLimit || !strings.Contains(se.Msg, "longer than 1048576 bytes") {
				t.Fatalf("error %v, want at %d: longer than 1048576 bytes", err, lengthLimit)
			}
			if len(se.Msg) > 200 {
				t.Errorf("an error of %d bytes", len(se.Msg))
			}
		})
	}
}

// TestErrorsQuoteLittle: an error quotes at most a bounded piece of a long
// token (the interests file's error names the filter and the position).
func TestErrorsQuoteLittle(t *testing.T) {
	long := strings.Repeat("9", 100000)
	for _, s := range []string{
		"ContentLength gt " + long,
		"ContentDate/Start gt " + long,
		"Id eq '" + long + "'",
		"Online eq true " + strings.Repeat("x", 100000),
		"Name eq " + strings.Repeat("x", 100000),
	} {
		_, err := Parse(s)
		if err == nil || len(err.Error()) > 300 {
			t.Errorf("%.40s...: error of %d bytes: %.300v", s, len(errString(err)), err)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
