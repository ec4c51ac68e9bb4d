package fetcher

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetch"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
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
			Verified: []fetch.Checksum{{Algorithm: "MD5", Value: "AB"}, {Algorithm: "BLAKE3", Value: "cd"}}}, "s3://b/k.json"),
			"cdse.fetched.created.SENTINEL-2.S2MSI2A", "fetched/f/created:id1/ab",
			map[string]string{"Cdse-Object-Url": "s3://b/k", "Cdse-Stac-Item": "s3://b/k.json", "Cdse-Object-Size": "10", "Cdse-Checksum-MD5": "ab", "Cdse-Checksum-BLAKE3": "cd",
				"Cdse-Fetch-Took": "1.235s", "Cdse-Product-Id": "id1", "Cdse-Unverified": "", "Ce-Id": ""}},
		{"unverified", fetchedMsg("cdse.fetched", "f", n, h, fetch.Result{URL: "file:///d/k", Size: 7, Unverified: "no checksum in the catalogue"}, ""),
			"cdse.fetched.created.SENTINEL-2.S2MSI2A", "fetched/f/created:id1/7",
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

// TestMessagesDecode: what fetchedMsg, deletedMsg and failedMsg build,
// event.DecodeFetchedData and event.DecodeFailedData read back as it was
// put in: the two ends of the fetched and failed events agree.
func TestMessagesDecode(t *testing.T) {
	h := nats.Header{"Cdse-Product-Id": {"id1"}, "Cdse-Collection": {"SENTINEL-2"}, "Cdse-Source": {"push"}, "Nats-Msg-Id": {"created:id1"}}
	n := fixture(t, "created-s2.json", h)
	del := fixture(t, "deleted-s3-novalue.json", nil)
	for _, tc := range []struct {
		name string
		msg  *nats.Msg
		want event.Fetched // Notification: checked apart
		of   *event.Notification
	}{
		{"verified", fetchedMsg("cdse.fetched", "f", n, h, fetch.Result{URL: "s3://b/k", Size: 1132462080, Took: 1234567 * time.Microsecond,
			Verified: []fetch.Checksum{{Algorithm: "MD5", Value: "9F1A"}, {Algorithm: "blake3", Value: "cd"}}}, "s3://b/k.json"),
			event.Fetched{ObjectURL: "s3://b/k", Size: 1132462080, Took: 1235 * time.Millisecond, Checksums: map[string]string{"MD5": "9f1a", "BLAKE3": "cd"}, StacItem: "s3://b/k.json"}, n},
		{"unverified", fetchedMsg("cdse.fetched", "f", n, h, fetch.Result{URL: "file:///d/k", Size: 7, Unverified: "no checksum in the catalogue"}, ""),
			event.Fetched{ObjectURL: "file:///d/k", Size: 7, Unverified: "no checksum in the catalogue"}, n},
		{"unverified without a reason", fetchedMsg("cdse.fetched", "f", n, h, fetch.Result{URL: "file:///d/k", Took: time.Second}, ""),
			event.Fetched{ObjectURL: "file:///d/k", Unverified: "no checksum", Took: time.Second}, n},
		{"already there", fetchedMsg("cdse.fetched", "f", n, h, fetch.Result{URL: "s3://b/k", Size: 7, AlreadyThere: true,
			Verified: []fetch.Checksum{{Algorithm: "MD5", Value: "9f1a"}}}, ""),
			event.Fetched{ObjectURL: "s3://b/k", Size: 7, Unchanged: true, Checksums: map[string]string{"MD5": "9f1a"}}, n},
		{"deleted", deletedMsg("cdse.fetched", "f", del, nil, "s3://b/gone"),
			event.Fetched{ObjectURL: "s3://b/gone", Deleted: true}, del},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := event.DecodeFetchedData(tc.msg.Data, tc.msg.Header)
			if err != nil {
				t.Fatal(err)
			}
			if f.ObjectURL != tc.want.ObjectURL || f.Size != tc.want.Size || f.Took != tc.want.Took || f.Unverified != tc.want.Unverified ||
				f.Deleted != tc.want.Deleted || f.Unchanged != tc.want.Unchanged || !maps.Equal(f.Checksums, tc.want.Checksums) || f.StacItem != tc.want.StacItem {
				t.Errorf("got  %+v\nwant %+v", *f, tc.want)
			}
			if f.ProductID != tc.of.ProductID || f.Event != tc.of.Event || f.ProductType != tc.of.ProductType || f.Collection != tc.of.Collection ||
				f.Source != tc.of.Source || string(f.Data) != string(tc.of.Data) || f.ID != tc.msg.Header.Get(event.HeaderMsgID) {
				t.Errorf("notification %+v\nwant %+v", f.Notification, tc.of)
			}
		})
	}

	for _, tc := range []struct {
		name      string
		msg       *nats.Msg
		reason    string
		productID string
		decoded   bool
	}{
		{"a notification", failedMsg("cdse.fetchfailed", "f", n.Collection, n.ProductType, n.Data, h, 42, "checksum mismatch"),
			"checksum mismatch", n.ProductID, true},
		{"an undecodable body", failedMsg("cdse.fetchfailed", "f", "", "", []byte("not json"), h, 43, "undecodable: event: not a catalogue notification"),
			"undecodable: event: not a catalogue notification", "id1", false},
	} {
		t.Run("failed/"+tc.name, func(t *testing.T) {
			f, err := event.DecodeFailedData(tc.msg.Data, tc.msg.Header)
			if err != nil {
				t.Fatal(err)
			}
			if f.Reason != tc.reason || f.ProductID != tc.productID || f.ID != tc.msg.Header.Get(event.HeaderMsgID) || string(f.Data) != string(tc.msg.Data) ||
				(f.Notification != nil) != tc.decoded || (f.DecodeErr == nil) != tc.decoded {
				t.Errorf("got %+v", *f)
			}
			if tc.decoded && (f.Notification.ProductType != n.ProductType || f.Notification.Event != n.Event) {
				t.Errorf("notification %+v", f.Notification)
			}
		})
	}
	// Neither decoder takes the other's message.
	if _, err := event.DecodeFailedData(n.Data, fetchedMsg("cdse.fetched", "f", n, h, fetch.Result{URL: "s3://b/k", Size: 1}, "").Header); !errors.Is(err, event.ErrNotFailed) {
		t.Errorf("a fetched event decoded as failed: %v", err)
	}
	if _, err := event.DecodeFetchedData(n.Data, failedMsg("cdse.fetchfailed", "f", "", "", n.Data, h, 1, "x").Header); !errors.Is(err, event.ErrNotFetched) {
		t.Errorf("a failed event decoded as fetched: %v", err)
	}
}

