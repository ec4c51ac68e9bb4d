package fetcher

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/fetcher/target"
	"github.com/cdse-jetstream/receiver/internal/fetcher/target/file"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/targettest"
)

// removals is a fetcher that removes products (FETCH_ON_DELETE=delete,
// FETCH_ON_SUPERSEDED=delete) beside a product stream that takes the
// receiver's notices, over a real directory; what is stored is put there
// through the directory target itself, as a fetch leaves it.
type removals struct {
	*badDay
	dir string
	tg  *file.Target
}

func startRemovals(t *testing.T) *removals {
	t.Helper()
	dir := t.TempDir()
	b := startBadDayWith(t, dir, cdsesim.Unthrottled, func(c *fetchconfig.Config) {
		c.OnDelete, c.OnSuperseded = "delete", "delete"
	}, func(ctx context.Context, js jetstream.JetStream, cfg fetchconfig.Config, _ *cdsesim.Sim) error {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: cfg.ProductStream.Stream,
			Subjects: []string{cfg.SubjectPrefix + ".>", cfg.VersionsPrefix + ".>"}})
		return err
	})
	tg, err := file.New(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &removals{badDay: b, dir: dir, tg: tg}
}

// s2Named is a Sentinel-2 product of the simulator named by tile (a real
// name's form: the key's date is its sensing start, as a notice's is).
func (r *removals) s2Named(tile string) *cdsesim.Product {
	name := "S2A_MSIL1C_20150704T101006_N0204_R022_" + tile + "_20150704T101337.SAFE"
	return r.sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) {
		p.Name, p.ContentStart = name, sensingStart(name)
		p.ContentEnd = p.ContentStart.Add(20 * time.Second)
	})[0]
}

