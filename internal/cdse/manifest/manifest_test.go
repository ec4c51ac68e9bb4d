package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestParseTestdata: every manifest of testdata gives its files with the
// paths, sizes and checksums it lists.
func TestParseTestdata(t *testing.T) {
	tests := []struct {
		file    string
		entries int
		first   Entry
		last    Entry
	}{
		{"S2B_MSIL2A_manifest.safe", 15,
			Entry{ID: "S2_Level-2A_Product_Metadata", Path: "MTD_MSIL2A.xml", Size: 54211, SHA3: "5b0c1e3f2a9d8c7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa09"},
			Entry{ID: "CloudPrbMask_Tile1_Data", Path: "GRANULE/L2A_T32TQM_A043120_20250614T101601/QI_DATA/MSK_CLDPRB_20m.jp2", Size: 4208400, SHA3: strings.Repeat("cc", 32)}},
		{"S1A_IW_GRDH_manifest.safe", 8,
			Entry{ID: "products1aiwgrdvh20250301t05401220250301t054037058112072c4b002", Path: "annotation/s1a-iw-grd-vh-20250301t054012-20250301t054037-058112-072c4b-002.xml", Size: 1812345, MD5: "0123456789abcdef0123456789abcdef"},
			Entry{ID: "quicklook", Path: "preview/quick-look.png", Size: 307000, MD5: strings.Repeat("44", 16)}},
		{"S3A_OL_1_EFR_xfdumanifest.xml", 7,
			Entry{ID: "Oa01_radianceData", Path: "Oa01_radiance.nc", Size: 22400000, MD5: strings.Repeat("5f", 16)},
			Entry{ID: "tieGeometriesData", Path: "tie_geometries.nc", Size: 480000, MD5: strings.Repeat("b9", 16)}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			m := parseFile(t, tt.file)
			if len(m.Entries) != tt.entries {
				t.Fatalf("%d entries, want %d", len(m.Entries), tt.entries)
			}
			if got := m.Entries[0]; got != tt.first {
				t.Errorf("first\n got %+v\nwant %+v", got, tt.first)
			}
			if got := m.Entries[len(m.Entries)-1]; got != tt.last {
				t.Errorf("last\n got %+v\nwant %+v", got, tt.last)
			}
			for _, e := range m.Entries {
				if e.Size < 0 || (e.MD5 == "") == (e.SHA3 == "") || strings.HasPrefix(e.Path, ".") {
					t.Errorf("entry %+v", e)
				}
				if got, ok := m.Lookup(e.Path); !ok || got != e {
					t.Errorf("Lookup(%s) = %+v %v", e.Path, got, ok)
				}
			}
		})
	}
}

