package productfilter

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
)

func TestFromEntityFields(t *testing.T) {
	var fx fixture
	for _, f := range fixtures(t) {
		if f.name == s2L2A {
			fx = f
		}
	}
	p := fx.p
	date := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	checks := []struct {
		field     string
		got, want any
	}{
		{"ID", p.ID, "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f"},
		{"Name", p.Name, "S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE"},
		{"Collection", p.Collection, "SENTINEL-2"},
		{"ContentStart", p.ContentStart, date("2026-11-21T10:33:19.024Z")},
		{"ContentEnd", p.ContentEnd, date("2026-11-21T10:33:19.024Z")},
		{"PublicationDate", p.PublicationDate, date("2026-11-21T13:55:12.123456Z")},
		{"ModificationDate", p.ModificationDate, date("2026-11-21T13:55:12.123456Z")},
		{"OriginDate", p.OriginDate, date("2026-11-21T13:55:12.123456Z")},
		{"DeletionDate", p.DeletionDate, time.Time{}},
		{"Online", [2]bool{p.Online, p.HasOnline}, [2]bool{true, true}},
		{"ContentLength", p.ContentLength, int64(1132462080)},
		{"Attributes", len(p.Attributes), 23},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.field, c.got, c.want)
		}
	}
	attrs := []Attribute{
		{Name: "productType", Type: StringAttr, Str: "S2MSI2A"},
		{Name: "cloudCover", Type: DoubleAttr, Float: 12.3456789},
		{Name: "orbitNumber", Type: IntegerAttr, Int: 40512},
		{Name: "processingDate", Type: DateTimeOffsetAttr, Time: date("2026-11-21T13:29:45Z")},
	}
	for _, want := range attrs {
		got, ok := p.Attr(want.Name)
		if !ok || got.Type != want.Type || got.Str != want.Str || got.Float != want.Float || got.Int != want.Int || !got.Time.Equal(want.Time) {
			t.Errorf("Attr(%q) = %+v, %v; want %+v", want.Name, got, ok, want)
		}
	}
	if _, ok := p.Attr("nope"); ok {
		t.Error("Attr(nope) found")
	}
	g, err := p.Footprint()
	if err != nil || !g.IsPolygon() {
		t.Errorf("Footprint = %v, %v", g.Summary(), err)
	}
}

func TestFromEntityOddities(t *testing.T) {
	// Wrong types read as missing; only broken JSON is an error.
	raw := []byte(`{
		"Name": 5, "ContentLength": "big", "Online": "yes", "PublicationDate": "",
		"ModificationDate": "yesterday", "OriginDate": null, "ContentDate": "now", "Checksum": [{}],
		"EvictionDate": "", "Footprint": null, "Attributes": [
			{"Name": "a", "ValueType": "Integer", "Value": "x"},
			{"Name": "b", "ValueType": "Double", "Value": 1},
			{"Value": 5.0, "Name": "c", "@odata.type": "#OData.CSC.IntegerAttribute"},
			{"Name": "d", "ValueType": "Boolean", "Value": true},
			{"Name": "e", "ValueType": "Integer", "Value": 5.5},
			{"ValueType": "String", "Value": "no name"},
			{"Name": "platformShortName", "ValueType": "String", "Value": "LANDSAT-8"},
			{"Name": "f", "ValueType": "DateTimeOffset", "Value": "2024-06-04T12:03:49.113620Z"},
			{"Name": "g", "ValueType": "String", "Value": {"nested": [1, 2]}},
			{"Name": "h", "ValueType": "Boolean", "Value": "true"},
			{"Name": "i", "@odata.type": "#OData.CSC.BooleanAttribute", "Value": false},
			7
		]}`)
	keep := bytes.Clone(raw)
	p, err := FromEntity(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw, keep) {
		t.Error("FromEntity changed its input")
	}
	if p.Name != "" || p.HasContentLength || p.HasOnline || !p.PublicationDate.IsZero() || !p.ModificationDate.IsZero() || p.fp != nil {
		t.Errorf("wrong types not missing: %+v", p)
	}
	var names []string
	for _, a := range p.Attributes {
		names = append(names, a.Name+":"+a.Type.String())
	}
	if got, want := names, []string{"b:Double", "c:Integer", "d:Boolean", "platformShortName:String", "f:DateTimeOffset", "i:Boolean"}; !slices.Equal(got, want) {
		t.Errorf("attributes %v, want %v", got, want)
	}
	if p.Collection != "LANDSAT-8" {
		t.Errorf("Collection %q: platformShortName comes first", p.Collection)
	}

	for _, bad := range []string{``, `[]`, `"x"`, `{"Name": "x"`, `{"Name": "x"} {}`, `{"Name" "x"}`, `{"Attributes": [{"Name": }]}`} {
		if _, err := FromEntity([]byte(bad)); !errors.Is(err, ErrNotEntity) {
			t.Errorf("FromEntity(%q) = %v, want ErrNotEntity", bad, err)
		}
	}

	// No platformShortName, no known mission: no collection.
	p, _ = FromEntity([]byte(`{"Name": "LC08_L1TP_190024_20260101"}`))
	if p.Collection != "" {
		t.Errorf("Collection %q, want none", p.Collection)
	}
}