// deletedBody is p's deleted notification, as the product id and name
// given (p's when "").
func deletedBody(t *testing.T, p *cdsesim.Product, id, name string) []byte {
	t.Helper()
	body, err := json.Marshal(map[string]any{"@odata.context": "$metadata#Notification/$entity", "SubscriptionEvent": "deleted",
		"ProductId": cmpOr(id, p.ID), "ProductName": cmpOr(name, p.Name), "SubscriptionId": uuid.NewString(),
		"NotificationDate": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "value": p.Entity()})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// keyOfBody is the key the fetcher gives the notification body.
func (r *removals) keyOfBody(t *testing.T, body []byte) (string, *event.Notification) {
	t.Helper()
	n, err := event.DecodeData(body, nil)
	if err != nil {
		t.Fatal(err)
	}
	return Key(r.cfg.KeyTemplate, n), n
}

// send puts a message on the product stream and returns its sequence.
func (r *removals) send(t *testing.T, m *nats.Msg) uint64 {
	t.Helper()
	ack, err := r.js.PublishMsg(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	return ack.Sequence
}

// deleted puts the deleted notification body on the product stream.
func (r *removals) deleted(t *testing.T, body []byte) uint64 {
	t.Helper()
	n, err := event.DecodeData(body, nil)
	if err != nil {
		t.Fatal(err)
	}
	// With the headers the receiver sets, which the fetched events carry.
	m := &nats.Msg{Subject: r.cfg.SubjectPrefix + ".deleted." + n.Collection + "." + n.ProductType, Data: body, Header: nats.Header{}}
	m.Header.Set(event.HeaderProductID, n.ProductID)
	m.Header.Set(event.HeaderProductName, n.ProductName)
	m.Header.Set(event.HeaderCollection, n.Collection)
	m.Header.Set(event.HeaderProductType, n.ProductType)
	return r.send(t, m)
}

// notice puts the receiver's notice that n's product (its id and name)
// is superseded on the product stream.
func (r *removals) notice(t *testing.T, n *event.Notification) uint64 {
	t.Helper()
	s := event.Superseded{Notice: event.NoticeSuperseded, Reason: event.NewerArrived, Acquisition: "test",
		Superseded: event.VersionedProduct{ID: n.ProductID, Name: n.ProductName}, By: event.VersionedProduct{ID: uuid.NewString(), Name: "newer"}}
	if key, why := SupersededKey(r.cfg.KeyTemplate, &event.Superseded{Superseded: s.Superseded, Collection: n.Collection, ProductType: n.ProductType}); key != Key(r.cfg.KeyTemplate, n) {
		t.Fatalf("the notice's key %q (%s) is not the product's %q", key, why, Key(r.cfg.KeyTemplate, n))
	}
	body, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	m := &nats.Msg{Subject: event.SupersededSubject(r.cfg.VersionsPrefix, n.Collection, n.ProductType), Data: body, Header: nats.Header{}}
	m.Header.Set(event.HeaderNotice, event.NoticeSuperseded)
	m.Header.Set(event.HeaderMsgID, event.SupersededMsgID(s.Superseded.ID, s.By.ID))
	m.Header.Set(event.HeaderCollection, n.Collection)
	m.Header.Set(event.HeaderProductType, n.ProductType)
	m.Header.Set(event.HeaderProductID, n.ProductID)
	m.Header.Set(event.HeaderProductName, n.ProductName)
	return r.send(t, m)
}

// handled waits until the fetcher's consumer has acknowledged (or
// terminated) the product stream's messages up to seq.
func (r *removals) handled(t *testing.T, seq uint64) {
	t.Helper()
	until(t, 20*time.Second, fmt.Sprintf("message %d handled", seq), func() bool {
		c, err := r.js.Consumer(context.Background(), r.cfg.ProductStream.Stream, r.cfg.FetchConsumer)
		if err != nil {
			return false
		}
		info, err := c.Info(context.Background())
		return err == nil && info.AckFloor.Stream >= seq
	})
}

// put stores key as a fetch would, recording id as its product.
func (r *removals) put(t *testing.T, key, id string) {
	t.Helper()
	body := []byte("bytes of " + key)
	targettest.Put(t, r.tg, key, body, target.Stored{Size: int64(len(body)), ProductID: id})
}

// there says whether key is stored.
func (r *removals) there(t *testing.T, key string) bool {
	t.Helper()
	_, ok, err := r.tg.Stat(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// eventsOf are the fetcher's events about product id.
func (r *removals) eventsOf(t *testing.T, id string) []natstest.Msg {
	t.Helper()
	var out []natstest.Msg
	for _, m := range natstest.StreamMessages(t, r.js, r.cfg.Stream) {
		if m.Header.Get(event.HeaderProductID) == id {
			out = append(out, m)
		}
	}
	return out
}

// A product stored by files: the folder of its key without .zip, its
// files and its manifest (stored with the product's id, each file with
// the product's id and the file's checksum, as files.go records them).
func folderFiles(key string) (manifestKey string, files []string) {
	base := strings.TrimSuffix(key, ".zip")
	return base + "/manifest.safe", []string{base + "/MTD_MSIL1C.xml", base + "/GRANULE/L1C_T32TPS/IMG_DATA/T32TPS_B02.jp2"}
}

// TestDeleteWaitsForTheKeysHold: a deleted event of a product whose key
// another replica holds (its download of that product running: the test
// holds the key's lease) waits for the hold to end before removing
// anything: a download storing the folder's last files and its manifest
// meanwhile would otherwise leave a folder whose manifest says complete
// and whose files are gone. Once the lease is released, the folder is
// removed and the deleted event published.
func TestDeleteWaitsForTheKeysHold(t *testing.T) {
	r := startRemovals(t)
	p := r.s2Named("T32TPA")
	body := deletedBody(t, p, "", "")
	key, _ := r.keyOfBody(t, body)
	mkey, files := folderFiles(key)
	for _, k := range append(files, mkey) {
		r.put(t, k, p.ID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var kv jetstream.KeyValue
	until(t, 20*time.Second, "the fetcher's lease bucket", func() bool {
		var err error
		kv, err = r.js.KeyValue(ctx, LeaseBucket(r.cfg.Stream))
		return err == nil
	})
	log, _ := logtest.NewNullLogger()
	other := &leases{kv: kv, owner: "another replica"}
	held, err := other.acquire(ctx, log, key, 1)
	if err != nil {
		t.Fatal(err)
	}
	r.deleted(t, body)
	waits := func() bool {
		for _, e := range r.hook.AllEntries() {
			if strings.Contains(e.Message, "another replica is downloading this product") {
				return true
			}
		}
		return false
	}
	until(t, 20*time.Second, "the deleted event waiting for the lease, or handled", func() bool {
		return waits() || len(r.eventsOf(t, p.ID)) > 0
	})
	if got := r.eventsOf(t, p.ID); len(got) != 0 || !r.there(t, mkey) || !r.there(t, files[0]) {
		t.Fatalf("removed while another replica holds the key: %d events, manifest there %v, a file there %v", len(got), r.there(t, mkey), r.there(t, files[0]))
	}
	held.release(ctx)
	until(t, 20*time.Second, "the deleted event published once the lease is released", func() bool { return len(r.eventsOf(t, p.ID)) == 1 })
	for _, k := range append(files, mkey) {
		if r.there(t, k) {
			t.Errorf("%s left after the deleted event", k)
		}
	}
}

// TestRemovalsRemoveOnlyTheProductsOwn: a deleted event, and a notice of
// supersession, remove what is stored under the product's key only when
// it records the product's id (or none: stored by hand), the archive and
// the folder of its files each checked on its own: a late event for an
// old id never removes the product re-published under the same name with
// a new id, whether stored whole or by files, nor one of the two stored
// beside the product's own. A folder without its manifest (a download of
// it cut short) is only leftovers, and goes. Something of the product
// removed is said by one fetched event on the deleted subject; only
// another product's stored there, nothing is published, and the deleted
// event counts as kept.
func TestRemovalsRemoveOnlyTheProductsOwn(t *testing.T) {
	const own, other, none = "own", "other", "none"
	r := startRemovals(t)
	tile := 'A'
	for _, tc := range []struct {
		name            string
		archive, folder string // whose is stored: own, other, none ("" nothing)
		leftovers       bool   // the folder's files without its manifest
		item            string // whose STAC item is stored: own, other, none ("" none stored)
		wantArchive     bool   // left after
		wantFolder      bool
		wantItem        bool
		wantEvent       bool
		// url is what the event names: the folder's when a folder of
		// the product's was removed, else the archive's.
		url string
	}{
		{name: "archive of its own", archive: own, wantEvent: true, url: "archive"},
		{name: "archive of another id", archive: other, wantArchive: true},
		{name: "archive recording no id", archive: none, wantEvent: true, url: "archive"},
		{name: "folder of its own", folder: own, wantEvent: true, url: "folder"},
		{name: "archive and folder of its own", archive: own, folder: own, wantEvent: true, url: "folder"},
		{name: "folder of another id", folder: other, wantFolder: true},
		{name: "another's archive beside its folder", archive: other, folder: own, wantArchive: true, wantEvent: true, url: "folder"},
		{name: "its archive beside another's folder", archive: own, folder: other, wantFolder: true, wantEvent: true, url: "archive"},
		{name: "leftovers of a cut download", leftovers: true, wantEvent: false},
		{name: "its archive and its item", archive: own, item: own, wantEvent: true, url: "archive"},
		// The review's: the item is the folder's product's, written when
		// it was stored by files under the same name and a new id.
		{name: "its archive beside another's folder and item", archive: own, folder: other, item: other, wantFolder: true, wantItem: true, wantEvent: true, url: "archive"},
	} {
		for _, path := range []string{"deleted", "superseded"} {
			t.Run(path+"/"+tc.name, func(t *testing.T) {
				tile++
				p := r.s2Named("T32TP" + string(tile))
				body := deletedBody(t, p, "", "")
				key, n := r.keyOfBody(t, body)
				mkey, files := folderFiles(key)
				idOf := map[string]string{own: p.ID, other: uuid.NewString(), none: ""}
				if tc.archive != "" {
					r.put(t, key, idOf[tc.archive])
				}
				if tc.folder != "" || tc.leftovers {
					for _, k := range files {
						r.put(t, k, idOf[cmpOr(tc.folder, own)]+" md5:0")
					}
				}
				if tc.folder != "" {
					r.put(t, mkey, idOf[tc.folder])
				}
				if tc.item != "" {
					r.put(t, ItemKey(key), idOf[tc.item])
				}
				kept := testutil.ToFloat64(r.app.outcomes.WithLabelValues("kept"))
				if path == "deleted" {
					r.handled(t, r.deleted(t, body))
				} else {
					r.handled(t, r.notice(t, n))
				}
				if got := tc.archive != "" && r.there(t, key); got != tc.wantArchive {
					t.Errorf("the archive left %v, want %v", got, tc.wantArchive)
				}
				if got := tc.folder != "" && r.there(t, mkey); got != tc.wantFolder {
					t.Errorf("the folder's manifest left %v, want %v", got, tc.wantFolder)
				}
				if got := (tc.folder != "" || tc.leftovers) && r.there(t, files[0]); got != tc.wantFolder {
					t.Errorf("the folder's files left %v, want %v", got, tc.wantFolder)
				}
				if got := tc.item != "" && r.there(t, ItemKey(key)); got != tc.wantItem {
					t.Errorf("the STAC item left %v, want %v", got, tc.wantItem)
				}
				// A deleted event of a product of which nothing, or only
				// leftovers, was stored is still said (its redelivery after
				// a removal whose event was not published); a notice's is not.
				wantEvent := tc.wantEvent || (path == "deleted" && tc.archive == "" && tc.folder == "")
				evs := r.eventsOf(t, p.ID)
				if got := len(evs); got != map[bool]int{true: 1}[wantEvent] {
					t.Errorf("%d fetched events, want one %v", got, wantEvent)
				}
				url := map[string]string{"archive": "file://" + r.dir + "/" + key, "folder": "file://" + r.dir + "/" + strings.TrimSuffix(key, ".zip") + "/", "": "file://" + r.dir + "/" + key}[tc.url]
				if len(evs) == 1 && evs[0].Header.Get(event.HeaderObjectURL) != url {
					t.Errorf("the event names %s, want %s", evs[0].Header.Get(event.HeaderObjectURL), url)
				}
				wantKept := 0.0
				if path == "deleted" && !wantEvent {
					wantKept = 1
				}
				if got := testutil.ToFloat64(r.app.outcomes.WithLabelValues("kept")) - kept; got != wantKept {
					t.Errorf("%v more kept, want %v", got, wantKept)
				}
			})
		}
	}
}

// TestDeletedNameIsChecked: a deleted event whose product name is not one
// safe path element (a slash in it) is refused as a fetch would refuse it:
// given up with the reason (unsafe name), nothing removed, though its key
// names a folder inside another product's (the key's elements, each safe
// on its own, are checked as before).
func TestDeletedNameIsChecked(t *testing.T) {
	r := startRemovals(t)
	for i, tc := range []struct{ name, inside string }{
		{"the review's: a folder of the product", "GRANULE"},
		{"a folder inside named as a product of files", "GRANULE/L1C_T32TPS.SAFE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := r.s2Named("T33TP" + string(rune('A'+i)))
			key, _ := r.keyOfBody(t, deletedBody(t, p, "", ""))
			base := strings.TrimSuffix(key, ".zip")
			stored := []string{base + "/manifest.safe", base + "/" + tc.inside + "/IMG_DATA/B02.jp2", base + "/" + tc.inside + "/MTD_TL.xml"}
			for _, k := range stored {
				r.put(t, k, p.ID)
			}
			body := deletedBody(t, p, uuid.NewString(), p.Name+"/"+tc.inside)
			if k, _ := r.keyOfBody(t, body); !strings.HasPrefix(k, base+"/") {
				t.Fatalf("the refused name's key %q is not inside %q", k, base)
			}
			seq := r.deleted(t, body)
			r.handled(t, seq)
			for _, k := range stored {
				if !r.there(t, k) {
					t.Errorf("%s removed by a deleted event of an unsafe name", k)
				}
			}
			n, _ := event.DecodeData(body, nil)
			evs := r.eventsOf(t, n.ProductID)
			if len(evs) != 1 || !strings.HasPrefix(evs[0].Subject, r.cfg.FailedPrefix+".") || !strings.Contains(evs[0].Header.Get(event.HeaderFetchError), "unsafe name") {
				for _, m := range evs {
					t.Logf("%s %v", m.Subject, m.Header)
				}
				t.Errorf("%d events, want one failed event saying unsafe name", len(evs))
			}
		})
	}
}
