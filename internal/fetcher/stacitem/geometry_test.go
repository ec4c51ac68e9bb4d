package stacitem

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/testkit/stacschema"
)

// withFootprint is the S2 fixture's product with the GeoFootprint and
// Footprint given ("" leaves the member out).
func withFootprint(t testing.TB, geoJSON, wkt string) *event.Notification {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(fixtureData(t, "created-s2.json"), &d); err != nil {
		t.Fatal(err)
	}
	v := d["value"].(map[string]any)
	delete(v, "GeoFootprint")
	delete(v, "Footprint")
	if geoJSON != "" {
		v["GeoFootprint"] = json.RawMessage(geoJSON)
	}
	if wkt != "" {
		v["Footprint"] = wkt
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, b)
}

func footprintItem(t *testing.T, v validator, geoJSON, wkt string) map[string]any {
	t.Helper()
	n := withFootprint(t, geoJSON, wkt)
	return build(t, v, Input{Product: n, Assets: []Asset{productAsset(n, "9f1a4c0c2d7b6e0f3a8b1c2d3e4f5a6b")}})
}

// TestNoFootprint: a product without a footprint has a null geometry and
// no bbox, which STAC allows.
func TestNoFootprint(t *testing.T) {
	m := footprintItem(t, newValidator(t), "", "")
	if g, ok := m["geometry"]; !ok || g != nil {
		t.Errorf("geometry %v", g)
	}
	if b, ok := m["bbox"]; ok {
		t.Errorf("bbox %v", b)
	}
}

// TestFootprintWKT: without a GeoFootprint, the OData literal of
// Footprint gives the same geometry.
func TestFootprintWKT(t *testing.T) {
	v := newValidator(t)
	var d struct {
		Value struct {
			Footprint    string
			GeoFootprint json.RawMessage
		} `json:"value"`
	}
	if err := json.Unmarshal(fixtureData(t, "created-s2.json"), &d); err != nil {
		t.Fatal(err)
	}
	fromWKT := footprintItem(t, v, "", d.Value.Footprint)
	fromGeoJSON := footprintItem(t, v, string(d.Value.GeoFootprint), "")
	if !reflect.DeepEqual(fromWKT["geometry"], fromGeoJSON["geometry"]) || !reflect.DeepEqual(fromWKT["bbox"], fromGeoJSON["bbox"]) {
		t.Errorf("from WKT %v %v,\nfrom GeoJSON %v %v", fromWKT["geometry"], fromWKT["bbox"], fromGeoJSON["geometry"], fromGeoJSON["bbox"])
	}
	if g := fromWKT["geometry"].(map[string]any); g["type"] != "Polygon" || len(g["coordinates"].([]any)[0].([]any)) != 49 {
		t.Errorf("geometry %v", g)
	}
}

