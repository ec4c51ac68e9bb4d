package supersede

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/versions"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// failingStore is the versions bucket, whose next store fails: the
// receiver dies (or loses NATS) between the notice and the bucket.
type failingStore struct {
	jetstream.KeyValue
	fail bool
}

var errStore = errors.New("store lost")

func (f *failingStore) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if f.fail {
		f.fail = false
		return 0, errStore
	}
	return f.KeyValue.Create(ctx, key, value, opts...)
}

func (f *failingStore) Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error) {
	if f.fail {
		f.fail = false
		return 0, errStore
	}
	return f.KeyValue.Update(ctx, key, value, revision)
}

// TestNoticeBeforeStore: a notice is published before the versions bucket
// records it; when the store fails, the product event is taken again (a
// redelivery, or another replica), decided again from the bucket as it
// was, and its notice published again under the same Nats-Msg-Id: the
// stream keeps one. The bucket then knows it, and Lookup says so.
func TestNoticeBeforeStore(t *testing.T) {
	js, closeNC := natstest.JetStream(t, natstest.RunJetStream(t).ClientURL())
	defer closeNC()
	ctx := context.Background()
	topo := topology.New(js, topology.Options{Stream: event.DefaultStream, SubjectPrefix: event.DefaultPrefix, Duplicates: time.Hour,
		SupersededPrefix: event.DefaultSupersededPrefix})
	if _, err := topo.EnsureProduct(ctx); err != nil {
		t.Fatal(err)
	}
	log, _ := test.NewNullLogger()
	tr, err := New(Options{MaxAge: time.Hour}, topo, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := topo.Versions(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// A real pair (internal/cdse/versions/testdata/names.json): N0204,
	// then its Collection-1 reprocessing N0500.
	old := known{ID: "8a1b2c3d-0000-4000-8000-000000000001", Name: "S2A_MSIL1C_20150704T101006_N0204_R022_T32TPS_20150704T101337.SAFE", Collection: "SENTINEL-2", ProductType: "S2MSI1C"}
	newer := known{ID: "8a1b2c3d-0000-4000-8000-000000000002", Name: "S2A_MSIL1C_20150704T101006_N0500_R022_T32TPS_20231011T134419.SAFE", Collection: "SENTINEL-2", ProductType: "S2MSI1C"}
	id, ok := versions.Identify(old.Name, versions.Attrs{})
	newID, _ := versions.Identify(newer.Name, versions.Attrs{})
	if !ok || newID.Acquisition != id.Acquisition {
		t.Fatalf("identities %+v %+v", id, newID)
	}
	old.Version, newer.Version = id.Version, newID.Version
	if err := tr.apply(ctx, kv, id, old, event.Created, "", Product{}); err != nil {
		t.Fatal(err)
	}
	lost := &failingStore{KeyValue: kv, fail: true}
	if err := tr.apply(ctx, lost, newID, newer, event.Created, "", Product{}); !errors.Is(err, errStore) {
		t.Fatalf("the lost store: %v", err)
	}
	if err := tr.apply(ctx, kv, newID, newer, event.Created, "", Product{}); err != nil {
		t.Fatalf("taken again: %v", err)
	}
	var notices []natstest.Msg
	for _, m := range natstest.StreamMessages(t, js, event.DefaultStream) {
		if event.IsNotice(m.Header) {
			notices = append(notices, m)
		}
	}
	if len(notices) != 1 || notices[0].Header.Get(event.HeaderMsgID) != event.SupersededMsgID(old.ID, newer.ID) {
		t.Fatalf("notices %+v, want one, %s", notices, event.SupersededMsgID(old.ID, newer.ID))
	}
	s, err := Lookup(ctx, kv, id.Acquisition, old.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Known || s.SupersededBy == nil || s.SupersededBy.ID != newer.ID || s.SupersededBy.Version != newer.Version ||
		len(s.Latest) != 1 || s.Latest[0].ID != newer.ID {
		t.Errorf("Lookup of the superseded: %+v", s)
	}
	if s, err = Lookup(ctx, kv, id.Acquisition, newer.ID); err != nil || !s.Known || s.SupersededBy != nil {
		t.Errorf("Lookup of the latest: %+v %v", s, err)
	}
	if s, err = Lookup(ctx, kv, "S2A_MSIL1C_unknown", old.ID); err != nil || s.Known || len(s.Latest) != 0 {
		t.Errorf("Lookup of an unknown acquisition: %+v %v", s, err)
	}
}