// TestDefaultsAreEvents: the fetcher's default prefixes and stream are
// those the event package tells consumers.
func TestDefaultsAreEvents(t *testing.T) {
	d := fetchconfig.Default()
	if d.FetchedPrefix != event.DefaultFetchedPrefix || d.FailedPrefix != event.DefaultFailedPrefix || d.Stream != event.DefaultFetchedStream {
		t.Errorf("fetchconfig %s %s %s, event %s %s %s", d.FetchedPrefix, d.FailedPrefix, d.Stream,
			event.DefaultFetchedPrefix, event.DefaultFailedPrefix, event.DefaultFetchedStream)
	}
}

func TestConsumerSubjects(t *testing.T) {
	for _, tt := range []struct {
		subjects, consumer string
		onDelete           string
		want               string
	}{
		{"", "fetcher", "keep", "[cdse.product.created.> cdse.product.modified.> cdse.fetchretry.CDSE_PRODUCTS.fetcher.>]"},
		{"", "alps", "delete", "[cdse.product.created.> cdse.product.modified.> cdse.product.deleted.> cdse.fetchretry.CDSE_PRODUCTS.alps.>]"},
		{"cdse.interest.alps.>", "alps", "keep", "[cdse.interest.alps.> cdse.fetchretry.CDSE_PRODUCTS.alps.>]"},
		// Listed already, or covered: not twice (NATS refuses overlapping filters).
		{"cdse.product.created.>,cdse.fetchretry.CDSE_PRODUCTS.fetcher.>", "fetcher", "keep", "[cdse.product.created.> cdse.fetchretry.CDSE_PRODUCTS.fetcher.>]"},
		{"cdse.fetchretry.*.fetcher.>", "fetcher", "keep", "[cdse.fetchretry.*.fetcher.>]"},
		{"cdse.fetchretry.>", "fetcher", "keep", "[cdse.fetchretry.>]"},
		{">", "fetcher", "keep", "[>]"},
		// Another consumer's retries, or another stream's, do not cover this one's.
		{"cdse.fetchretry.CDSE_PRODUCTS.other.>", "fetcher", "keep", "[cdse.fetchretry.CDSE_PRODUCTS.other.> cdse.fetchretry.CDSE_PRODUCTS.fetcher.>]"},
		{"cdse.fetchretry.STAGING.fetcher.>", "fetcher", "keep", "[cdse.fetchretry.STAGING.fetcher.> cdse.fetchretry.CDSE_PRODUCTS.fetcher.>]"},
		// FETCH_ON_SUPERSEDED=delete reads the receiver's notices (keep
		// would ack them and do nothing); covered already, not twice.
		{"", "fetcher", "keep/delete", "[cdse.product.created.> cdse.product.modified.> cdse.fetchretry.CDSE_PRODUCTS.fetcher.> cdse.superseded.>]"},
		{"cdse.interest.alps.>", "alps", "keep/delete", "[cdse.interest.alps.> cdse.fetchretry.CDSE_PRODUCTS.alps.> cdse.superseded.>]"},
		{">", "fetcher", "keep/delete", "[>]"},
		{"cdse.>", "fetcher", "keep/delete", "[cdse.>]"},
	} {
		cfg := fetchconfig.Default()
		cfg.Subjects, cfg.FetchConsumer = tt.subjects, tt.consumer
		cfg.OnDelete, cfg.OnSuperseded, _ = strings.Cut(tt.onDelete, "/")
		if cfg.OnSuperseded == "" {
			cfg.OnSuperseded = "keep"
		}
		if got := fmt.Sprint(ConsumerSubjects(cfg)); got != tt.want {
			t.Errorf("%q for %s: %s, want %s", tt.subjects, tt.consumer, got, tt.want)
		}
	}
}