// TestAntimeridian: a footprint across the antimeridian becomes a
// MultiPolygon of a piece on each side, cut at exactly ±180 (RFC 7946
// 3.1.9), with a bbox whose west is greater than its east (RFC 7946 5.2);
// one that does not cross is kept as it is.
func TestAntimeridian(t *testing.T) {
	v := newValidator(t)
	for _, tc := range []struct {
		name, geoJSON, wkt string
		typ                string
		pieces             [][4]float64 // each polygon's envelope: west, south, east, north
		bbox               []any
	}{{
		name:    "rectangle over the antimeridian",
		geoJSON: `{"type":"Polygon","coordinates":[[[178,-16],[-179,-16],[-179,-14],[178,-14],[178,-16]]]}`,
		typ:     "MultiPolygon", pieces: [][4]float64{{178, -16, 180, -14}, {-180, -16, -179, -14}},
		bbox: []any{178.0, -16.0, -179.0, -14.0},
	}, {
		// Slanted edges: the cut latitudes are interpolated, (179, -10)
		// to (-179, -12) crosses at -11.
		name: "slanted edges, from the WKT",
		wkt:  "geography'SRID=4326;POLYGON ((179 -10, -179 -12, -179 -8, 179 -6, 179 -10))'",
		typ:  "MultiPolygon", pieces: [][4]float64{{179, -11, 180, -6}, {-180, -12, -179, -7}},
		bbox: []any{179.0, -12.0, -179.0, -6.0},
	}, {
		name:    "written unwrapped, beyond 180",
		geoJSON: `{"type":"Polygon","coordinates":[[[170,60],[190,60],[190,65],[170,65],[170,60]]]}`,
		typ:     "MultiPolygon", pieces: [][4]float64{{170, 60, 180, 65}, {-180, 60, -170, 65}},
		bbox: []any{170.0, 60.0, -170.0, 65.0},
	}, {
		// Once round the North Pole: closed along the pole, the whole
		// span of longitudes.
		name:    "round a pole",
		geoJSON: `{"type":"Polygon","coordinates":[[[0,80],[90,80],[180,80],[-90,80],[0,80]]]}`,
		typ:     "MultiPolygon", pieces: [][4]float64{{0, 80, 180, 90}, {-180, 80, 0, 90}},
		bbox: []any{-180.0, 80.0, 180.0, 90.0},
	}, {
		name:    "already split by the catalogue",
		geoJSON: `{"type":"MultiPolygon","coordinates":[[[[170,0],[180,0],[180,5],[170,5],[170,0]]],[[[-180,0],[-175,0],[-175,5],[-180,5],[-180,0]]]]}`,
		typ:     "MultiPolygon", pieces: [][4]float64{{170, 0, 180, 5}, {-180, 0, -175, 5}},
		bbox: []any{170.0, 0.0, -175.0, 5.0},
	}, {
		name:    "not crossing, near it",
		geoJSON: `{"type":"Polygon","coordinates":[[[-179.5,10],[-170,10],[-170,12],[-179.5,12],[-179.5,10]]]}`,
		typ:     "Polygon", pieces: [][4]float64{{-179.5, 10, -170, 12}},
		bbox: []any{-179.5, 10.0, -170.0, 12.0},
	}, {
		name:    "two areas, no crossing",
		geoJSON: `{"type":"MultiPolygon","coordinates":[[[[10,0],[20,0],[20,1],[10,0]]],[[[30,0],[40,0],[40,1],[30,0]]]]}`,
		typ:     "MultiPolygon", pieces: [][4]float64{{10, 0, 20, 1}, {30, 0, 40, 1}},
		bbox: []any{10.0, 0.0, 40.0, 1.0},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			m := footprintItem(t, v, tc.geoJSON, tc.wkt)
			g := m["geometry"].(map[string]any)
			if g["type"] != tc.typ {
				t.Fatalf("type %v, want %s", g["type"], tc.typ)
			}
			polys := g["coordinates"].([]any)
			if tc.typ == "Polygon" {
				polys = []any{polys}
			}
			if len(polys) != len(tc.pieces) {
				t.Fatalf("%d polygons, want %d: %v", len(polys), len(tc.pieces), polys)
			}
			for i, p := range polys {
				ring := p.([]any)[0].([]any)
				if !reflect.DeepEqual(ring[0], ring[len(ring)-1]) || len(ring) < 4 {
					t.Errorf("piece %d: ring not closed: %v", i, ring)
				}
				env := [4]float64{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
				for _, q := range ring {
					x, y := q.([]any)[0].(float64), q.([]any)[1].(float64)
					env = [4]float64{min(env[0], x), min(env[1], y), max(env[2], x), max(env[3], y)}
				}
				for j := range env {
					if math.Abs(env[j]-tc.pieces[i][j]) > 1e-9 {
						t.Errorf("piece %d: envelope %v, want %v", i, env, tc.pieces[i])
						break
					}
				}
				// The cut lies at ±180 exactly, not near it.
				for _, edge := range []float64{tc.pieces[i][0], tc.pieces[i][2]} {
					if math.Abs(edge) == 180 && env[0] != edge && env[2] != edge {
						t.Errorf("piece %d: no position at exactly %v: %v", i, edge, ring)
					}
				}
			}
			if !reflect.DeepEqual(m["bbox"], tc.bbox) {
				t.Errorf("bbox %v, want %v", m["bbox"], tc.bbox)
			}
		})
	}
}