func TestFromEntityFootprints(t *testing.T) {
	tests := []struct {
		name, entity string
		want         string // WKT of Footprint(), "" for none
	}{
		{"Footprint", `{"Footprint": "geography'SRID=4326;POLYGON ((1 2, 3 2, 3 4, 1 2))'"}`, "POLYGON((1 2,3 2,3 4,1 2))"},
		{"Footprint MULTIPOLYGON", `{"Footprint": "geography'SRID=4326;MULTIPOLYGON (((1 2, 3 2, 3 4, 1 2)))'"}`, "MULTIPOLYGON(((1 2,3 2,3 4,1 2)))"},
		{"Footprint first, GeoFootprint ignored", `{"Footprint": "geography'SRID=4326;POINT (1 2)'", "GeoFootprint": {"type": "Point", "coordinates": [5, 6]}}`, "POINT(1 2)"},
		{"GeoFootprint first, Footprint wins", `{"GeoFootprint": {"type": "Point", "coordinates": [5, 6]}, "Footprint": "geography'SRID=4326;POINT (1 2)'"}`, "POINT(1 2)"},
		{"GeoFootprint only", `{"GeoFootprint": {"type": "Polygon", "coordinates": [[[1, 2], [3, 2], [3, 4], [1, 2]]]}}`, "POLYGON((1 2,3 2,3 4,1 2))"},
		{"another SRID", `{"Footprint": "geography'SRID=3857;POINT (1 2)'"}`, ""},
		{"none", `{"Name": "x"}`, ""},
	}
	for _, tt := range tests {
		p, err := FromEntity([]byte(tt.entity))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		g, err := p.Footprint()
		got := ""
		if !g.IsEmpty() {
			got = g.AsText()
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: Footprint = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
	// A footprint that cannot be read matches no area, and says why.
	p, _ := FromEntity([]byte(`{"Footprint": "geography'SRID=4326;POLYGON ((1 2, 3'"}`))
	if _, err := p.Footprint(); err == nil {
		t.Error("no error for a broken footprint")
	}
	f, _ := Parse("OData.CSC.Intersects(area=geography'SRID=4326;POINT(1 2)')")
	if f.Match(&p) {
		t.Error("a broken footprint matched")
	}
}

// TestFootprintIsLazy: reading a product does not parse its footprint, nor
// does a filter without Intersects.
func TestFootprintIsLazy(t *testing.T) {
	fx := fixtures(t)
	p := fx[0].p
	f, _ := Parse("Collection/Name eq 'SENTINEL-1' and Online eq true")
	f.Match(&p)
	if p.fp == nil || p.fp.wkt == "" || !p.fp.g.IsEmpty() {
		t.Fatal("footprint parsed before it was needed")
	}
	g, _ := Parse("OData.CSC.Intersects(area=geography'SRID=4326;POINT(0 0)')")
	g.Match(&p)
	if p.fp.g.IsEmpty() || p.fp.wkt != "" {
		t.Fatal("footprint not parsed when needed")
	}
}

func TestSetFootprint(t *testing.T) {
	p := footprintEntity(t, "", "")
	f, _ := Parse("OData.CSC.Intersects(area=geography'SRID=4326;POINT(179.9 -16.5)')")
	g := footprintEntity(t, "POLYGON ((179.5 -16, -179.5 -16, -179.5 -17, 179.5 -17, 179.5 -16))", "")
	geo, _ := g.Footprint()
	if f.Match(&p) {
		t.Error("matched without a footprint")
	}
	p.SetFootprint(geo)
	if !f.Match(&p) {
		t.Error("SetFootprint's footprint not used (or not normalised)")
	}
}

func TestParseDateTime(t *testing.T) {
	utc := func(y, mo, d, h, mi, s, ns int) time.Time {
		return time.Date(y, time.Month(mo), d, h, mi, s, ns, time.UTC)
	}
	tests := []struct {
		in   string
		want time.Time // zero: refused
	}{
		{"2022-05-03T00:00:00.000Z", utc(2022, 5, 3, 0, 0, 0, 0)},
		{"2022-05-03T00:00:00Z", utc(2022, 5, 3, 0, 0, 0, 0)},
		{"2022-05-03T10:20:30.5Z", utc(2022, 5, 3, 10, 20, 30, 500000000)},
		{"2022-05-03T10:20:30.123456789Z", utc(2022, 5, 3, 10, 20, 30, 123456789)},
		{"2022-05-03T10:20:30.123456+00:00", utc(2022, 5, 3, 10, 20, 30, 123456000)},
		{"2022-05-03T00:00:00.000-04:00", utc(2022, 5, 3, 4, 0, 0, 0)},
		{"2022-05-03T00:30:00+05:30", utc(2022, 5, 2, 19, 0, 0, 0)},
		{"2022-05-03T00:00:00.000", utc(2022, 5, 3, 0, 0, 0, 0)},
		{"2022-05-03T07:08", utc(2022, 5, 3, 7, 8, 0, 0)},
		{"2022-05-03T07:08Z", utc(2022, 5, 3, 7, 8, 0, 0)},
		{"2024-09-01", utc(2024, 9, 1, 0, 0, 0, 0)},
		{"2024-02-29T00:00:00Z", utc(2024, 2, 29, 0, 0, 0, 0)},
		{"2023-02-29T00:00:00Z", time.Time{}},
		{"2022-05-03T24:00:00Z", time.Time{}},
		{"2022-05-03T23:59:60Z", time.Time{}},
		{"2022-05-03T00:00:00.Z", time.Time{}},
		{"2022-05-03T00:00:00.1234567890Z", time.Time{}},
		{"2022-05-03t00:00:00Z", time.Time{}},
		{"2022-05-03T00:00:00z", time.Time{}},
		{"2022-05-03T00:00:00+0400", time.Time{}},
		{"2022-05-03T00:00:00Z ", time.Time{}},
		{"2022-5-3", time.Time{}},
		{"22-05-03", time.Time{}},
		{"", time.Time{}},
	}
	for _, tt := range tests {
		got, ok := parseDateTime(tt.in)
		if ok != !tt.want.IsZero() || !got.Equal(tt.want) {
			t.Errorf("parseDateTime(%q) = %v, %v; want %v", tt.in, got, ok, tt.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { parseDateTime("2022-05-03T10:20:30.123456+02:00") }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

// TestFromNotificationReadsWhatIsNeeded: the receiver's reading decodes
// only what its filters read (what makes 20 interests cheap), and that
// includes what Collection/Name is derived from.
func TestFromNotificationReadsWhatIsNeeded(t *testing.T) {
	var n notification.Notification
	for _, f := range fixtures(t) {
		if f.name == s2L2A {
			n = f.n
		}
	}
	parse := func(filter string) *Filter {
		f, err := Parse(filter)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	names := func(p *Product) []string {
		var out []string
		for _, a := range p.Attributes {
			out = append(out, a.Name)
		}
		return out
	}

	p, ok := FromNotification(&n, &Needs{})
	if !ok || p.Name != "" || p.ID != "" || p.Collection != "" || !p.ContentStart.IsZero() || p.HasOnline || p.Attributes != nil || p.fp != nil {
		t.Errorf("read for no filter: %+v", p)
	}

	cloud := parse("Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value le 30.00) and ContentDate/Start gt 2026-11-21T00:00:00Z")
	needs := cloud.Needs()
	p, _ = FromNotification(&n, &needs)
	if got := names(&p); !slices.Equal(got, []string{"cloudCover"}) || p.ContentStart.IsZero() || !p.PublicationDate.IsZero() || p.Name != "" {
		t.Errorf("read for %s: attributes %v, %+v", cloud, got, p)
	}
	if !cloud.Match(&p) {
		t.Error("no match")
	}

	// A notification made by hand (no Entity noted) is walked, not read
	// as empty.
	bare := notification.Notification{Event: n.Event, Value: n.Value}
	if p, ok := FromNotification(&bare, &needs); !ok || !cloud.Match(&p) {
		t.Errorf("a notification without its Entity: %+v", p)
	}

	// platformShortName names the collection even when the product's name
	// does not tell the mission.
	raw := []byte(`{"SubscriptionEvent":"created","ProductId":"0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f","value":{"Name":"X_UNKNOWN_NAME","Attributes":[` +
		`{"@odata.type":"#OData.CSC.StringAttribute","Name":"productType","Value":"S2MSI2A","ValueType":"String"},` +
		`{"@odata.type":"#OData.CSC.StringAttribute","Name":"platformShortName","Value":"SENTINEL-2","ValueType":"String"}]}}`)
	other, err := notification.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	coll := parse("Collection/Name eq 'SENTINEL-2'")
	needs = coll.Needs()
	if p, _ := FromNotification(&other, &needs); !coll.Match(&p) || !slices.Equal(names(&p), []string{"platformShortName"}) {
		t.Errorf("read for %s: collection %q, attributes %v", coll, p.Collection, names(&p))
	}
	// Also when the attribute's name is spelt with escapes, as the
	// notification's subject reads it.
	escaped, err := notification.Decode(bytes.Replace(raw, []byte(`"platformShortName"`), []byte(`"platform\u0053hortName"`), 1))
	if err != nil {
		t.Fatal(err)
	}
	if escaped.Collection != "SENTINEL-2" {
		t.Fatalf("the subject's collection is %q", escaped.Collection)
	}
	if p, _ := FromNotification(&escaped, &needs); !coll.Match(&p) {
		t.Errorf("escaped platformShortName: collection %q, attributes %v", p.Collection, names(&p))
	}
}

// TestAttributeSize: a product read holds a slice of Attributes, one per
// attribute a filter names; Bool shares the padding after Type, so the
// boolean type added nothing to every product read (52 409 B/op instead
// of 51 769 for BenchmarkRouterMatch/Match when it did not).
func TestAttributeSize(t *testing.T) {
	type withoutBool struct {
		Name  string
		Type  AttrType
		Str   string
		Float float64
		Int   int64
		Time  time.Time
	}
	if got, want := unsafe.Sizeof(Attribute{}), unsafe.Sizeof(withoutBool{}); got != want {
		t.Errorf("an Attribute is %d bytes, %d without Bool", got, want)
	}
}

// FuzzFromNotification: for every body the receiver accepts, the product
// read from where the notification's validation found the members is the
// product read from the entity alone, for each element of an array too
// (the offsets are the entity's, whatever the body around it).
func FuzzFromNotification(f *testing.F) {
	for _, fx := range fixtures(f) {
		f.Add(fx.n.Raw)
		f.Add([]byte("[ " + string(fx.n.Raw) + ",\n" + string(fx.n.Raw) + "]"))
		// A BooleanAttribute (Sentinel-1's sliceProductFlag), well and
		// badly typed.
		for _, flag := range []string{`true`, `false`, `"true"`, `1`} {
			f.Add(bytes.Replace(fx.n.Raw, []byte(`"Attributes": [`), []byte(`"Attributes": [{"@odata.type": "#OData.CSC.BooleanAttribute", "Name": "sliceProductFlag", "Value": `+flag+`, "ValueType": "Boolean"},`), 1))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ns, err := notification.Parse(body, 10)
		if err != nil {
			return
		}
		for i := range ns {
			got, ok := FromNotification(&ns[i], &Everything)
			if !ok {
				continue
			}
			want, err := FromEntity(ns[i].Value)
			if err != nil {
				t.Fatalf("[%d]: FromEntity: %v", i, err)
			}
			if !sameProduct(got, want) {
				t.Fatalf("[%d]: from the notification %+v\nfrom the entity       %+v", i, got, want)
			}
		}
	})
}

// sameProduct compares two products as read, their footprints unparsed.
func sameProduct(a, b Product) bool {
	fa, fb := a.fp, b.fp
	a.fp, b.fp = nil, nil
	if (fa == nil) != (fb == nil) || fa != nil && (fa.wkt != fb.wkt || !bytes.Equal(fa.geojson, fb.geojson)) {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// TestManyAttributeNamesAreFound: a filter naming more attributes than
// are scanned one by one (the names are then searched) still reads the
// ones it names, and only those.
func TestManyAttributeNamesAreFound(t *testing.T) {
	var n notification.Notification
	for _, f := range fixtures(t) {
		if f.name == s2L2A {
			n = f.n
		}
	}
	var terms []string
	for i := range 40 {
		terms = append(terms, fmt.Sprintf("Attributes/OData.CSC.StringAttribute/any(att:att/Name eq 'unused%02d' and att/OData.CSC.StringAttribute/Value eq 'x')", i))
	}
	terms = append(terms, "Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value ge 0.0)",
		"Attributes/OData.CSC.StringAttribute/any(att:att/Name eq 'productType' and att/OData.CSC.StringAttribute/Value eq 'S2MSI2A')")
	f, err := Parse(strings.Join(terms, " or "))
	if err != nil {
		t.Fatal(err)
	}
	needs := f.Needs()
	p, ok := FromNotification(&n, &needs)
	var got []string
	for _, a := range p.Attributes {
		got = append(got, a.Name)
	}
	slices.Sort(got)
	if !ok || !slices.Equal(got, []string{"cloudCover", "productType"}) || !f.Match(&p) {
		t.Errorf("read %v (ok %v), match %v", got, ok, f.Match(&p))
	}
}
