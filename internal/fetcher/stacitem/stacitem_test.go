package stacitem

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/event"
)

const odata = "https://catalogue.dataspace.copernicus.eu/odata/v1"

var stored = time.Date(2026, 11, 21, 14, 2, 3, 0, time.UTC)

// fixtureData is a notification of testdata/notifications.
func fixtureData(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "notifications", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decode(t testing.TB, data []byte) *event.Notification {
	t.Helper()
	n, err := event.DecodeData(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// productAsset is the product as the fetcher stores it: one zip, its MD5
// the catalogue's.
func productAsset(n *event.Notification, md5 string) Asset {
	return Asset{Key: "product", Href: "s3://products/" + n.ProductName + ".zip", Size: n.ContentLength, MD5: md5}
}

// build makes the item of in, validates it, and decodes it.
func build(t *testing.T, v validator, in Input) map[string]any {
	t.Helper()
	doc, err := Item(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.item(doc); err != nil {
		t.Fatalf("the item is not valid STAC: %v\n%s", err, doc)
	}
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestItemMapping builds the item of each real notification and checks
// the values a quick reading gets wrong, and that each item is valid
// against the STAC 1.1.0 item schema and every extension it declares.
func TestItemMapping(t *testing.T) {
	v := newValidator(t)
	for _, tc := range []struct {
		file, md5  string
		id, coll   string
		exts       []string
		props      map[string]any // exact values (JSON numbers are float64)
		absent     []string
		bbox       []any
		checksum   string
		assetType  string
		selfLinked bool
	}{{
		file: "created-s2.json", md5: "9f1a4c0c2d7b6e0f3a8b1c2d3e4f5a6b",
		id: "S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945", coll: "sentinel-2-l2a",
		exts: []string{ExtFile, ExtSat, ExtEO, ExtProcessing, ExtGrid, ExtMGRS, ExtProduct},
		props: map[string]any{
			"platform": "sentinel-2b", "constellation": "sentinel-2", "instruments": []any{"msi"},
			"processing:level": "L2A", "processing:version": "05.11", "processing:datetime": "2026-11-21T13:29:45Z",
			"sat:relative_orbit": 108.0, "sat:absolute_orbit": 40512.0, "eo:cloud_cover": 12.3456789,
			"grid:code": "MGRS-32TQM", "mgrs:utm_zone": 32.0, "mgrs:latitude_band": "T", "mgrs:grid_square": "QM",
			"product:type": "S2MSI2A",
			"datetime":     "2026-11-21T10:33:19.024Z", "start_datetime": "2026-11-21T10:33:19.024Z", "end_datetime": "2026-11-21T10:33:19.024Z",
			"created": "2026-11-21T13:55:12.123456Z", "updated": "2026-11-21T13:55:12.123456Z",
		},
		absent:   []string{"sat:orbit_state", "product:timeliness", "product:timeliness_category"},
		bbox:     []any{11.5, 45.0, 12.6, 46.0},
		checksum: "d5109f1a4c0c2d7b6e0f3a8b1c2d3e4f5a6b", assetType: "application/zip",
	}, {
		file: "created-s2-checksums-compact.json", md5: "C2A5D1B7E9F3046A8B2C4D6E8F0A1B3C",
		id: "S2C_MSIL1C_20261122T101301_N0511_R022_T32TNS_20261122T121935", coll: "sentinel-2-l1c",
		exts: []string{ExtFile, ExtSat, ExtEO, ExtProcessing, ExtGrid, ExtMGRS, ExtProduct},
		props: map[string]any{
			"platform": "sentinel-2c", "constellation": "sentinel-2", "instruments": []any{"msi"},
			"processing:level": "L1C", "sat:relative_orbit": 22.0, "eo:cloud_cover": 12.34567891234,
			"grid:code": "MGRS-32TNS", "mgrs:utm_zone": 32.0, "mgrs:latitude_band": "T", "mgrs:grid_square": "NS",
			"product:type": "S2MSI1C", "datetime": "2026-11-22T10:13:01.024Z",
		},
		absent:   []string{"sat:absolute_orbit", "processing:version", "product:timeliness_category"},
		bbox:     []any{-3.312, 39.524, -1.742, 40.734},
		checksum: "d510c2a5d1b7e9f3046a8b2c4d6e8f0a1b3c", assetType: "application/zip",
	}, {
		file: "created-s1.json", md5: "9f1a4c0c2d7b6e0f3a8b1c2d3e4f5a6b",
		id: "S1A_IW_GRDH_1SDV_20261121T054512_20261121T054537_061234_07A1B2_C3D4_COG", coll: "cdse-iw-grdh-1s-cog",
		exts: []string{ExtFile, ExtSat, ExtProcessing, ExtProduct},
		props: map[string]any{
			"platform": "sentinel-1a", "constellation": "sentinel-1", "instruments": []any{"c-sar"},
			"processing:level": "L1", "processing:version": "003.91", "processing:datetime": "2026-11-21T06:21:02.761Z",
			"sat:orbit_state": "descending", "sat:relative_orbit": 88.0, "sat:absolute_orbit": 61234.0, "sat:orbit_cycle": 342.0,
			"product:type": "IW_GRDH_1S-COG", "product:timeliness_category": "NRT-3h", "product:timeliness": "PT3H",
			"datetime": "2026-11-21T05:45:12.345Z", "start_datetime": "2026-11-21T05:45:12.345Z", "end_datetime": "2026-11-21T05:45:37.344Z",
			"created": "2026-11-21T06:40:03.512Z",
		},
		absent:   []string{"eo:cloud_cover", "grid:code", "mgrs:utm_zone"},
		checksum: "d5109f1a4c0c2d7b6e0f3a8b1c2d3e4f5a6b", assetType: "application/zip",
	}, {
		// A Sentinel-1 product with a cloudCover attribute (0.0004):
		// no eo:cloud_cover on a radar image, and no timeliness.
		file: "created-s1-push-ackid.json",
		id:   "S1C_IW_GRDH_1SDV_20261122T061512_20261122T061537_001234_0A1B2C_9F3E_COG", coll: "cdse-iw-grdh-1s-cog",
		exts: []string{ExtFile, ExtSat, ExtProcessing, ExtProduct},
		props: map[string]any{
			"platform": "sentinel-1c", "constellation": "sentinel-1", "instruments": []any{"c-sar"}, "processing:level": "L1",
			"sat:orbit_state": "descending", "sat:relative_orbit": 154.0, "sat:absolute_orbit": 1234.0,
		},
		absent:    []string{"eo:cloud_cover", "product:timeliness", "product:timeliness_category", "sat:orbit_cycle"},
		assetType: "application/zip", selfLinked: true,
	}, {
		file: "created-s3.json", md5: "9f1a4c0c2d7b6e0f3a8b1c2d3e4f5a6b",
		id: "S3A_OL_1_EFR____20261121T091512_20261121T091812_20261121T111533_0179_115_207_2160_PS1_O_NR_004", coll: "cdse-ol-1-efr",
		exts: []string{ExtFile, ExtSat, ExtEO, ExtProcessing, ExtProduct},
		props: map[string]any{
			"platform": "sentinel-3a", "constellation": "sentinel-3", "instruments": []any{"olci"}, "processing:level": "L1",
			"sat:orbit_state": "descending", "sat:relative_orbit": 207.0, "sat:absolute_orbit": 46012.0, "eo:cloud_cover": 48.0,
			"product:type": "OL_1_EFR___", "product:timeliness_category": "NR", "product:timeliness": "PT3H",
			"datetime": "2026-11-21T09:15:12.123456Z", "end_datetime": "2026-11-21T09:18:12.123456Z",
		},
		absent:   []string{"grid:code", "processing:version"},
		checksum: "d5109f1a4c0c2d7b6e0f3a8b1c2d3e4f5a6b", assetType: "application/zip",
	}, {
		file: "created-s5p.json", md5: "9f1a4c0c2d7b6e0f3a8b1c2d3e4f5a6b",
		id: "S5P_NRTI_L2__NO2____20261121T120031_20261121T120531_36789_03_020600_20261121T124151", coll: "cdse-l2-no2",
		exts: []string{ExtFile, ExtSat, ExtProcessing, ExtProduct},
		props: map[string]any{
			"platform": "sentinel-5p", "instruments": []any{"tropomi"}, "processing:level": "L2", "processing:version": "020600",
			"sat:absolute_orbit": 36789.0, "product:type": "L2__NO2___",
			"product:timeliness_category": "NRTI", "product:timeliness": "PT3H",
			"start_datetime": "2026-11-21T12:00:31Z", "end_datetime": "2026-11-21T12:05:31Z",
		},
		absent:   []string{"constellation", "sat:orbit_state", "sat:relative_orbit", "eo:cloud_cover"},
		bbox:     []any{-60.0, -20.0, -58.9, -19.0},
		checksum: "d5109f1a4c0c2d7b6e0f3a8b1c2d3e4f5a6b", assetType: "application/zip",
	}} {
		t.Run(tc.file, func(t *testing.T) {
			n := decode(t, fixtureData(t, tc.file))
			in := Input{Product: n, Assets: []Asset{productAsset(n, tc.md5)}, ODataURL: odata + "/", Stored: stored}
			if tc.selfLinked {
				in.SelfHref = "https://stac.example.org/collections/" + tc.coll + "/items/" + tc.id
			}
			m := build(t, v, in)
			if m["id"] != tc.id || m["collection"] != tc.coll || m["stac_version"] != "1.1.0" || m["type"] != "Feature" {
				t.Errorf("id %v, collection %v, stac_version %v, type %v", m["id"], m["collection"], m["stac_version"], m["type"])
			}
			if got := strings.Fields(strings.Trim(strings.ReplaceAll(toJSON(t, m["stac_extensions"]), ",", " "), "[]")); !reflect.DeepEqual(got, quoted(tc.exts)) {
				t.Errorf("stac_extensions %v, want %v", got, tc.exts)
			}
			props := m["properties"].(map[string]any)
			for k, want := range tc.props {
				if got, ok := props[k]; !ok || !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %#v, want %#v", k, got, want)
				}
			}
			for _, k := range tc.absent {
				if got, ok := props[k]; ok {
					t.Errorf("%s = %#v, want it left out", k, got)
				}
			}
			if tc.bbox != nil && !reflect.DeepEqual(m["bbox"], tc.bbox) {
				t.Errorf("bbox %v, want %v", m["bbox"], tc.bbox)
			}
			a := m["assets"].(map[string]any)["product"].(map[string]any)
			if tc.checksum == "" {
				if _, ok := a["file:checksum"]; ok {
					t.Errorf("file:checksum %v without a verified MD5", a["file:checksum"])
				}
			} else if a["file:checksum"] != tc.checksum {
				t.Errorf("file:checksum %v, want %s", a["file:checksum"], tc.checksum)
			}
			if a["type"] != tc.assetType || a["file:size"] != float64(n.ContentLength) || a["created"] != "2026-11-21T14:02:03Z" ||
				!reflect.DeepEqual(a["roles"], []any{"data"}) || a["href"] != "s3://products/"+n.ProductName+".zip" {
				t.Errorf("asset %v", a)
			}
			links := linksByRel(m)
			if got := links["via"]; got != odata+"/Products("+n.ProductID+")" {
				t.Errorf("via %q", got)
			}
			if links["collection"] != "../collection.json" {
				t.Errorf("collection link %q", links["collection"])
			}
			if _, ok := links["self"]; ok != tc.selfLinked {
				t.Errorf("self link %q", links["self"])
			}
		})
	}
}

func toJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = `"` + s + `"`
	}
	return out
}

func linksByRel(m map[string]any) map[string]string {
	out := map[string]string{}
	for _, l := range m["links"].([]any) {
		l := l.(map[string]any)
		out[l["rel"].(string)] = l["href"].(string)
	}
	return out
}

// TestAssets: one asset per stored object, its media type from its
// extension, its role, its href escaped, and no file: fields it was not
// given; a predecessor-version link when the item supersedes another.
func TestAssets(t *testing.T) {
	v := newValidator(t)
	n := decode(t, fixtureData(t, "created-s2.json"))
	dir := "file:///data/cdse store/" + n.ProductName
	m := build(t, v, Input{Product: n, ODataURL: odata, Predecessor: "https://stac.example.org/collections/sentinel-2-l2a/items/old",
		Assets: []Asset{
			{Key: "manifest", Href: dir + "/manifest.safe", Size: 70123, MD5: "00112233445566778899aabbccddeeff", Role: "metadata"},
			{Key: "metadata", Href: dir + "/MTD_MSIL2A.xml", Size: 54321, Role: "metadata"},
			{Key: "B04", Href: dir + "/GRANULE/L2A/IMG_DATA/R10m/T32TQM_B04_10m.jp2", Size: 1 << 27},
			{Key: "cog", Href: dir + "/B04.TIF", Size: 0},
			{Key: "nc", Href: "s3://b/p/x.nc", Size: -1},
			{Key: "other", Href: "s3://b/p/x.bin", Size: -1},
			{Key: "typed", Href: "s3://b/p/x.bin", Size: -1, MediaType: "application/vnd+zarr"},
		}})
	assets := m["assets"].(map[string]any)
	for key, want := range map[string]struct {
		typ, role string
		size      any
	}{
		"manifest": {"application/xml", "metadata", 70123.0},
		"metadata": {"application/xml", "metadata", 54321.0},
		"B04":      {"image/jp2", "data", float64(1 << 27)},
		"cog":      {"image/tiff", "data", 0.0},
		"nc":       {"application/x-netcdf", "data", nil},
		"other":    {"application/octet-stream", "data", nil},
		"typed":    {"application/vnd+zarr", "data", nil},
	} {
		a := assets[key].(map[string]any)
		if a["type"] != want.typ || !reflect.DeepEqual(a["roles"], []any{want.role}) || a["file:size"] != want.size {
			t.Errorf("%s: %v, want %+v", key, a, want)
		}
		if _, ok := a["created"]; ok {
			t.Errorf("%s: created without a Stored time", key)
		}
	}
	if got := assets["manifest"].(map[string]any)["file:checksum"]; got != "d51000112233445566778899aabbccddeeff" {
		t.Errorf("manifest checksum %v", got)
	}
	if _, ok := assets["metadata"].(map[string]any)["file:checksum"]; ok {
		t.Error("a checksum on an asset given none")
	}
	if got := assets["metadata"].(map[string]any)["href"]; got != "file:///data/cdse%20store/"+n.ProductName+"/MTD_MSIL2A.xml" {
		t.Errorf("href %v", got)
	}
	if got := linksByRel(m)["predecessor-version"]; got != "https://stac.example.org/collections/sentinel-2-l2a/items/old" {
		t.Errorf("predecessor-version %q", got)
	}

	// Only the file: fields given make the file extension declared.
	m = build(t, v, Input{Product: n, Assets: []Asset{{Key: "p", Href: "s3://b/k.zip", Size: -1}}})
	if slices.Contains(m["stac_extensions"].([]any), any(ExtFile)) {
		t.Error("the file extension declared without a file: field")
	}
	if _, ok := linksByRel(m)["via"]; ok {
		t.Error("a via link without an OData URL")
	}
}

// TestItemRefuses: what cannot make a valid item is an error, not an item.
func TestItemRefuses(t *testing.T) {
	n := decode(t, fixtureData(t, "created-s2.json"))
	ok := Asset{Key: "p", Href: "s3://b/k.zip", Size: 1}
	noStart := *n
	noStart.ContentStart = time.Time{}
	noName := *n
	noName.ProductName = ""
	for name, in := range map[string]Input{
		"no product":     {Assets: []Asset{ok}},
		"no name":        {Product: &noName, Assets: []Asset{ok}},
		"no assets":      {Product: n},
		"no datetime":    {Product: &noStart, Assets: []Asset{ok}},
		"duplicate key":  {Product: n, Assets: []Asset{ok, ok}},
		"empty key":      {Product: n, Assets: []Asset{{Href: "s3://b/k", Size: 1}}},
		"relative href":  {Product: n, Assets: []Asset{{Key: "p", Href: "b/k.zip", Size: 1}}},
		"short MD5":      {Product: n, Assets: []Asset{{Key: "p", Href: "s3://b/k", Size: 1, MD5: "9f1a"}}},
		"non-hex MD5":    {Product: n, Assets: []Asset{{Key: "p", Href: "s3://b/k", Size: 1, MD5: "zz1a4c0c2d7b6e0f3a8b1c2d3e4f5a6b"}}},
		"unknown role":   {Product: n, Assets: []Asset{{Key: "p", Href: "s3://b/k", Size: 1, Role: "daat"}}},
		"relative self":  {Product: n, Assets: []Asset{ok}, SelfHref: "items/x.json"},
		"spaced link":    {Product: n, Assets: []Asset{ok}, Predecessor: "https://x/items/a b"},
		"relative OData": {Product: n, Assets: []Asset{ok}, ODataURL: "odata/v1"},
		"open ring":      {Product: withFootprint(t, `{"type":"Polygon","coordinates":[[[1,2],[3,4],[4,2],[1,3]]]}`, ""), Assets: []Asset{ok}},
		"footprint type": {Product: withFootprint(t, `{"type":"Point","coordinates":[1,2]}`, ""), Assets: []Asset{ok}},
		"latitude 91":    {Product: withFootprint(t, `{"type":"Polygon","coordinates":[[[1,2],[3,91],[4,2],[1,2]]]}`, ""), Assets: []Asset{ok}},
		"SRID 3857":      {Product: withFootprint(t, "", "geography'SRID=3857;POLYGON ((1 2, 3 4, 4 2, 1 2))'"), Assets: []Asset{ok}},
		"bad WKT":        {Product: withFootprint(t, "", "geography'SRID=4326;POLYGON ((1 2, 3'"), Assets: []Asset{ok}},
	} {
		if doc, err := Item(in); err == nil {
			t.Errorf("%s: an item: %s", name, doc)
		}
	}
}

// TestCollection: a valid collection for each product type, with the id
// of the documented table or the derived one.
func TestCollection(t *testing.T) {
	v := newValidator(t)
	for typ, id := range map[string]string{
		"S2MSI1C": "sentinel-2-l1c", "S2MSI2A": "sentinel-2-l2a",
		"IW_GRDH_1S-COG": "cdse-iw-grdh-1s-cog", "OL_1_EFR___": "cdse-ol-1-efr", "L2__NO2___": "cdse-l2-no2",
		"__": "cdse-unknown",
	} {
		if got := CollectionID(typ); got != id {
			t.Errorf("CollectionID(%q) = %q, want %q", typ, got, id)
		}
		doc, err := Collection(typ)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.collection(doc); err != nil {
			t.Errorf("%s: %v\n%s", typ, err, doc)
		}
		var m map[string]any
		if err := json.Unmarshal(doc, &m); err != nil {
			t.Fatal(err)
		}
		ext := m["extent"].(map[string]any)
		if m["id"] != id || m["license"] != "other" ||
			toJSON(t, ext["spatial"]) != `{"bbox":[[-180,-90,180,90]]}` || toJSON(t, ext["temporal"]) != `{"interval":[[null,null]]}` {
			t.Errorf("%s: %s", typ, doc)
		}
		if linksByRel(m)["license"] != LicenseURL {
			t.Errorf("%s: no licence link", typ)
		}
	}
	if _, err := Collection(" "); err == nil {
		t.Error("a collection of no product type")
	}
	// The collection check fails what it should.
	for _, broken := range []string{
		`{"type":"Collection","stac_version":"1.1.0","id":"x","description":"d","license":"other","links":[],"extent":{"spatial":{"bbox":[[0,0,1]]},"temporal":{"interval":[[null,null]]}}}`,
		`{"type":"Collection","stac_version":"1.1.0","id":"x","description":"d","license":"other one","links":[],"extent":{"spatial":{"bbox":[[0,0,1,1]]},"temporal":{"interval":[[null,null]]}}}`,
		`{"type":"Collection","stac_version":"1.1.0","id":"x","description":"d","license":"other","links":[{"rel":"license"}],"extent":{"spatial":{"bbox":[[0,0,1,1]]},"temporal":{"interval":[[null,null]]}}}`,
		`{"type":"Collection","stac_version":"1.0.0","id":"x","license":"other","links":[],"extent":{}}`,
	} {
		if err := v.collection([]byte(broken)); err == nil {
			t.Errorf("accepted %s", broken)
		}
	}
}

func TestItemID(t *testing.T) {
	for name, id := range map[string]string{
		"S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE":     "S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945",
		"S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE.zip": "S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945",
		"S3A_SL_2_LST____20261121T091512_x.SEN3":                                "S3A_SL_2_LST____20261121T091512_x",
		"S5P_OFFL_L1B_RA_BD1_x.nc":                                              "S5P_OFFL_L1B_RA_BD1_x",
		"S1A_OPER_AUX_POEORB_x.EOF":                                             "S1A_OPER_AUX_POEORB_x",
		"plain":                                                                 "plain",
		".SAFE":                                                                 ".SAFE",
	} {
		if got := ItemID(name); got != id {
			t.Errorf("ItemID(%q) = %q, want %q", name, got, id)
		}
	}
}

// TestNameMappings: the mappings of names the fixtures do not cover.
func TestNameMappings(t *testing.T) {
	for _, tc := range []struct {
		name, short, serial, attr, mode string
		platform, constellation, level  string
		instruments                     []string
		category, duration              string
	}{
		{name: "S1B_EW_GRDM_1SDH_x", platform: "sentinel-1b", constellation: "sentinel-1", level: "L1", instruments: []string{"c-sar"}, attr: "Fast-24h", category: "Fast-24h", duration: "PT24H"},
		{name: "S1A_IW_RAW__0SDV_x", platform: "sentinel-1a", constellation: "sentinel-1", level: "L0", instruments: []string{"c-sar"}, attr: "NRT-10m", category: "NRT-10m", duration: "PT10M"},
		{name: "S1A_WV_OCN__2SSV_x", platform: "sentinel-1a", constellation: "sentinel-1", level: "L2", instruments: []string{"c-sar"}, attr: "Off-line"},
		{name: "S3B_SL_2_LST____20261121T091512_20261121T091812_20261121T111533_0179_115_207_2160_PS2_O_ST_004.SEN3", platform: "sentinel-3b", constellation: "sentinel-3", level: "L2", instruments: []string{"slstr"}, category: "ST", duration: "PT48H"},
		{name: "S3A_SR_2_LAN____x_LN3_O_NT_005.SEN3", platform: "sentinel-3a", constellation: "sentinel-3", level: "L2", instruments: []string{"sral"}, category: "NT", duration: "P1M"},
		{name: "S3A_SY_2_SYN____x_LN2_O_NT_002.SEN3", platform: "sentinel-3a", constellation: "sentinel-3", level: "L2", instruments: []string{"olci", "slstr"}, category: "NT", duration: "P1M"},
		{name: "S3__SY_2_V10____x_LN2_O_NT_002.SEN3", constellation: "sentinel-3", level: "L2", instruments: []string{"olci", "slstr"}, category: "NT", duration: "P1M"},
		{name: "S5P_OFFL_L1B_RA_BD1_x.nc", platform: "sentinel-5p", level: "L1B", instruments: []string{"tropomi"}, category: "OFFL", duration: "PT12H"},
		{name: "S5P_OFFL_L2__CH4____x.nc", platform: "sentinel-5p", level: "L2", instruments: []string{"tropomi"}},
		{name: "S5P_RPRO_L2__O3_____x.nc", platform: "sentinel-5p", level: "L2", instruments: []string{"tropomi"}},
		{name: "S2A_MSIL1B_x_T32TQM_y", platform: "sentinel-2a", constellation: "sentinel-2", level: "L1B", instruments: []string{"msi"}},
		{name: "S3A_OL_1_EFR____oddly_named.SEN3", attr: "ST", platform: "sentinel-3a", constellation: "sentinel-3", level: "L1", instruments: []string{"olci"}, category: "ST", duration: "PT48H"},
		// The attributes when the name says nothing.
		{name: "odd-name", short: "SENTINEL-2", serial: "B", platform: "sentinel-2b", constellation: "sentinel-2", instruments: []string{"msi"}},
		{name: "odd-name", short: "SENTINEL-5P", platform: "sentinel-5p", instruments: []string{"tropomi"}, mode: "NRTI", category: "NRTI", duration: "PT3H"},
	} {
		m, _ := missionOf(tc.name, tc.short, tc.serial)
		level := levelOf(m, tc.name)
		tl, _ := timelinessOf(m, tc.name, tc.attr, tc.mode, level)
		if m.platform != tc.platform || m.constellation != tc.constellation || level != tc.level ||
			!slices.Equal(instrumentsOf(m, tc.name), tc.instruments) || tl.category != tc.category || tl.duration != tc.duration {
			t.Errorf("%s: platform %q constellation %q level %q instruments %v timeliness %+v", tc.name,
				m.platform, m.constellation, level, instrumentsOf(m, tc.name), tl)
		}
	}
	if _, ok := missionOf("LC08_L1TP_x", "LANDSAT-8", ""); ok {
		t.Error("a mission of a Landsat name")
	}
	s2 := mission{n: '2'}
	for name, want := range map[string]string{
		"S2A_MSIL1C_x_T01CAA_y": "MGRS-01CAA", "S2A_MSIL1C_x_T60XVV_y": "MGRS-60XVV",
		"S2A_MSIL1C_x_T61CAA_y": "", "S2A_MSIL1C_x_T32IQM_y": "", "S2A_MSIL1C_x_T32TQW_y": "", "S2A_MSIL1C_x_32TQM_y": "",
	} {
		got := ""
		if tl, ok := tileOf(s2, name, ""); ok {
			got = tl.code()
		}
		if got != want {
			t.Errorf("%s: tile %q, want %q", name, got, want)
		}
	}
	if tl, ok := tileOf(s2, "no tile in the name", "33UVP"); !ok || tl.zone != 33 || tl.band != "U" || tl.square != "VP" {
		t.Errorf("tileId attribute: %+v %v", tl, ok)
	}
}
