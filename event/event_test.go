package event_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cdse-jetstream/receiver/event"
)

// notifications reads every fixture, an array body split into its elements
// (each is one message on the stream).
func notifications(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob("../testdata/notifications/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if strings.HasPrefix(strings.TrimSpace(string(b)), "[") {
			var elems []json.RawMessage
			if err := json.Unmarshal(b, &elems); err != nil {
				t.Fatal(err)
			}
			for i, e := range elems {
				out[name+"#"+string(rune('0'+i))] = e
			}
			continue
		}
		out[name] = b
	}
	return out
}

func TestDecodeEveryFixture(t *testing.T) {
	for name, data := range notifications(t) {
		n, err := event.DecodeData(data, nil)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if n.ProductID == "" || n.NotificationDate.IsZero() || string(n.Data) != string(data) {
			t.Errorf("%s: id %q, notification date %v, data kept %v", name, n.ProductID, n.NotificationDate, string(n.Data) == string(data))
		}
		if !strings.HasPrefix(name, string(n.Event)) {
			t.Errorf("%s: event %q", name, n.Event)
		}
		if n.Footprint != nil && !json.Valid(n.Footprint) {
			t.Errorf("%s: footprint is not JSON: %.40s", name, n.Footprint)
		}
	}
}

func TestDecodeCreatedS2(t *testing.T) {
	data, err := os.ReadFile("../testdata/notifications/created-s2.json")
	if err != nil {
		t.Fatal(err)
	}
	n, err := event.DecodeData(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	var geo struct{ Type string }
	if err := json.Unmarshal(n.Footprint, &geo); err != nil || geo.Type != "Polygon" {
		t.Errorf("footprint: %v %q", err, geo.Type)
	}
	tile, _ := n.Attr("tileId")
	orbit, _ := n.Attr("orbitNumber")
	begin, _ := n.Attr("beginningDateTime")
	cloud, ok := n.Float("cloudCover")
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"event", n.Event, event.Created},
		{"product name", n.ProductName, "S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE"},
		{"subscription", n.SubscriptionID, "7d3f9c2e-5b1a-4c8d-9e6f-0a1b2c3d4e5f"},
		{"collection", n.Collection, "SENTINEL-2"},
		{"product type", n.ProductType, "S2MSI2A"},
		{"content length", n.ContentLength, int64(1132462080)},
		{"online", n.Online != nil && *n.Online, true},
		{"s3 path", n.S3Path, "/eodata/Sentinel-2/MSI/L2A/2026/11/21/S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE"},
		{"download url (Locations)", n.DownloadURL, "https://catalogue.dataspace.copernicus.eu/odata/v1/Products(0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f)/$value"},
		{"publication", n.PublicationDate, time.Date(2026, 11, 21, 13, 55, 12, 123456000, time.UTC)},
		{"sensing start", n.ContentStart, time.Date(2026, 11, 21, 10, 33, 19, 24000000, time.UTC)},
		{"tileId", tile.Value, "32TQM"},
		{"orbitNumber", orbit.Value, int64(40512)},
		{"beginningDateTime", begin.Value, time.Date(2026, 11, 21, 10, 33, 19, 24000000, time.UTC)},
		{"cloudCover", cloud, 12.3456789},
		{"cloudCover numeric", ok, true},
		{"no id without headers", n.ID, ""},
	} {
		if g, w := c.got, c.want; g != w {
			if gt, ok := g.(time.Time); ok && gt.Equal(w.(time.Time)) {
				continue
			}
			t.Errorf("%s: got %v, want %v", c.what, g, w)
		}
	}
}

// A short-form notification (PULL) carries only ids; what the receiver
// added as headers fills the rest, and the headers only the receiver can
// set are read.
func TestDecodeShortFormWithHeaders(t *testing.T) {
	data, err := os.ReadFile("../testdata/notifications/created-short.json")
	if err != nil {
		t.Fatal(err)
	}
	h := nats.Header{}
	h.Set(event.HeaderMsgID, "created:e7f8091a-2b3c-4d5e-8f6a-7b8c9d0e1f2a")
	h.Set(event.HeaderSource, "pull")
	h.Set(event.HeaderInterest, "l1c-alps")
	h.Set(event.HeaderProductName, "S2A_MSIL1C_X.SAFE")
	h.Set(event.HeaderProductType, "S2MSI1C")
	h.Set(event.HeaderCollection, "SENTINEL-2")
	h.Set(event.HeaderOnline, "false")
	h.Set(event.HeaderContentLength, "42")
	h.Set(event.HeaderDownloadURL, "https://cat.example/odata/v1/Products(e7f8091a-2b3c-4d5e-8f6a-7b8c9d0e1f2a)/$value")
	h.Set(event.HeaderStacURL, "https://stac.example/v1/collections/sentinel-2-l1c/items/S2A_MSIL1C_X")
	n, err := event.DecodeData(data, h)
	if err != nil {
		t.Fatal(err)
	}
	if n.ID != "created:e7f8091a-2b3c-4d5e-8f6a-7b8c9d0e1f2a" || n.Source != "pull" || n.Interest != "l1c-alps" || n.ProductName != "S2A_MSIL1C_X.SAFE" ||
		n.ProductType != "S2MSI1C" || n.Collection != "SENTINEL-2" || n.Online == nil || *n.Online || n.ContentLength != 42 ||
		!strings.HasPrefix(n.DownloadURL, "https://cat.example/") || !strings.HasSuffix(n.StacURL, "/items/S2A_MSIL1C_X") {
		t.Errorf("decoded %+v", n)
	}
}

