package event_test

import (
	"errors"
	"maps"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cdse-jetstream/receiver/event"
)

// msg is a Msg over a core message, as jetstream.Msg is one.
type msg struct{ m *nats.Msg }

func (m msg) Data() []byte         { return m.m.Data }
func (m msg) Headers() nats.Header { return m.m.Header }

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../testdata/notifications/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func header(kv ...string) nats.Header {
	h := nats.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func TestDecodeFetched(t *testing.T) {
	created, deleted := fixture(t, "created-s2.json"), fixture(t, "deleted-s3-novalue.json")
	stored := func(extra ...string) nats.Header {
		return header(append([]string{event.HeaderMsgID, "fetched/f/x/created/ab", event.HeaderCollection, "SENTINEL-2",
			event.HeaderObjectURL, "s3://b/k.zip", event.HeaderObjectSize, "1132462080", event.HeaderFetchTook, "1.235s"}, extra...)...)
	}
	for _, tc := range []struct {
		name string
		data []byte
		h    nats.Header
		want event.Fetched // Notification left out: checked apart
		err  []error       // the error wraps each
		says string        // and names this
	}{
		{name: "verified", data: created, h: stored(event.HeaderChecksumPrefix+"MD5", "9F1A", event.HeaderChecksumPrefix+"BLAKE3", "cd"),
			want: event.Fetched{ObjectURL: "s3://b/k.zip", Size: 1132462080, Took: 1235 * time.Millisecond,
				Checksums: map[string]string{"MD5": "9f1a", "BLAKE3": "cd"}}},
		{name: "checksum header in another case", data: created, h: stored("cdse-checksum-md5", "ab"),
			want: event.Fetched{ObjectURL: "s3://b/k.zip", Size: 1132462080, Took: 1235 * time.Millisecond, Checksums: map[string]string{"MD5": "ab"}}},
		{name: "unverified", data: created, h: stored(event.HeaderUnverified, "no checksum in the catalogue"),
			want: event.Fetched{ObjectURL: "s3://b/k.zip", Size: 1132462080, Took: 1235 * time.Millisecond, Unverified: "no checksum in the catalogue"}},
		{name: "empty object", data: created, h: stored(event.HeaderObjectSize, "0", event.HeaderUnverified, "no checksum"),
			want: event.Fetched{ObjectURL: "s3://b/k.zip", Took: 1235 * time.Millisecond, Unverified: "no checksum"}},
		{name: "deleted: the URL only", data: deleted, h: header(event.HeaderObjectURL, "file:///d/k.zip"),
			want: event.Fetched{ObjectURL: "file:///d/k.zip", Deleted: true}},
		{name: "no object URL", data: created, h: stored(event.HeaderObjectURL, ""),
			err: []error{event.ErrNotFetched}, says: event.HeaderObjectURL},
		{name: "deleted without the object URL", data: deleted, h: nil,
			err: []error{event.ErrNotFetched}, says: event.HeaderObjectURL},
		{name: "no size", data: created, h: header(event.HeaderObjectURL, "s3://b/k.zip"),
			err: []error{event.ErrNotFetched}, says: event.HeaderObjectSize},
		{name: "size not a number", data: created, h: stored(event.HeaderObjectSize, "1 GB"),
			err: []error{event.ErrNotFetched, strconv.ErrSyntax}, says: `"1 GB" is not a byte count`},
		{name: "negative size", data: created, h: stored(event.HeaderObjectSize, "-1"),
			err: []error{event.ErrNotFetched}, says: "negative"},
		{name: "took not a duration", data: created, h: stored(event.HeaderFetchTook, "soon"),
			err: []error{event.ErrNotFetched}, says: event.HeaderFetchTook},
		{name: "body not a notification", data: []byte("garbage"), h: stored(),
			err: []error{event.ErrNotFetched, event.ErrNotNotification}, says: "body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := event.DecodeFetched(msg{&nats.Msg{Data: tc.data, Header: tc.h}})
			if tc.err != nil {
				if err == nil {
					t.Fatalf("decoded %+v, want an error", f)
				}
				for _, target := range tc.err {
					if !errors.Is(err, target) {
						t.Errorf("%v does not wrap %v", err, target)
					}
				}
				if !strings.Contains(err.Error(), tc.says) {
					t.Errorf("%v does not say %q", err, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Notification == nil || f.ProductID == "" || string(f.Data) != string(tc.data) {
				t.Fatalf("notification %+v", f.Notification)
			}
			if f.ObjectURL != tc.want.ObjectURL || f.Size != tc.want.Size || f.Took != tc.want.Took || f.Unverified != tc.want.Unverified ||
				f.Deleted != tc.want.Deleted || !maps.Equal(f.Checksums, tc.want.Checksums) || f.Verified() != (len(tc.want.Checksums) > 0) {
				t.Errorf("got  %+v\nwant %+v", *f, tc.want)
			}
		})
	}
}

func TestDecodeFetchedKeepsTheProductHeaders(t *testing.T) {
	h := header(event.HeaderObjectURL, "s3://b/k", event.HeaderObjectSize, "7", event.HeaderMsgID, "fetched/f/p/created/7",
		event.HeaderSource, "push", event.HeaderDownloadURL, "https://example.test/Products(p)/$value")
	f, err := event.DecodeFetchedData(fixture(t, "created-short.json"), h)
	if err != nil {
		t.Fatal(err)
	}
	if f.ID != "fetched/f/p/created/7" || f.Source != "push" || f.DownloadURL != "https://example.test/Products(p)/$value" || f.Event != event.Created {
		t.Errorf("%+v", f.Notification)
	}
}

func TestDecodeFailed(t *testing.T) {
	created := fixture(t, "created-s2.json")
	for _, tc := range []struct {
		name                  string
		data                  []byte
		h                     nats.Header
		err                   bool
		reason, id, productID string
		undecodable           bool
	}{
		{name: "a notification", data: created,
			h:      header(event.HeaderFetchError, "checksum mismatch", event.HeaderMsgID, "failed/f/42", event.HeaderProductID, "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f"),
			reason: "checksum mismatch", id: "failed/f/42", productID: "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f"},
		{name: "undecodable body: kept, the id from the header", data: []byte("not json"),
			h:      header(event.HeaderFetchError, "undecodable: event: not a catalogue notification", event.HeaderMsgID, "failed/f/7", event.HeaderProductID, "p1"),
			reason: "undecodable: event: not a catalogue notification", id: "failed/f/7", productID: "p1", undecodable: true},
		{name: "undecodable body without headers", data: []byte(`{"SubscriptionEvent":"created"}`),
			h: header(event.HeaderFetchError, "undecodable"), reason: "undecodable", undecodable: true},
		{name: "empty reason is still a failed event", data: created, h: header(event.HeaderFetchError, ""),
			productID: "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f"},
		{name: "no error header", data: created, h: header(event.HeaderObjectURL, "s3://b/k"), err: true},
		{name: "no headers", data: created, h: nil, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := event.DecodeFailed(msg{&nats.Msg{Data: tc.data, Header: tc.h}})
			if tc.err {
				if !errors.Is(err, event.ErrNotFailed) || !strings.Contains(fmtErr(err), event.HeaderFetchError) {
					t.Fatalf("got %+v, %v; want ErrNotFailed naming %s", f, err, event.HeaderFetchError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Reason != tc.reason || f.ID != tc.id || f.ProductID != tc.productID || string(f.Data) != string(tc.data) {
				t.Errorf("got %+v", *f)
			}
			if tc.undecodable {
				if f.Notification != nil || !errors.Is(f.DecodeErr, event.ErrNotNotification) {
					t.Errorf("notification %+v, decode error %v", f.Notification, f.DecodeErr)
				}
				return
			}
			if f.DecodeErr != nil || f.Notification == nil || f.Notification.ProductType != "S2MSI2A" || f.Notification.ID != tc.id {
				t.Errorf("notification %+v, decode error %v", f.Notification, f.DecodeErr)
			}
		})
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestDecodeFetchedFiles: a product stored as a folder of some of its
// files is verified by its manifest, not by checksum headers; one whose
// archive was stored instead says why.
func TestDecodeFetchedFiles(t *testing.T) {
	created := fixture(t, "created-s2.json")
	h := header(event.HeaderObjectURL, "s3://b/k.SAFE/", event.HeaderObjectSize, "3754885", event.HeaderFetchMode, event.FetchModeFiles,
		event.HeaderVerifiedAgainst, "manifest", event.HeaderFileCount, "5", event.HeaderFetchedBytes, "3754885", event.HeaderArchiveSize, "8388608")
	f, err := event.DecodeFetchedData(created, h)
	if err != nil {
		t.Fatal(err)
	}
	if f.Files == nil || *f.Files != (event.FetchedFiles{Count: 5, FetchedBytes: 3754885, ArchiveSize: 8388608, VerifiedAgainst: "manifest"}) || !f.Verified() || f.FilesFallback != "" {
		t.Errorf("files %+v, verified %t", f.Files, f.Verified())
	}
	h.Set(event.HeaderUnverified, "2 of the 5 files selected have no checksum in the manifest")
	if f, err := event.DecodeFetchedData(created, h); err != nil || f.Verified() {
		t.Errorf("some files unverified: %v, verified %t", err, f.Verified())
	}
	for _, k := range []string{event.HeaderFileCount, event.HeaderFetchedBytes, event.HeaderArchiveSize} {
		bad := header(event.HeaderObjectURL, "s3://b/k.SAFE/", event.HeaderObjectSize, "1", event.HeaderFetchMode, event.FetchModeFiles, k, "-2")
		if _, err := event.DecodeFetchedData(created, bad); !errors.Is(err, event.ErrNotFetched) || !strings.Contains(err.Error(), k) {
			t.Errorf("%s -2: %v", k, err)
		}
	}
	fb := header(event.HeaderObjectURL, "s3://b/k.zip", event.HeaderObjectSize, "1", event.HeaderFetchMode, event.FetchModeArchive,
		event.HeaderFilesFallback, "no manifest", event.HeaderChecksumPrefix+"MD5", "ab")
	if f, err := event.DecodeFetchedData(created, fb); err != nil || f.Files != nil || f.FilesFallback != "no manifest" || !f.Verified() {
		t.Errorf("fallback: %v %+v", err, f)
	}
}

// TestDecodeSkippedAndSupersededRemoved: the fetched event of a product
// the fetcher skipped (FETCH_VERSIONS=latest) is ErrSkipped, also
// ErrNotFetched, to DecodeFetched, and DecodeSkipped reads it; the event
// of a superseded product removed from the target (FETCH_ON_SUPERSEDED=
// delete), whose body is the notice, is a Deleted fetched event naming
// the notice.
func TestDecodeSkippedAndSupersededRemoved(t *testing.T) {
	created := fixture(t, "created-s2.json")
	skipped := header(event.HeaderMsgID, "fetched/f/x/skipped", event.HeaderCollection, "SENTINEL-2",
		event.HeaderSkipped, "superseded by b-id (B.SAFE)", event.HeaderSupersededBy, "b-id", event.HeaderSupersededByName, "B.SAFE")
	_, err := event.DecodeFetchedData(created, skipped)
	if !errors.Is(err, event.ErrSkipped) || !errors.Is(err, event.ErrNotFetched) || !strings.Contains(err.Error(), "superseded by b-id (B.SAFE)") {
		t.Errorf("DecodeFetched of a skipped product: %v, want ErrSkipped and ErrNotFetched saying why", err)
	}
	s, err := event.DecodeSkipped(msg{&nats.Msg{Data: created, Header: skipped}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Reason != "superseded by b-id (B.SAFE)" || s.SupersededBy != (event.VersionedProduct{ID: "b-id", Name: "B.SAFE"}) || s.ProductID == "" || s.Event != event.Created {
		t.Errorf("skipped %+v, notification %+v", s, s.Notification)
	}
	if _, err := event.DecodeSkippedData(created, header(event.HeaderObjectURL, "s3://b/k.zip")); !errors.Is(err, event.ErrNotFetched) {
		t.Errorf("DecodeSkipped of an event that is not one: %v", err)
	}

	notice := []byte(`{"notice":"superseded","reason":"newer_arrived","acquisition":"S2A_MSIL1C_20150704T101006_R022_T32TPS",
"superseded":{"id":"a-id","name":"S2A_MSIL1C_20150704T101006_N0204_R022_T32TPS_20150704T101337.SAFE","version":"0204"},
"by":{"id":"b-id","name":"S2A_MSIL1C_20150704T101006_N0500_R022_T32TPS_20231011T134419.SAFE","version":"0500"}}`)
	h := header(event.HeaderMsgID, "fetched/f/superseded/a-id/b-id", event.HeaderObjectURL, "file:///d/k.zip",
		event.HeaderCollection, "SENTINEL-2", event.HeaderProductType, "S2MSI1C", event.HeaderSupersededBy, "b-id")
	f, err := event.DecodeFetchedData(notice, h)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Deleted || f.ObjectURL != "file:///d/k.zip" || f.Superseded == nil || f.Superseded.By.ID != "b-id" || f.Superseded.ID != "superseded:a-id:b-id" ||
		f.ProductID != "a-id" || f.ProductName != "S2A_MSIL1C_20150704T101006_N0204_R022_T32TPS_20150704T101337.SAFE" ||
		f.Event != event.Deleted || f.Collection != "SENTINEL-2" || f.ProductType != "S2MSI1C" || f.Version != "0204" {
		t.Errorf("removed %+v, notification %+v", f, f.Notification)
	}
	h.Del(event.HeaderObjectURL)
	if _, err := event.DecodeFetchedData(notice, h); !errors.Is(err, event.ErrNotFetched) || !errors.Is(err, event.ErrNotice) {
		t.Errorf("a notice without an object: %v, want ErrNotFetched (ErrNotice)", err)
	}
}
