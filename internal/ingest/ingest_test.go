//go:build !benchbaseheaders

package ingest

import (
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
)

// TestHeadersComposed: the values the receiver composes (download and STAC
// URLs, ce-source, ce-time) are cut from one string; each must come out
// whole and in its own header, and be left out when it has nothing to say.
func TestHeadersComposed(t *testing.T) {
	const (
		base = "https://catalogue.example/odata/v1"
		stac = "https://stac.example/v1"
	)
	n := parse(t, "created-s2.json")
	id, sub, name := n.DedupeKey(), n.SubscriptionID, n.ProductName
	if sub == "" || n.NotificationDate.IsZero() || n.ProductType != "S2MSI2A" {
		t.Fatalf("the fixture lost what this test needs: %+v", n)
	}
	noSub := *n
	noSub.SubscriptionID = ""
	noDate := *n
	noDate.NotificationDate = time.Time{}
	stacColls := map[string]string{"S2MSI2A": "sentinel-2-l2a"}
	for _, tc := range []struct {
		name  string
		n     *notification.Notification
		route Route
		want  map[string]string // "" for a header that must be absent
	}{
		{"everything", n, Route{CloudEvents: true, CatalogueURL: base + "/", StacURL: stac, StacCollections: stacColls}, map[string]string{
			event.HeaderDownloadURL: base + "/Products(" + n.ProductID + ")/$value",
			event.HeaderStacURL:     stac + "/collections/sentinel-2-l2a/items/" + name[:len(name)-len(".SAFE")],
			"ce-source":             base + "/Subscriptions(" + sub + ")",
			"ce-time":               n.NotificationDate.UTC().Format(time.RFC3339Nano),
			"ce-id":                 id,
			"ce-type":               "eu.copernicus.dataspace.product.created",
			"ce-subject":            name,
			"ce-specversion":        "1.0",
			"content-type":          "application/json",
		}},
		{"no catalogue URL", n, Route{CloudEvents: true}, map[string]string{
			event.HeaderDownloadURL: "", event.HeaderStacURL: "", "ce-source": "urn:cdse:catalogue",
			"ce-time": n.NotificationDate.UTC().Format(time.RFC3339Nano),
		}},
		{"no subscription", &noSub, Route{CloudEvents: true, CatalogueURL: base}, map[string]string{
			"ce-source": base, event.HeaderDownloadURL: base + "/Products(" + n.ProductID + ")/$value",
		}},
		{"no notification date", &noDate, Route{CloudEvents: true, CatalogueURL: base}, map[string]string{
			"ce-time": "", "ce-source": base + "/Subscriptions(" + sub + ")",
		}},
		{"product type without a STAC collection", n, Route{StacURL: stac, StacCollections: map[string]string{"S2MSI1C": "sentinel-2-l1c"}}, map[string]string{
			event.HeaderStacURL: "",
		}},
		{"CloudEvents off", n, Route{CatalogueURL: base}, map[string]string{
			"ce-id": "", "ce-source": "", "ce-time": "", "content-type": "",
			event.HeaderDownloadURL: base + "/Products(" + n.ProductID + ")/$value",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := headers(tc.n, tc.n.DedupeKey(), "push", &tc.route)
			for k, want := range tc.want {
				got, ok := h[k]
				switch {
				case want == "" && ok:
					t.Errorf("%s = %q, want none", k, got)
				case want != "" && (len(got) != 1 || got[0] != want):
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			if got := h[event.HeaderMsgID]; len(got) != 1 || got[0] != tc.n.DedupeKey() {
				t.Errorf("Nats-Msg-Id = %q", got)
			}
		})
	}
}

// TestNotificationHeaders: with no option on, a message carries the
// routing headers and those read from the notification, nothing else.
func TestNotificationHeaders(t *testing.T) {
	n := parse(t, "created-s2.json")
	h := headers(n, n.DedupeKey(), SourcePush, &Route{})
	want := map[string]string{
		event.HeaderMsgID:          "created:0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f",
		event.HeaderEvent:          "created",
		event.HeaderProductID:      "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f",
		event.HeaderProductName:    "S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE",
		event.HeaderSubscriptionID: "7d3f9c2e-5b1a-4c8d-9e6f-0a1b2c3d4e5f",
		event.HeaderCollection:     "SENTINEL-2",
		event.HeaderSource:         "push",
		// From the product entity.
		event.HeaderProductType:      "S2MSI2A",
		event.HeaderPublicationDate:  "2026-11-21T13:55:12.123456Z",
		event.HeaderModificationDate: "2026-11-21T13:55:12.123456Z",
		event.HeaderContentLength:    "1132462080",
		event.HeaderS3Path:           "/eodata/Sentinel-2/MSI/L2A/2026/11/21/S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE",
		event.HeaderOnline:           "true",
		// From the name (internal/cdse/versions): tile, orbit and
		// datatake, and the processing baseline.
		event.HeaderAcquisition: "S2B_MSIL2A_20261121T103319_R108_T32TQM",
		event.HeaderVersion:     "0511",
	}
	for k, v := range want {
		if got := h[k]; len(got) != 1 || got[0] != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	if len(h) != len(want) {
		t.Errorf("got %d headers, want %d", len(h), len(want))
	}
}

// TestCopiesCloneTheProductHeaders: a copy's headers are the product
// message's, its own where they differ, in a map of its own, stored as they
// were when each copy built its headers anew: made after Publish sent the
// product message (nats.go has set Nats-Expected-Stream in its map), and
// after a replay from the quarantine added Cdse-Replayed, which stays the
// product message's.
func TestCopiesCloneTheProductHeaders(t *testing.T) {
	n := parse(t, "created-s2.json")
	r := &Route{Prefix: event.DefaultPrefix, InterestPrefix: event.DefaultInterestPrefix, CloudEvents: true,
		CatalogueURL: "https://catalogue.example/odata/v1",
		Interests:    routeAll{{Name: "a"}, {Name: "b", AreaUnevaluated: "too_many_vertices"}}}
	// What Publish does to every message it sends (WithExpectStream).
	send := func(h map[string][]string) { nats.Header(h).Set(jetstream.ExpectedStreamHeader, "CDSE_PRODUCTS") }
	for _, tt := range []struct {
		name   string
		before func(product map[string][]string) // done to the product message before its copies are made
	}{
		{"as built", func(map[string][]string) {}},
		{"sent", send},
		{"replayed and sent", func(h map[string][]string) { h[event.HeaderReplayed] = []string{"7"}; send(h) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := Messages([]notification.Notification{*n}, r, SourcePull)[0]
			product := m.MessageHeader()
			tt.before(product)
			copies := m.MakeCopies()
			if len(copies) != 2 {
				t.Fatalf("%d copies", len(copies))
			}
			for _, c := range copies {
				name, _ := CopyInterest(c.MsgID)
				h := c.MessageHeader()
				send(h)
				// As a copy was built before: the headers anew, its own set.
				want := headers(n, n.DedupeKey(), SourcePull, r)
				want[event.HeaderMsgID], want[event.HeaderInterest] = []string{c.MsgID}, []string{name}
				if name == "b" {
					want[event.HeaderAreaUnevaluated] = []string{"too_many_vertices"}
				}
				send(want)
				if got, want := wire(t, h), wire(t, want); !slices.Equal(got, want) {
					t.Errorf("copy %s: headers\n%q\nwant\n%q", name, got, want)
				}
				if c.Subject != "cdse.interest."+name+".created.SENTINEL-2.S2MSI2A" {
					t.Errorf("copy %s: subject %q", name, c.Subject)
				}
			}
			// Each copy's map is its own.
			copies[0].Header[event.HeaderSource] = []string{"changed"}
			if product[event.HeaderSource][0] != SourcePull || copies[1].Header[event.HeaderSource][0] != SourcePull {
				t.Error("a copy's headers share a map with another message's")
			}
		})
	}
}