// TestDecodeAreaUnevaluated: a copy routed without its interest's area
// evaluated says why, and only such a copy.
func TestDecodeAreaUnevaluated(t *testing.T) {
	data, err := os.ReadFile("../testdata/notifications/created-s2.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name               string
		interest, reason   string
		wantInterest, want string
	}{
		{"product subject", "", "", "", ""},
		{"copy, area evaluated", "s2-alps", "", "s2-alps", ""},
		{"copy, area unevaluated", "s2-alps", "longitude_out_of_range", "s2-alps", "longitude_out_of_range"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := nats.Header{}
			if tt.interest != "" {
				h.Set(event.HeaderInterest, tt.interest)
			}
			if tt.reason != "" {
				h.Set(event.HeaderAreaUnevaluated, tt.reason)
			}
			n, err := event.DecodeData(data, h)
			if err != nil {
				t.Fatal(err)
			}
			if n.Interest != tt.wantInterest || n.AreaUnevaluated != tt.want {
				t.Errorf("Interest %q, AreaUnevaluated %q; want %q, %q", n.Interest, n.AreaUnevaluated, tt.wantInterest, tt.want)
			}
		})
	}
}

func TestDecodeRefuses(t *testing.T) {
	for _, body := range []string{
		``, `[]`, `"created"`, `{`, `{"SubscriptionEvent":"Created","ProductId":"x"}`, `{"SubscriptionEvent":"created"}`,
	} {
		if _, err := event.DecodeData([]byte(body), nil); !errors.Is(err, event.ErrNotNotification) {
			t.Errorf("%q: %v", body, err)
		}
	}
}

func TestFilterSubject(t *testing.T) {
	for _, tt := range []struct {
		f       event.Filter
		want    string
		wantErr string
	}{
		{f: event.Filter{}, want: "cdse.product.*.*.*"},
		{f: event.Filter{Event: event.Created, Collection: "SENTINEL-2", ProductType: "S2MSI2A"}, want: "cdse.product.created.SENTINEL-2.S2MSI2A"},
		{f: event.Filter{ProductType: "IW_GRDH_1S-COG"}, want: "cdse.product.*.*.IW_GRDH_1S-COG"},
		{f: event.Filter{ProductType: "a.b>c"}, want: "cdse.product.*.*.a_b_c"},
		{f: event.Filter{Prefix: "eo", Template: "collection.tileId.event", TileID: "32TQM"}, want: "eo.*.32TQM.*"},
		{f: event.Filter{TileID: "32TQM"}, wantErr: "carry no tileId"},
		{f: event.Filter{Template: "event.orbit"}, wantErr: `unknown token "orbit"`},
	} {
		got, err := tt.f.Subject()
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%+v: error %v, want %q", tt.f, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%+v: %q %v, want %q", tt.f, got, err, tt.want)
		}
	}
}

func TestSanitizeToken(t *testing.T) {
	for in, want := range map[string]string{
		"S2MSI2A": "S2MSI2A", " SENTINEL-2 ": "SENTINEL-2", "": "", "   ": "", "a.b*c>d e": "a_b_c_d_e",
		strings.Repeat("x", 70): strings.Repeat("x", 64), "é": "__",
	} {
		if got := event.SanitizeToken(in); got != want {
			t.Errorf("SanitizeToken(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestInterestFilterSubject(t *testing.T) {
	tests := []struct {
		f    event.Filter
		want string
	}{
		{event.Filter{Interest: "l2a-alps"}, "cdse.interest.l2a-alps.*.*.*"},
		{event.Filter{Interest: "l2a-alps", Event: event.Created, ProductType: "S2MSI2A"}, "cdse.interest.l2a-alps.created.*.S2MSI2A"},
		{event.Filter{Interest: "s1", InterestPrefix: "team.feeds", Template: "event.collection"}, "team.feeds.s1.*.*"},
	}
	for _, tt := range tests {
		if got, err := tt.f.Subject(); err != nil || got != tt.want {
			t.Errorf("%+v: %q %v, want %q", tt.f, got, err, tt.want)
		}
	}
	if _, err := (event.Filter{Interest: "a.b"}).Subject(); err == nil {
		t.Error("an interest name with a dot accepted")
	}
}

func TestParseKinds(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []event.Kind
		err  bool
	}{
		{"created", []event.Kind{event.Created}, false},
		{" deleted , created,deleted", []event.Kind{event.Deleted, event.Created}, false},
		{"created,modified,deleted", event.Kinds, false},
		{"Created", nil, true},
		{"created,,deleted", nil, true},
		{"", nil, true},
	} {
		got, err := event.ParseKinds(c.in)
		if (err != nil) != c.err || !slices.Equal(got, c.want) {
			t.Errorf("ParseKinds(%q) = %v, %v", c.in, got, err)
		}
	}
}
