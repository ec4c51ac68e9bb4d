package fetcher

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/fetch"
	"github.com/cdse-jetstream/receiver/internal/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/topology"
)

func fixture(t *testing.T, name string, h nats.Header) *event.Notification {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "notifications", name))
	if err != nil {
		t.Fatal(err)
	}
	n, err := event.DecodeData(b, h)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestKey(t *testing.T) {
	n := fixture(t, "created-s2.json", nil)
	short := &event.Notification{ProductID: "x", ProductName: "P.SAFE", PublicationDate: time.Date(2025, 3, 4, 23, 0, 0, 0, time.FixedZone("", -2*3600))}
	for _, tc := range []struct {
		name, template string
		n              *event.Notification
		want           string
	}{
		{"default", fetchconfig.DefaultKeyTemplate, n, "SENTINEL-2/S2MSI2A/2026/11/21/S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE.zip"},
		{"publication date in UTC, unknown tokens", fetchconfig.DefaultKeyTemplate, short, "UNKNOWN/UNKNOWN/2025/03/05/P.SAFE.zip"},
		{"id", "{id}/{name}.zip", short, "x/P.SAFE.zip"},
		{"no date", "{yyyy}/{name}.zip", &event.Notification{ProductName: "Q"}, "0000/Q.zip"},
		{"tokens cannot add levels", "{collection}/{name}.zip", &event.Notification{ProductName: "Q", Collection: "../a/b"}, "___a_b/Q.zip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Key(tc.template, tc.n); got != tc.want {
				t.Errorf("got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestProductOf(t *testing.T) {
	p := ProductOf(fixture(t, "created-s2.json", nil))
	if p.ContentLength != 1132462080 || len(p.Checksums) != 2 || p.Checksums[0] != (fetch.Checksum{Algorithm: "MD5", Value: "9f1a4c0c2d7b6e0f3a8b1c2d3e4f5a6b"}) ||
		p.Online == nil || !*p.Online || p.Name == "" || p.ID == "" {
		t.Errorf("%+v", p)
	}
}

func TestMessages(t *testing.T) {
	h := nats.Header{"Cdse-Product-Id": {"id1"}, "Cdse-Collection": {"SENTINEL-2"}, "Nats-Msg-Id": {"created:id1"}, "Ce-Id": {"x"}}
	n := fixture(t, "created-s2.json", h)
	for _, tc := range []struct {
		name        string
		msg         *nats.Msg
		subject, id string
		headers     map[string]string
	}{
		{"verified", fetchedMsg("cdse.fetched", "f", n, h, fetch.Result{URL: "s3://b/k", Size: 10, Took: 1234567 * time.Microsecond,
			Verified: []fetch.Checksum{{Algorithm: "MD5", Value: "AB"}, {Algorithm: "BLAKE3", Value: "cd"}}}),
			"cdse.fetched.created.SENTINEL-2.S2MSI2A", "fetched/f/" + n.ProductID + "/created/ab",
			map[string]string{"Cdse-Object-Url": "s3://b/k", "Cdse-Object-Size": "10", "Cdse-Checksum-MD5": "ab", "Cdse-Checksum-BLAKE3": "cd",
				"Cdse-Fetch-Took": "1.235s", "Cdse-Product-Id": "id1", "Cdse-Unverified": "", "Ce-Id": ""}},
		{"unverified", fetchedMsg("cdse.fetched", "f", n, h, fetch.Result{URL: "file:///d/k", Size: 7, Unverified: "no checksum in the catalogue"}),
			"cdse.fetched.created.SENTINEL-2.S2MSI2A", "fetched/f/" + n.ProductID + "/created/7",
			map[string]string{"Cdse-Unverified": "no checksum in the catalogue", "Cdse-Checksum-MD5": ""}},
		{"failed", failedMsg("cdse.fetchfailed", "f", "", "S2.MSI", []byte("{}"), h, 42, "checksum mismatch"),
			"cdse.fetchfailed.UNKNOWN.S2_MSI", "failed/f/42",
			map[string]string{"Cdse-Fetch-Error": "checksum mismatch", "Cdse-Product-Id": "id1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.msg.Subject != tc.subject {
				t.Errorf("subject %s, want %s", tc.msg.Subject, tc.subject)
			}
			if got := tc.msg.Header.Get("Nats-Msg-Id"); got != tc.id {
				t.Errorf("id %s, want %s", got, tc.id)
			}
			for k, v := range tc.headers {
				if got := tc.msg.Header.Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
		})
	}
}

// TestPrefixesArePlanned: the fetcher's default prefixes are those the
// embedded server already denies to consumers (topology.PlannedPrefixes),
// written as text in fetchconfig so that it stays data.
func TestPrefixesArePlanned(t *testing.T) {
	d := fetchconfig.Default()
	for _, p := range []string{d.FetchedPrefix, d.FailedPrefix} {
		if !slices.Contains(topology.PlannedPrefixes, p) {
			t.Errorf("%s is not in topology.PlannedPrefixes %v", p, topology.PlannedPrefixes)
		}
	}
}