// TestFilesEvents: the fetched event of a product stored as a folder of
// some of its files says so (mode, verified against the manifest, the
// count, the bytes fetched against the archive's), without checksum
// headers, and is read back by event.DecodeFetchedData; its id names the
// manifest and the selection. One whose archive was stored instead says
// why.
func TestFilesEvents(t *testing.T) {
	h := nats.Header{"Cdse-Product-Id": {"id1"}, "Nats-Msg-Id": {"created:id1"}}
	n := fixture(t, "created-s2.json", h)
	res := fetch.Result{URL: "file:///d/k.SAFE/", Size: 3754885, Files: &fetch.FilesResult{Patterns: []string{"MTD_MSIL2A.xml"},
		Files: make([]fetch.FileResult, 5), Bytes: 3754885, Fetched: 3700000, ArchiveSize: 8388608, Digest: "d1"}}
	m := fetchedMsg("cdse.fetched", "f", n, h, res, "")
	for k, v := range map[string]string{event.HeaderFetchMode: "files", event.HeaderVerifiedAgainst: "manifest", event.HeaderFileCount: "5",
		event.HeaderFetchedBytes: "3700000", event.HeaderArchiveSize: "8388608", event.HeaderObjectSize: "3754885", event.HeaderUnverified: "",
		event.HeaderChecksumPrefix + "MD5": "", event.HeaderMsgID: "fetched/f/created:id1/files-d1"} {
		if got := m.Header.Get(k); got != v {
			t.Errorf("%s %q, want %q", k, got, v)
		}
	}
	f, err := event.DecodeFetchedData(m.Data, m.Header)
	if err != nil {
		t.Fatal(err)
	}
	if f.Files == nil || f.Files.Count != 5 || f.Files.FetchedBytes != 3700000 || f.Files.ArchiveSize != 8388608 || !f.Verified() {
		t.Errorf("decoded %+v, verified %t", f.Files, f.Verified())
	}
	res.Files.Digest = "d2"
	if other := fetchedMsg("cdse.fetched", "f", n, h, res, ""); other.Header.Get(event.HeaderMsgID) == m.Header.Get(event.HeaderMsgID) {
		t.Error("another selection, the same event id")
	}
	fb := fetchedMsg("cdse.fetched", "f", n, h, fetch.Result{URL: "file:///d/k.zip", Size: 7, Verified: []fetch.Checksum{{Algorithm: "MD5", Value: "ab"}},
		Files: &fetch.FilesResult{Fallback: "no manifest"}}, "")
	if fb.Header.Get(event.HeaderFetchMode) != "archive" || fb.Header.Get(event.HeaderFilesFallback) != "no manifest" || fb.Header.Get(event.HeaderFileCount) != "" ||
		fb.Header.Get(event.HeaderChecksumPrefix+"MD5") != "ab" {
		t.Errorf("fallback headers %v", fb.Header)
	}
}

