package event_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/cdse-jetstream/receiver/event"
)

// notice is a notice as the receiver publishes it (internal/stream/supersede
// marshals event.Superseded and sets these headers).
func notice(t *testing.T) (data []byte, h nats.Header) {
	t.Helper()
	s := event.Superseded{Notice: event.NoticeSuperseded, Reason: event.NewerArrived,
		Acquisition: "S2A_MSIL1C_20150704T101006_R022_T32TPS",
		Superseded:  event.VersionedProduct{ID: "8a1b2c3d-0000-4000-8000-000000000001", Name: "S2A_MSIL1C_20150704T101006_N0204_R022_T32TPS_20150704T101337.SAFE", Version: "N0204"},
		By:          event.VersionedProduct{ID: "8a1b2c3d-0000-4000-8000-000000000002", Name: "S2A_MSIL1C_20150704T101006_N0500_R022_T32TPS_20231011T134419.SAFE", Version: "N0500"}}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	h = nats.Header{}
	h.Set(event.HeaderNotice, event.NoticeSuperseded)
	h.Set(event.HeaderMsgID, event.SupersededMsgID(s.Superseded.ID, s.By.ID))
	h.Set(event.HeaderProductID, s.Superseded.ID)
	h.Set(event.HeaderCollection, "SENTINEL-2")
	h.Set(event.HeaderProductType, "S2MSI1C")
	return data, h
}

// TestDecodeNotice: Decode answers ErrNotice for a notice, by its header or,
// without headers, by its body, and that error is ErrNotNotification too
// (a consumer written before notices skips them as it skips anything that
// is no notification); DecodeSuperseded reads it, and refuses a product
// event.
func TestDecodeNotice(t *testing.T) {
	data, h := notice(t)
	for name, h := range map[string]nats.Header{"headers": h, "body alone": nil} {
		_, err := event.DecodeData(data, h)
		if !errors.Is(err, event.ErrNotice) || !errors.Is(err, event.ErrNotNotification) {
			t.Errorf("%s: Decode: %v, want ErrNotice and ErrNotNotification", name, err)
		}
	}
	// The header alone decides: whatever the body, a message marked as a
	// notice is never taken for a product event.
	created := notifications(t)["created-s2"]
	if _, err := event.DecodeData(created, h); !errors.Is(err, event.ErrNotice) {
		t.Errorf("a product body with %s: %v", event.HeaderNotice, err)
	}
	s, err := event.DecodeSupersededData(data, h)
	if err != nil {
		t.Fatal(err)
	}
	if s.Reason != event.NewerArrived || s.Superseded.Version != "N0204" || s.By.Version != "N0500" ||
		s.ID != "superseded:8a1b2c3d-0000-4000-8000-000000000001:8a1b2c3d-0000-4000-8000-000000000002" ||
		s.Collection != "SENTINEL-2" || s.ProductType != "S2MSI1C" {
		t.Errorf("decoded %+v", s)
	}
	for _, bad := range [][]byte{created, []byte(`{"notice":"other","superseded":{"id":"a"},"by":{"id":"b"}}`), []byte(`{"notice":"superseded"}`), []byte("<html>")} {
		if _, err := event.DecodeSupersededData(bad, nil); !errors.Is(err, event.ErrNotSuperseded) {
			t.Errorf("%.30s: %v, want ErrNotSuperseded", bad, err)
		}
	}
}

func TestSupersededSubject(t *testing.T) {
	for _, c := range []struct{ collection, productType, want string }{
		{"SENTINEL-2", "S2MSI1C", "cdse.superseded.SENTINEL-2.S2MSI1C"},
		{"SENTINEL-1", "", "cdse.superseded.SENTINEL-1.UNKNOWN"},
		{"a.b", "*", "cdse.superseded.a_b._"},
	} {
		if got := event.SupersededSubject(event.DefaultSupersededPrefix, c.collection, c.productType); got != c.want {
			t.Errorf("%q %q: %s, want %s", c.collection, c.productType, got, c.want)
		}
	}
}
