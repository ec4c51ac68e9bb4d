package manifest

import (
	"errors"
	"strings"
	"testing"
)

const granule = "GRANULE/L2A_T32TQM_A043120_20250614T101601/"

func TestMatch(t *testing.T) {
	tests := []struct {
		patterns []string
		path     string
		want     bool
	}{
		{[]string{"MTD_MSIL2A.xml"}, "MTD_MSIL2A.xml", true},
		{[]string{"MTD_MSIL2A.xml"}, "MTD_MSIL1C.xml", false},
		{[]string{"MTD_MSIL2A.xml"}, granule + "MTD_MSIL2A.xml", false}, // anchored at the root
		{[]string{"MTD_*.xml"}, granule + "MTD_TL.xml", false},          // * stays in one element
		{[]string{"GRANULE/*/IMG_DATA/R10m/*_B0[2348]_10m.jp2"}, granule + "IMG_DATA/R10m/T32TQM_20250614T101559_B02_10m.jp2", true},
		{[]string{"GRANULE/*/IMG_DATA/R10m/*_B0[2348]_10m.jp2"}, granule + "IMG_DATA/R10m/T32TQM_20250614T101559_B08_10m.jp2", true},
		{[]string{"GRANULE/*/IMG_DATA/R10m/*_B0[2348]_10m.jp2"}, granule + "IMG_DATA/R10m/T32TQM_20250614T101559_TCI_10m.jp2", false},
		{[]string{"GRANULE/*/IMG_DATA/R10m/*_B0[2348]_10m.jp2"}, granule + "IMG_DATA/R20m/T32TQM_20250614T101559_B02_20m.jp2", false},
		{[]string{"**/*.xml"}, "MTD_MSIL2A.xml", true}, // ** takes no folder too
		{[]string{"**/*.xml"}, granule + "QI_DATA/GENERAL_QUALITY.xml", true},
		{[]string{"**/*.xml"}, granule + "IMG_DATA/R10m/x.jp2", false},
		{[]string{"**"}, "anything/at/all", true},
		{[]string{"GRANULE/**/MSK_*"}, granule + "QI_DATA/MSK_CLDPRB_20m.jp2", true},
		{[]string{"GRANULE/**/QI_DATA/**/MSK_?LDPRB_20m.jp2"}, granule + "QI_DATA/MSK_CLDPRB_20m.jp2", true},
		{[]string{"**/R10m/**"}, granule + "IMG_DATA/R10m/a.jp2", true},
		{[]string{"**/R10m/**"}, granule + "IMG_DATA/R20m/a.jp2", false},
		{[]string{"measurement/*-v[!v]-*.tiff"}, "measurement/s1a-iw-grd-vh-20250301t054012-002.tiff", false}, // [!v] is "!" or "v" in path.Match: [^v] negates
		{[]string{"measurement/*-v[^v]-*.tiff"}, "measurement/s1a-iw-grd-vh-20250301t054012-002.tiff", true},
		{[]string{"measurement/*-v[^v]-*.tiff"}, "measurement/s1a-iw-grd-vv-20250301t054012-001.tiff", false},
		{[]string{"Oa0?_radiance.nc", "geo_coordinates.nc"}, "geo_coordinates.nc", true},
		{[]string{"oa01_radiance.nc"}, "Oa01_radiance.nc", false},     // case-sensitive
		{[]string{"[", "Oa01_radiance.nc"}, "Oa01_radiance.nc", true}, // a bad pattern selects nothing, the others still do
		{nil, "Oa01_radiance.nc", false},
		{[]string{"**"}, "", false},
	}
	for _, tt := range tests {
		if got := Match(tt.patterns, tt.path); got != tt.want {
			t.Errorf("Match(%q, %s) = %v, want %v", tt.patterns, tt.path, got, tt.want)
		}
	}
	var nilSel *Selector
	if nilSel.Match("a") {
		t.Error("a nil Selector selected a path")
	}
}

// TestCompileErrors: every bad pattern is reported, in one error.
func TestCompileErrors(t *testing.T) {
	bad := []string{"", "/MTD_MSIL2A.xml", "GRANULE//x", "GRANULE/../x", "./x", `GRANULE\x`, "a**/b", "IMG_DATA/[B02", strings.Repeat("a/", MaxPathDepth) + "a", "*_B0[!1]_10m.jp2"}
	good := []string{"MTD_MSIL2A.xml", "**/*.jp2"}
	s, err := Compile(append(append([]string(nil), good...), bad...))
	if err == nil || s != nil {
		t.Fatalf("Compile = %v, %v", s, err)
	}
	msg := err.Error()
	for _, want := range []string{"pattern 3 \"\": empty", "pattern 4 \"/MTD_MSIL2A.xml\": absolute", "pattern 5 \"GRANULE//x\": element 2 is empty",
		`pattern 6 "GRANULE/../x": element 2 is ".."`, `pattern 7 "./x": element 1 is "."`, "pattern 8", "backslash", `"a**/b": element 1 "a**": ** must be a whole element`,
		`"IMG_DATA/[B02": element 2 "[B02": syntax error in pattern`, "pattern 11", "more than 32", `pattern 12 "*_B0[!1]_10m.jp2": element 1 "*_B0[!1]_10m.jp2": [!…] is not a negation here; write [^…]`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if n := strings.Count(msg, "\n") + 1; n != len(bad) {
		t.Errorf("%d errors, want %d:\n%s", n, len(bad), msg)
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != len(bad) {
		t.Error("not an errors.Join of one error a pattern")
	}
	s, err = Compile(good)
	if err != nil || len(s.Patterns()) != 2 {
		t.Fatalf("good patterns: %v", err)
	}
}

// TestSelect: a Selector picks a product's files from its manifest.
func TestSelect(t *testing.T) {
	m := parseFile(t, "S2B_MSIL2A_manifest.safe")
	s, err := Compile([]string{"MTD_MSIL2A.xml", "GRANULE/*/IMG_DATA/R10m/*_B0[2348]_10m.jp2", "GRANULE/*/MTD_TL.xml"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var size int64
	for _, e := range m.Select(s) {
		got = append(got, e.Path[strings.LastIndex(e.Path, "/")+1:])
		size += e.Size
	}
	want := "MTD_MSIL2A.xml T32TQM_20250614T101559_B02_10m.jp2 T32TQM_20250614T101559_B03_10m.jp2 T32TQM_20250614T101559_B04_10m.jp2 T32TQM_20250614T101559_B08_10m.jp2 MTD_TL.xml"
	if strings.Join(got, " ") != want || size != 54211+107500123+107300456+109400789+121290000+548270 {
		t.Errorf("selected %v (%d bytes)", got, size)
	}
}

// BenchmarkMatch: a Sentinel-2 path against a few patterns, one with **.
func BenchmarkMatch(b *testing.B) {
	s, _ := Compile([]string{"MTD_MSIL2A.xml", "GRANULE/*/IMG_DATA/R10m/*_B0[2348]_10m.jp2", "**/QI_DATA/**/*.xml"})
	p := granule + "IMG_DATA/R20m/T32TQM_20250614T101559_B05_20m.jp2"
	for b.Loop() {
		s.Match(p)
	}
}
