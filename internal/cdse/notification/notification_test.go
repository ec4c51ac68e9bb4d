package notification

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
)

func TestParseFixtures(t *testing.T) {
	tests := []struct {
		file       string
		event      event.Kind
		productID  string
		collection string
		nameSuffix string
		modified   string
		product    string // the productType token
	}{
		{"created-s2.json", event.Created, "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f", "SENTINEL-2", "T132945.SAFE", "", "S2MSI2A"},
		{"created-s1.json", event.Created, "b1e2c3d4-a5b6-4c7d-8e9f-0a1b2c3d4e5f", "SENTINEL-1", "C3D4_COG.SAFE", "", "IW_GRDH_1S-COG"},
		{"created-s3.json", event.Created, "c3d4e5f6-0718-4293-a4b5-c6d7e8f90a1b", "SENTINEL-3", "004.SEN3", "", "OL_1_EFR___"},
		{"created-s5p.json", event.Created, "d5e6f708-1a2b-4c3d-8e4f-5a6b7c8d9e0f", "SENTINEL-5P", ".nc", "", "L2__NO2___"},
		{"modified-s2.json", event.Modified, "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f", "SENTINEL-2", ".SAFE", "2026-11-22T08:01:02.654321Z", "S2MSI2A"},
		{"deleted-s1.json", event.Deleted, "b1e2c3d4-a5b6-4c7d-8e9f-0a1b2c3d4e5f", "SENTINEL-1", ".SAFE", "", "IW_GRDH_1S-COG"},
		{"created-short.json", event.Created, "e7f8091a-2b3c-4d5e-8f6a-7b8c9d0e1f2a", UnknownCollection, "", "", event.UnknownToken},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			body := fixtures.Notification(t, tt.file)
			ns, err := Parse(body, 100)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(ns) != 1 {
				t.Fatalf("got %d notifications, want 1", len(ns))
			}
			n := ns[0]
			if n.Event != tt.event || n.ProductID != tt.productID || n.Collection != tt.collection {
				t.Errorf("got event %q product %q collection %q", n.Event, n.ProductID, n.Collection)
			}
			if !strings.HasSuffix(n.ProductName, tt.nameSuffix) {
				t.Errorf("ProductName %q does not end in %q", n.ProductName, tt.nameSuffix)
			}
			wantKey := string(tt.event) + ":" + tt.productID
			if tt.modified != "" {
				wantKey += ":" + tt.modified
			}
			if got := n.DedupeKey(); got != wantKey {
				t.Errorf("DedupeKey = %q, want %q", got, wantKey)
			}
			// The message data is the element's own bytes, untouched.
			if !bytes.Contains(body, n.Raw) || len(n.Raw) < 100 {
				t.Errorf("Raw is not a slice of the body (len %d)", len(n.Raw))
			}
			if got := n.Subject("cdse.product"); got != "cdse.product."+string(tt.event)+"."+tt.collection+"."+tt.product {
				t.Errorf("Subject = %q", got)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	const pid = `"ProductId":"0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f"`
	tests := []struct {
		name    string
		body    string
		tooMany bool
		want    string // substring of the error
	}{
		{"empty", "", false, "empty body"},
		{"blank", "  \n", false, "empty body"},
		{"null", "null", false, "not null"},
		{"number", "42", false, "not a number"},
		{"string", `"created"`, false, "not a string"},
		{"empty array", "[]", false, "empty array"},
		{"malformed", `{"SubscriptionEvent":`, false, "malformed JSON"},
		{"trailing garbage", `{"SubscriptionEvent":"created",` + pid + `} x`, false, "malformed JSON"},
		{"invalid utf-8", "{\"SubscriptionEvent\":\"created\"," + pid + ",\"ProductName\":\"S2\xff\"}", false, "UTF-8"},
		{"deep nesting", strings.Repeat("[", 100000), false, "malformed JSON"},
		{"missing event", `{` + pid + `}`, false, "SubscriptionEvent: missing"},
		{"event other case", `{"SubscriptionEvent":"Created",` + pid + `}`, false, `unknown event "Created"`},
		{"event unknown", `{"SubscriptionEvent":"updated",` + pid + `}`, false, "unknown event"},
		{"event list", `{"SubscriptionEvent":["created"],` + pid + `}`, false, "SubscriptionEvent: must be a string"},
		{"event lowercase member name", `{"subscriptionevent":"created",` + pid + `}`, false, "SubscriptionEvent: missing"},
		{"missing product", `{"SubscriptionEvent":"created"}`, false, "ProductId: missing"},
		{"product not uuid", `{"SubscriptionEvent":"created","ProductId":"not-a-uuid"}`, false, "ProductId: not a UUID"},
		{"product braces", `{"SubscriptionEvent":"created","ProductId":"{0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f}"}`, false, "ProductId: not a UUID"},
		{"product number", `{"SubscriptionEvent":"created","ProductId":12}`, false, "ProductId: must be a UUID string"},
		{"product huge", `{"SubscriptionEvent":"created","ProductId":"` + strings.Repeat("a", 1<<20) + `"}`, false, "ProductId: not a UUID"},
		{"duplicate key", `{"SubscriptionEvent":"created","SubscriptionEvent":"deleted",` + pid + `}`, false, "SubscriptionEvent: duplicate member"},
		{"duplicate key escaped", `{"SubscriptionEvent":"created","Subscription\u0045vent":"deleted",` + pid + `}`, false, "duplicate member"},
		{"value and Value", `{"SubscriptionEvent":"created",` + pid + `,"value":{},"Value":{}}`, false, "Value: duplicate member"},
		// Duplicates and case variants at every depth: a reader of the
		// forwarded bytes could take the other one.
		{"nested duplicate Name", `{"SubscriptionEvent":"created",` + pid + `,"value":{"Name":"S2A_first","Name":"S1B_second"}}`, false, "Name: duplicate member"},
		{"duplicate attribute Value", `{"SubscriptionEvent":"created",` + pid + `,"value":{"Attributes":[{"Name":"platformShortName","Value":"SENTINEL-2","Value":"SENTINEL-1"}]}}`, false, "Value: duplicate member"},
		{"duplicate ModificationDate", `{"SubscriptionEvent":"modified",` + pid + `,"value":{"ModificationDate":"2026-11-21T12:00:00Z","ModificationDate":"2026-11-22T12:00:00Z"}}`, false, "ModificationDate: duplicate member"},
		{"nested case variant", `{"SubscriptionEvent":"created",` + pid + `,"value":{"Name":"S2A_x","name":"S1B_y"}}`, false, "name: duplicate member"},
		{"top-level case variant", `{"SubscriptionEvent":"created","subscriptionEvent":"deleted",` + pid + `}`, false, "subscriptionEvent: duplicate member"},
		{"deep duplicate", `{"SubscriptionEvent":"created",` + pid + `,"value":{"GeoFootprint":{"type":"Polygon","type":"Point"}}}`, false, "type: duplicate member"},
		{"escaped case variant", `{"SubscriptionEvent":"created",` + pid + `,"value":{"Name":"a","\u006eame":"b"}}`, false, "duplicate member"},
		{"Kelvin sign folds to k", `{"SubscriptionEvent":"created",` + pid + `,"value":{"kind":"a","Kind":"b"}}`, false, "duplicate member"},
		{"many members, duplicate late", `{"SubscriptionEvent":"created",` + pid + `,"value":{` + manyMembers(40) + `,"M7":1}}`, false, "M7: duplicate member"},
		{"array element index", `[{"SubscriptionEvent":"created",` + pid + `},{"SubscriptionEvent":"created",` + pid + `,"value":{"Id":"a","ID":"b"}}]`, false, "[1].ID: duplicate member"},
		{"value not object", `{"SubscriptionEvent":"created",` + pid + `,"value":[1]}`, false, "value: must be the product entity object"},
		{"value name number", `{"SubscriptionEvent":"created",` + pid + `,"value":{"Name":5}}`, false, "value.Name: must be a string"},
		{"subscription not uuid", `{"SubscriptionEvent":"created",` + pid + `,"SubscriptionId":"x"}`, false, "SubscriptionId: not a UUID"},
		{"bad date", `{"SubscriptionEvent":"created",` + pid + `,"NotificationDate":"yesterday"}`, false, "NotificationDate: not an ISO 8601"},
		{"bad modification date", `{"SubscriptionEvent":"modified",` + pid + `,"value":{"ModificationDate":"soon"}}`, false, "value.ModificationDate"},
		{"header injection name", `{"SubscriptionEvent":"created",` + pid + `,"ProductName":"S2A\r\nNats-Msg-Id: x"}`, false, "ProductName: contains a control character"},
		{"header injection value name", `{"SubscriptionEvent":"created",` + pid + `,"value":{"Name":"S2A\nX: y"}}`, false, "value.Name: contains a control character"},
		{"long name", `{"SubscriptionEvent":"created",` + pid + `,"ProductName":"` + strings.Repeat("S", 600) + `"}`, false, "ProductName: longer than"},
		{"array element invalid", `[{"SubscriptionEvent":"created",` + pid + `},{"SubscriptionEvent":"created"}]`, false, "[1].ProductId: missing"},
		{"array element not object", `[{"SubscriptionEvent":"created",` + pid + `},7]`, false, "[1]: notification must be a JSON object"},
		{"too many", "[" + strings.TrimSuffix(strings.Repeat(`{"SubscriptionEvent":"created",`+pid+`},`, 101), ",") + "]", true, "more than 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns, err := Parse([]byte(tt.body), 100)
			if err == nil {
				t.Fatalf("accepted %d notifications, want an error", len(ns))
			}
			if tt.tooMany != errors.Is(err, ErrTooMany) {
				t.Errorf("errors.Is(ErrTooMany) = %v for %v", !tt.tooMany, err)
			}
			if !tt.tooMany && !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if len(err.Error()) > 300 {
				t.Errorf("error message is %d bytes long; hostile input must not be echoed", len(err.Error()))
			}
		})
	}
}

func TestParseAcceptsOddities(t *testing.T) {
	base := `"SubscriptionEvent":"created","ProductId":"0F6B4C1E-8D2A-4F3B-9C5E-7A1D2B3C4E5F"`
	tests := map[string]string{
		"null optionals":      `{` + base + `,"ProductName":null,"SubscriptionId":null,"AckId":null,"NotificationDate":null,"value":null}`,
		"empty strings":       `{` + base + `,"SubscriptionId":"","NotificationDate":"","value":{"EvictionDate":"","ModificationDate":"","Checksum":[{}],"Assets":[]}}`,
		"unknown members":     `{` + base + `,"Extra":{"nested":[1,2,{"a":"}"}]},"@odata.context":"$metadata#Notification/$entity"}`,
		"offset and 7 digits": `{` + base + `,"NotificationDate":"2026-11-21T10:00:00.1234567+00:00"}`,
		"no zone":             `{` + base + `,"NotificationDate":"2026-11-21T10:00:00.123"}`,
		"escaped strings":     `{` + base + `,"ProductName":"S2A_\u00e9\"q\""}`,
		"whitespace":          " \n\t[ {" + base + "} ] \n",
	}
	for name, body := range tests {
		t.Run(name, func(t *testing.T) {
			ns, err := Parse([]byte(body), 100)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if ns[0].ProductID != "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f" {
				t.Errorf("ProductID not canonical: %q", ns[0].ProductID)
			}
		})
	}
}

func TestDedupeKey(t *testing.T) {
	const pid = "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f"
	mod := func(s string) time.Time { tm, _ := ParseTime(s); return tm }
	tests := []struct {
		name string
		a, b string
		same bool
	}{
		{"same modification, other spelling",
			DedupeKey(event.Modified, pid, mod("2026-11-22T08:01:02.654Z")),
			DedupeKey(event.Modified, pid, mod("2026-11-22T09:01:02.654000+01:00")), true},
		{"two modifications", DedupeKey(event.Modified, pid, mod("2026-11-22T08:01:02Z")), DedupeKey(event.Modified, pid, mod("2026-11-22T08:01:03Z")), false},
		{"created vs deleted", DedupeKey(event.Created, pid, time.Time{}), DedupeKey(event.Deleted, pid, time.Time{}), false},
		{"created ignores modification date", DedupeKey(event.Created, pid, mod("2026-11-22T08:01:02Z")), DedupeKey(event.Created, pid, time.Time{}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if (tt.a == tt.b) != tt.same {
				t.Errorf("keys %q and %q: same = %v, want %v", tt.a, tt.b, tt.a == tt.b, tt.same)
			}
		})
	}
}

func TestCollection(t *testing.T) {
	tests := []struct{ platform, name, want string }{
		{"SENTINEL-2", "", "SENTINEL-2"},
		{"SENTINEL-2.>", "", "SENTINEL-2__"},
		{"*", "S1A_IW", "_"},
		{"Sentinel 1 ü", "", "Sentinel_1___"},
		{"", "S1B_IW_SLC", "SENTINEL-1"},
		{"", "S2C_MSIL1C", "SENTINEL-2"},
		{"", "S3B_SL_2_LST", "SENTINEL-3"},
		{"", "S5P_OFFL_L2", "SENTINEL-5P"},
		{"", "LC09_L1TP", UnknownCollection},
		{"  ", "", UnknownCollection},
		{strings.Repeat("A", 100), "", strings.Repeat("A", 64)},
	}
	for _, tt := range tests {
		t.Run(tt.platform+"/"+tt.name, func(t *testing.T) {
			if got := collectionOf(tt.platform, tt.name); got != tt.want {
				t.Errorf("collectionOf(%q, %q) = %q, want %q", tt.platform, tt.name, got, tt.want)
			}
		})
	}
}

// TestEndsRun holds the eight-bytes-at-a-time test to the byte-at-a-time
// one for every byte value in every position, and for pairs of bytes.
func TestEndsRun(t *testing.T) {
	ends := func(c byte) bool { return c < 0x20 || c == '"' || c == '\\' }
	for c := range 256 {
		for pos := range 8 {
			for _, fill := range []byte{'a', 0x7f, 0x80, 0xff, 0x21, ' '} {
				w := [8]byte{fill, fill, fill, fill, fill, fill, fill, fill}
				w[pos] = byte(c)
				want := ends(byte(c)) || ends(fill)
				if got := endsRun(binary.LittleEndian.Uint64(w[:])); got != want {
					t.Fatalf("%q: endsRun %v, want %v", w, got, want)
				}
			}
		}
	}
	for a := range 256 {
		for b := range 256 {
			w := [8]byte{'x', byte(a), byte(b), 'x', 0xc3, 0xa9, 'x', 'x'}
			if got, want := endsRun(binary.LittleEndian.Uint64(w[:])), ends(byte(a)) || ends(byte(b)); got != want {
				t.Fatalf("%q: endsRun %v, want %v", w, got, want)
			}
		}
	}
}

// manyMembers is "m0":0,...,"m<n-1>":n-1.
func manyMembers(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `"m` + strconv.Itoa(i) + `":` + strconv.Itoa(i)
	}
	return strings.Join(parts, ",")
}

