//go:build !benchbaseheaders

package ingest

import (
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/notification"
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