// parseFile parses a manifest of testdata.
func parseFile(t *testing.T, name string) *Manifest {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// manifestOf wraps dataObjects in the frame of a manifest.
func manifestOf(objects string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<xfdu:XFDU xmlns:xfdu="urn:ccsds:schema:xfdu:1" version="esa/safe/sentinel/1.1/sentinel-2/msi/archive_l1c_user_product">
<informationPackageMap/><metadataSection/>
<dataObjectSection>` + objects + `</dataObjectSection></xfdu:XFDU>`
}

func object(id, size, href, sums string) string {
	if size != "" {
		size = ` size="` + size + `"`
	}
	return `<dataObject ID="` + id + `"><byteStream mimeType="application/octet-stream"` + size + `>` +
		`<fileLocation locatorType="URL" href="` + href + `"/>` + sums + `</byteStream></dataObject>`
}

const md5Hex = "d41d8cd98f00b204e9800998ecf8427e"

// TestParseVariations: what real manifests vary in is read; what no
// manifest may say is refused with an error naming the dataObject.
func TestParseVariations(t *testing.T) {
	sha3 := strings.Repeat("A1", 32)
	tests := []struct {
		name string
		doc  string
		want []Entry
		err  string // a part of the error; "" none
	}{
		{"both checksums, names in any case", manifestOf(object("a", "5", "./a.jp2",
			`<checksum checksumName="md5">`+strings.ToUpper(md5Hex)+`</checksum><checksum checksumName="SHA3_256"> `+sha3+` </checksum>`)),
			[]Entry{{ID: "a", Path: "a.jp2", Size: 5, MD5: md5Hex, SHA3: strings.ToLower(sha3)}}, ""},
		{"no size, no checksum, no ./", manifestOf(object("b", "", "DATASTRIP/DS_X/MTD_DS.xml", "")),
			[]Entry{{ID: "b", Path: "DATASTRIP/DS_X/MTD_DS.xml", Size: -1}}, ""},
		{"another algorithm skipped", manifestOf(object("c", "0", "./c", `<checksum checksumName="CRC32">1234abcd</checksum>`)),
			[]Entry{{ID: "c", Path: "c", Size: 0}}, ""},
		{"prefixed elements and attributes in any order", `<x:XFDU xmlns:x="urn:ccsds:schema:xfdu:1"><x:dataObjectSection><x:dataObject ID="d"><x:byteStream size="7"><x:fileLocation href="./d.nc" locatorType="URL"/><x:checksum checksumName="MD5">` + md5Hex + `</x:checksum></x:byteStream></x:dataObject></x:dataObjectSection></x:XFDU>`,
			[]Entry{{ID: "d", Path: "d.nc", Size: 7, MD5: md5Hex}}, ""},
		{"latin1", strings.Replace(manifestOf(object("e", "1", "./e", "")), "UTF-8", "ISO-8859-1", 1) + "<!-- \xe9 -->",
			[]Entry{{ID: "e", Path: "e", Size: 1}}, ""},
		{"empty section", manifestOf(""), nil, ""},

		{"not XFDU", `<Level-2A_User_Product/>`, nil, "not an XFDU manifest"},
		{"no section", `<xfdu:XFDU xmlns:xfdu="urn:ccsds:schema:xfdu:1"/>`, nil, "no dataObjectSection"},
		{"no href", manifestOf(object("f", "1", "", "")), nil, `dataObject "f": href ""`},
		{"no fileLocation", manifestOf(`<dataObject ID="g"><byteStream size="1"/></dataObject>`), nil, `dataObject "g": no byteStream/fileLocation`},
		{"traversal", manifestOf(object("h", "1", "./GRANULE/../../etc/passwd", "")), nil, `dataObject "h"`},
		{"absolute", manifestOf(object("i", "1", "/etc/passwd", "")), nil, "absolute"},
		{"backslash", manifestOf(object("j", "1", `.\GRANULE\x`, "")), nil, "backslash"},
		{"twice", manifestOf(object("k", "1", "./k", "") + object("l", "2", "k", "")), nil, `dataObject "l": k listed twice`},
		// One file on a case-insensitive file system (SMB, casefold
		// ext4): which bytes it held would depend on the order of writes.
		{"twice but for letter case", manifestOf(object("k", "1", "./GRANULE/a.jp2", "") + object("l", "2", "./granule/A.JP2", "")), nil, `dataObject "l": granule/A.JP2 listed twice`},
		{"negative size", manifestOf(object("m", "-1", "./m", "")), nil, `size "-1"`},
		{"size not a number", manifestOf(object("n", "1e6", "./n", "")), nil, `size "1e6"`},
		{"short md5", manifestOf(object("o", "1", "./o", `<checksum checksumName="MD5">abc</checksum>`)), nil, "MD5 checksum"},
		{"md5 not hex", manifestOf(object("p", "1", "./p", `<checksum checksumName="MD5">`+strings.Repeat("zz", 16)+`</checksum>`)), nil, "MD5 checksum"},
		{"two locations", manifestOf(`<dataObject ID="q"><byteStream><fileLocation href="./a"/><fileLocation href="./b"/></byteStream></dataObject>`), nil, "more than one fileLocation"},
		{"malformed", manifestOf(object("r", "1", "./r", ""))[:200], nil, "XML syntax error"},
		{"other encoding", strings.Replace(manifestOf(""), "UTF-8", "UTF-16", 1), nil, "UTF-16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse(strings.NewReader(tt.doc))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(m.Entries) != fmt.Sprint(tt.want) {
				t.Errorf("entries\n got %+v\nwant %+v", m.Entries, tt.want)
			}
		})
	}
}

// TestParseBounds: a manifest over its byte or entry bound is refused
// with ErrTooLarge, one exactly at them is read.
func TestParseBounds(t *testing.T) {
	var objs strings.Builder
	for i := range 10 {
		objs.WriteString(object(fmt.Sprint(i), "1", fmt.Sprintf("./f%d", i), ""))
	}
	doc := manifestOf(objs.String())
	if m, err := ParseLimits(strings.NewReader(doc), Limits{Bytes: int64(len(doc)), Entries: 10}); err != nil || len(m.Entries) != 10 {
		t.Fatalf("at the bounds: %v", err)
	}
	if _, err := ParseLimits(strings.NewReader(doc), Limits{Bytes: int64(len(doc)) - 1}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a byte over: %v", err)
	}
	if _, err := ParseLimits(strings.NewReader(doc), Limits{Entries: 9}); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "more than 9 files") {
		t.Errorf("an entry over: %v", err)
	}
	// The package's own bound: a manifest of MaxBytes of comment and more
	// stops at MaxBytes, whatever follows.
	huge := manifestOf("<!--" + strings.Repeat("x", MaxBytes) + "-->")
	r := &countingReader{r: strings.NewReader(huge)}
	if _, err := Parse(r); !errors.Is(err, ErrTooLarge) || r.n > MaxBytes+64<<10 {
		t.Errorf("past MaxBytes: %v after %d bytes", err, r.n)
	}
	deep := `<xfdu:XFDU xmlns:xfdu="urn:ccsds:schema:xfdu:1">` + strings.Repeat("<a>", maxDepth) + strings.Repeat("</a>", maxDepth) + `</xfdu:XFDU>`
	if _, err := Parse(strings.NewReader(deep)); err == nil || !strings.Contains(err.Error(), "nested") {
		t.Errorf("deep: %v", err)
	}
}

type countingReader struct {
	r interface{ Read([]byte) (int, error) }
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestName(t *testing.T) {
	for name, want := range map[string]string{
		"S2B_MSIL2A_20250614T101559_N0511_R022_T32TQM_20250614T120500.SAFE":                                   SAFE,
		"S1A_IW_GRDH_1SDV_20250301T054012_20250301T054037_058112_072C4B_1A2B_COG.SAFE":                        SAFE,
		"S3A_OL_1_EFR____20250702T093015_20250702T093315_20250702T112233_0179_128_036_2160_PS1_O_NR_004.SEN3": SEN3,
		"S5P_NRTI_L2__NO2____20250702T093015_20250702T093515_39876_03_020600_20250702T101010.nc":              "",
		"S2B_MSIL2A_x.safe": "",
		"":                  "",
	} {
		if got := Name(name); got != want {
			t.Errorf("Name(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestSafePath(t *testing.T) {
	long := strings.Repeat("a", MaxElementLen)
	for p, want := range map[string]string{ // want: the elements joined by |, or "!" and a part of the error
		"MTD_MSIL2A.xml": "MTD_MSIL2A.xml",
		"GRANULE/L2A_T32TQM_A043120_20250614T101601/IMG_DATA/R10m/T32TQM_20250614T101559_B02_10m.jp2": "GRANULE|L2A_T32TQM_A043120_20250614T101601|IMG_DATA|R10m|T32TQM_20250614T101559_B02_10m.jp2",
		long:                                     long,
		long + "a":                               "!201 bytes",
		"":                                       "!empty",
		"/etc/passwd":                            "!absolute",
		"a//b":                                   "!element 2",
		"a/":                                     "!element 2",
		"./a":                                    "!starts with a dot",
		"a/./b":                                  "!starts with a dot",
		"a/../b":                                 "!starts with a dot",
		"..":                                     "!starts with a dot",
		".hidden":                                "!starts with a dot",
		`a\b`:                                    "!backslash",
		"a b":                                    "!U+0020",
		"caf\u00e9":                              "!U+00E9",
		"a\u202eb":                               "!U+202E",
		"a:b":                                    "!U+003A",
		strings.Repeat("a/", MaxPathDepth) + "a": "!elements",
		strings.Repeat("abcdefgh/", 120):         "!bytes, more than 1024",
	} {
		els, err := SafePath(p)
		switch {
		case strings.HasPrefix(want, "!"):
			if err == nil || !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), want[1:]) {
				t.Errorf("SafePath(%.40q) = %v, %v; want an error with %q", p, els, err, want[1:])
			}
		case err != nil || strings.Join(els, "|") != want:
			t.Errorf("SafePath(%.40q) = %q, %v", p, els, err)
		}
	}
}

// TestParseDoesNotExpandEntities: a DTD's entities are not expanded (the
// decoder knows none), so a "billion laughs" manifest is an error, not a
// gigabyte.
func TestParseDoesNotExpandEntities(t *testing.T) {
	doc := `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>` +
		manifestOf(object("x", "1", "./&b;", ""))[len(`<?xml version="1.0" encoding="UTF-8"?>`):]
	if _, err := Parse(bytes.NewReader([]byte(doc))); err == nil {
		t.Error("an undefined entity was accepted")
	}
}