// TestDuplicateCheckStaysLinear: an object of 100 000 distinct members (a
// hostile body within the size limit) is checked through a map, not by
// pairs; a case variant among them is still found.
func TestDuplicateCheckStaysLinear(t *testing.T) {
	pid := `"ProductId":"0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f"`
	body := []byte(`{"SubscriptionEvent":"created",` + pid + `,"value":{` + manyMembers(100000) + `}}`)
	// Pairwise, this would be 5e9 comparisons: the test would not end
	// within the suite's timeout.
	if _, err := Parse(body, 100); err != nil {
		t.Fatalf("distinct members refused: %v", err)
	}
	body = []byte(`{"SubscriptionEvent":"created",` + pid + `,"value":{` + manyMembers(100000) + `,"M99999":0}}`)
	if _, err := Parse(body, 100); err == nil || !strings.Contains(err.Error(), "M99999: duplicate member") {
		t.Errorf("case variant among 100 000 members: %v", err)
	}
}

func TestTemplates(t *testing.T) {
	ns, err := Parse(fixtures.Notification(t, "created-s2.json"), 1)
	if err != nil {
		t.Fatal(err)
	}
	n := &ns[0]
	tests := []struct {
		template, want, err string
	}{
		{"event.collection.productType", "cdse.product.created.SENTINEL-2.S2MSI2A", ""},
		{"collection.platform.tileId.event", "cdse.product.SENTINEL-2.S2B.32TQM.created", ""},
		{"event.relativeOrbit.processingLevel", "cdse.product.created.108.S2MSI2A", ""},
		{"productType", "cdse.product.S2MSI2A", ""},
		{"event.collection.>", "", `unknown token ">"`},
		{"event..collection", "", `unknown token ""`},
		{"event.*", "", `unknown token "*"`},
		{"Event", "", `unknown token "Event"`},
		{"", "", `unknown token ""`},
		{strings.Repeat("event.", 14) + "event", "", "at most 16"},
	}
	for _, tt := range tests {
		tmpl, err := event.ParseTemplate(tt.template, "cdse.product")
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want one with %q", tt.template, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.template, err)
			continue
		}
		if got := tmpl.Subject("cdse.product", n); got != tt.want {
			t.Errorf("%q: subject %q, want %q", tt.template, got, tt.want)
		}
	}
	if (event.Template{}).Subject("p", n) != event.DefaultTemplate.Subject("p", n) {
		t.Error("the zero event.Template is not the default")
	}
}

// TestParseNoEntity: without the entity's offsets a notification is the
// same in every other field, and its Entity is empty (which readers take
// as "read the entity whole").
func TestParseNoEntity(t *testing.T) {
	for _, file := range []string{"created-s2.json", "created-s1.json", "created-s3.json", "created-s5p.json", "modified-s2.json", "deleted-s1.json", "created-short.json"} {
		t.Run(file, func(t *testing.T) {
			body := fixtures.Notification(t, file)
			full, err := Parse(body, 100)
			if err != nil {
				t.Fatal(err)
			}
			lean, err := ParseWith(body, ParseOptions{Max: 100, NoEntity: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(lean[0].Entity.Attributes) != 0 || lean[0].Entity.Members != (Entity{}).Members {
				t.Errorf("NoEntity noted %+v", lean[0].Entity)
			}
			if file != "created-short.json" && len(full[0].Entity.Attributes) == 0 {
				t.Error("Parse noted no attribute")
			}
			full[0].Entity = Entity{}
			if !reflect.DeepEqual(full[0], lean[0]) {
				t.Errorf("differ beyond the Entity:\n%+v\n%+v", full[0], lean[0])
			}
		})
	}
}