// TestSelection: an interest's files: list wins over FETCH_FILES for its
// copies; a product message (no interest), or an interest without a
// list, takes FETCH_FILES.
func TestSelection(t *testing.T) {
	s := Selection{Default: []string{"**/*.xml"}, ByInterest: map[string][]string{"bands": {"GRANULE/*/IMG_DATA/R10m/*.jp2"}, "empty": nil}}
	for _, c := range []struct {
		interest string
		want     []string
	}{{"", s.Default}, {"bands", s.ByInterest["bands"]}, {"empty", s.Default}, {"other", s.Default}} {
		if got := s.For(c.interest); !slices.Equal(got, c.want) {
			t.Errorf("%q: %q, want %q", c.interest, got, c.want)
		}
	}
	if (Selection{}).For("bands") != nil {
		t.Error("no selection: not the archive")
	}
}

// TestTwoModifiedEventsOfTheSameBytes: two modified events of one product
// whose bytes did not change (the catalogue changed its metadata twice)
// each get a fetched event of their own (the chaos run found the second
// dropped as a duplicate), and a redelivery of either the same id.
func TestTwoModifiedEventsOfTheSameBytes(t *testing.T) {
	n := &event.Notification{ProductID: "id1", ProductName: "N.SAFE", Event: event.Modified, Collection: "SENTINEL-2", ProductType: "S2MSI2A", Data: []byte(`{}`)}
	res := fetch.Result{URL: "s3://b/k", Size: 7, AlreadyThere: true, Verified: []fetch.Checksum{{Algorithm: "MD5", Value: "9f1a"}}}
	first, second := nats.Header{}, nats.Header{}
	first.Set(event.HeaderMsgID, "modified/id1/2026-11-27T10:00:00Z")
	second.Set(event.HeaderMsgID, "modified/id1/2026-11-27T11:00:00Z")
	a := fetchedMsg("cdse.fetched", "f", n, first, res, "").Header.Get(event.HeaderMsgID)
	b := fetchedMsg("cdse.fetched", "f", n, second, res, "").Header.Get(event.HeaderMsgID)
	again := fetchedMsg("cdse.fetched", "f", n, first, res, "").Header.Get(event.HeaderMsgID)
	if a == b || a != again {
		t.Errorf("fetched ids %q and %q (redelivery %q): want two, and a redelivery's the same", a, b, again)
	}
}