// TestValidatorRejects: the validation the other tests rely on can fail:
// each item below is a valid one broken in one place, and is refused. The
// look-ahead patterns of the extensions (^(?!file:)) must work for the
// unknown file: field to be refused.
func TestValidatorRejects(t *testing.T) {
	v := newValidator(t)
	item := func(file string) map[string]any {
		n := decode(t, fixtureData(t, file))
		doc, err := Item(Input{Product: n, ODataURL: odata, Assets: []Asset{productAsset(n, "9f1a4c0c2d7b6e0f3a8b1c2d3e4f5a6b")}})
		if err != nil {
			t.Fatal(err)
		}
		if err := v.item(doc); err != nil {
			t.Fatalf("the unbroken item is not valid: %v", err)
		}
		var m map[string]any
		if err := json.Unmarshal(doc, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	props := func(m map[string]any) map[string]any { return m["properties"].(map[string]any) }
	asset := func(m map[string]any) map[string]any { return m["assets"].(map[string]any)["product"].(map[string]any) }
	for name, tc := range map[string]struct {
		file   string
		by     string // the schema that refuses it
		break_ func(m map[string]any)
	}{
		"platform not a string":       {"created-s2.json", stacschema.ItemSchema, func(m map[string]any) { props(m)["platform"] = 2 }},
		"datetime not in UTC":         {"created-s2.json", stacschema.ItemSchema, func(m map[string]any) { props(m)["datetime"] = "2026-11-21T11:33:19+01:00" }},
		"no datetime":                 {"created-s2.json", stacschema.ItemSchema, func(m map[string]any) { delete(props(m), "datetime") }},
		"start without end":           {"created-s2.json", stacschema.ItemSchema, func(m map[string]any) { delete(props(m), "end_datetime") }},
		"geometry without bbox":       {"created-s2.json", stacschema.ItemSchema, func(m map[string]any) { delete(m, "bbox") }},
		"collection without its link": {"created-s2.json", stacschema.ItemSchema, func(m map[string]any) { m["links"] = m["links"].([]any)[1:] }},
		"ring of three positions": {"created-s2.json", stacschema.ItemSchema, func(m map[string]any) {
			m["geometry"] = json.RawMessage(`{"type":"Polygon","coordinates":[[[0,0],[1,1],[0,0]]]}`)
		}},
		"checksum in upper case":       {"created-s2.json", ExtFile, func(m map[string]any) { asset(m)["file:checksum"] = "D5109F1A4C0C2D7B6E0F3A8B1C2D3E4F5A6B" }},
		"size negative":                {"created-s2.json", ExtFile, func(m map[string]any) { asset(m)["file:size"] = -1 }},
		"unknown file: field":          {"created-s2.json", ExtFile, func(m map[string]any) { asset(m)["file:md5"] = "9f1a" }},
		"orbit state in upper case":    {"created-s1.json", ExtSat, func(m map[string]any) { props(m)["sat:orbit_state"] = "DESCENDING" }},
		"relative orbit 0":             {"created-s1.json", ExtSat, func(m map[string]any) { props(m)["sat:relative_orbit"] = 0 }},
		"cloud cover over 100":         {"created-s2.json", ExtEO, func(m map[string]any) { props(m)["eo:cloud_cover"] = 101 }},
		"grid code without its system": {"created-s2.json", ExtGrid, func(m map[string]any) { props(m)["grid:code"] = "32TQM" }},
		"utm zone a string":            {"created-s2.json", ExtMGRS, func(m map[string]any) { props(m)["mgrs:utm_zone"] = "32" }},
		"no latitude band":             {"created-s2.json", ExtMGRS, func(m map[string]any) { delete(props(m), "mgrs:latitude_band") }},
		"category without timeliness":  {"created-s3.json", ExtProduct, func(m map[string]any) { delete(props(m), "product:timeliness") }},
		"timeliness not a duration":    {"created-s3.json", ExtProduct, func(m map[string]any) { props(m)["product:timeliness"] = "3 hours" }},
		"processing level a number":    {"created-s3.json", ExtProcessing, func(m map[string]any) { props(m)["processing:level"] = 1 }},
		"processing datetime local":    {"created-s1.json", ExtProcessing, func(m map[string]any) { props(m)["processing:datetime"] = "2026-11-21T07:21:02+01:00" }},
	} {
		m := item(tc.file)
		tc.break_(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.item(b); err == nil {
			t.Errorf("%s: accepted", name)
		} else if !strings.Contains(err.Error(), tc.by+": ") {
			t.Errorf("%s: not refused by %s: %v", name, tc.by, err)
		}
	}
}
