package topology_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/stream/natsconn"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

const testStream = "CDSE_TEST"

func quietLog() logrus.FieldLogger {
	l, _ := test.NewNullLogger()
	return l
}

func msg(id string) publish.Message {
	return publish.Message{
		Subject: "cdse.product.created.SENTINEL-2",
		MsgID:   id,
		Header:  map[string][]string{"Nats-Msg-Id": {id}, "Cdse-Event": {"created"}},
		Data:    []byte(`{"id":"` + id + `"}`),
	}
}

func TestEnsureStream(t *testing.T) {
	srv := natstest.RunJetStream(t)
	js, closeNC := natstest.JetStream(t, srv.ClientURL())
	defer closeNC()
	ctx := context.Background()
	o := topology.Options{Stream: "S", SubjectPrefix: "cdse.product", Duplicates: 2 * time.Hour}

	t.Run("create", func(t *testing.T) {
		info, err := topology.New(js, o).EnsureProduct(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Config.Storage != jetstream.FileStorage || info.Config.Duplicates != 2*time.Hour {
			t.Errorf("config %+v", info.Config)
		}
		// The products, and the retries fetcher failed retry queues for
		// the fetcher's consumer alone.
		if fmt.Sprint(info.Config.Subjects) != "[cdse.product.> cdse.fetchretry.S.>]" {
			t.Errorf("subjects %v", info.Config.Subjects)
		}
	})
	t.Run("a prefix that covers the retries", func(t *testing.T) {
		// A server of its own: cdse.> overlaps the other stream's subjects.
		js, closeNC := natstest.JetStream(t, natstest.RunJetStream(t).ClientURL())
		defer closeNC()
		info, err := topology.New(js, topology.Options{Stream: "C", SubjectPrefix: "cdse", Duplicates: time.Hour}).EnsureProduct(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(info.Config.Subjects) != "[cdse.>]" {
			t.Errorf("subjects %v", info.Config.Subjects)
		}
	})
	t.Run("a second receiver on the same NATS", func(t *testing.T) {
		// Another product stream and prefix (staging beside production,
		// make bench-compare's two builds): each stream takes the retries
		// of its own name, so neither claims the other's subjects.
		info, err := topology.New(js, topology.Options{Stream: "STAGING", SubjectPrefix: "staging.product", Duplicates: time.Hour}).EnsureProduct(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(info.Config.Subjects) != "[staging.product.> cdse.fetchretry.STAGING.>]" {
			t.Errorf("subjects %v", info.Config.Subjects)
		}
		if err := js.DeleteStream(ctx, "STAGING"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("idempotent", func(t *testing.T) {
		if _, err := topology.New(js, o).EnsureProduct(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("adds subjects, keeps others", func(t *testing.T) {
		s, _ := js.Stream(ctx, "S")
		cfg := s.CachedInfo().Config
		cfg.Subjects = []string{"legacy.>"}
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		o2 := o
		o2.Duplicates = time.Hour
		info, err := topology.New(js, o2).EnsureProduct(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(info.Config.Subjects) != "[legacy.> cdse.product.> cdse.fetchretry.S.>]" || info.Config.Duplicates != time.Hour {
			t.Errorf("subjects %v duplicates %v", info.Config.Subjects, info.Config.Duplicates)
		}
	})
	t.Run("keeps a subject that covers one of ours", func(t *testing.T) {
		// A stream made by the build before the retry subject carried the
		// stream's name: cdse.fetchretry.> takes cdse.fetchretry.S.>, and
		// adding that too is refused by JetStream (overlapping subjects).
		s, _ := js.Stream(ctx, "S")
		cfg := s.CachedInfo().Config
		cfg.Subjects = []string{"cdse.product.>", "cdse.fetchretry.>"}
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		info, err := topology.New(js, o).EnsureProduct(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(info.Config.Subjects) != "[cdse.product.> cdse.fetchretry.>]" {
			t.Errorf("subjects %v", info.Config.Subjects)
		}
	})
	t.Run("refuses memory storage", func(t *testing.T) {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "M", Subjects: []string{"m.>"}, Storage: jetstream.MemoryStorage}); err != nil {
			t.Fatal(err)
		}
		_, err := topology.New(js, topology.Options{Stream: "M", SubjectPrefix: "m", Duplicates: time.Minute}).EnsureProduct(ctx)
		if err == nil || !strings.Contains(err.Error(), "file storage") {
			t.Errorf("memory stream accepted: %v", err)
		}
	})
}

// TestNoticeSubjects: the product stream takes the notices' subjects
// (<SupersededPrefix>.>) beside its own. A second receiver on the same NATS
// that kept the default prefix gets its product stream all the same,
// without the notices (NoticesTaken says why, naming the setting): the
// products never wait on the notices. With a prefix of its own it takes
// its notices too; an existing stream gets them added at its update.
func TestNoticeSubjects(t *testing.T) {
	js, closeNC := natstest.JetStream(t, natstest.RunJetStream(t).ClientURL())
	defer closeNC()
	ctx := context.Background()
	subjects := func(name string) string {
		t.Helper()
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(s.CachedInfo().Config.Subjects)
	}
	first := topology.New(js, topology.Options{Stream: "P", SubjectPrefix: "cdse.product", Duplicates: time.Hour, SupersededPrefix: "cdse.superseded"})
	if _, err := first.EnsureProduct(ctx); err != nil {
		t.Fatal(err)
	}
	if got := subjects("P"); got != "[cdse.product.> cdse.fetchretry.P.> cdse.superseded.>]" {
		t.Errorf("subjects %s", got)
	}
	if err := first.NoticesTaken(ctx); err != nil {
		t.Errorf("NoticesTaken: %v", err)
	}
	if got := first.SupersededSubject("SENTINEL-2", "S2MSI1C"); got != "cdse.superseded.SENTINEL-2.S2MSI1C" {
		t.Errorf("SupersededSubject %s", got)
	}

	second := topology.New(js, topology.Options{Stream: "STAGING", SubjectPrefix: "staging.product", Duplicates: time.Hour, SupersededPrefix: "cdse.superseded"})
	if _, err := second.EnsureProduct(ctx); err != nil {
		t.Fatalf("the second receiver's product stream: %v", err)
	}
	if got := subjects("STAGING"); got != "[staging.product.> cdse.fetchretry.STAGING.>]" {
		t.Errorf("second subjects %s", got)
	}
	if err := second.NoticesTaken(ctx); !errors.Is(err, topology.ErrNoticesNotTaken) || !strings.Contains(err.Error(), "RECEIVER_VERSIONS_SUBJECT_PREFIX") {
		t.Errorf("NoticesTaken of the second: %v", err)
	}
	// Its own prefix: added to the stream it has.
	second = topology.New(js, topology.Options{Stream: "STAGING", SubjectPrefix: "staging.product", Duplicates: time.Hour, SupersededPrefix: "staging.superseded"})
	if _, err := second.EnsureProduct(ctx); err != nil {
		t.Fatal(err)
	}
	if got := subjects("STAGING"); got != "[staging.product.> cdse.fetchretry.STAGING.> staging.superseded.>]" {
		t.Errorf("second subjects with its own prefix %s", got)
	}
	if err := second.NoticesTaken(ctx); err != nil {
		t.Errorf("NoticesTaken: %v", err)
	}
	// Without notices, none are taken.
	if err := topology.New(js, topology.Options{Stream: "P", SubjectPrefix: "cdse.product"}).NoticesTaken(ctx); !errors.Is(err, topology.ErrNoticesNotTaken) {
		t.Error("NoticesTaken without a prefix")
	}
}

// TestKeeperForgetsIdsOfAReplacedStream: a stream deleted and created again
// by someone else between two checks is noticed by its creation time, and
// the ids remembered as stored are forgotten, so a retry is stored in the
// new stream instead of being answered "duplicate" from memory.
func TestKeeperForgetsIdsOfAReplacedStream(t *testing.T) {
	so := topology.Options{Stream: testStream, SubjectPrefix: "cdse.product", Duplicates: time.Hour}
	srv := natstest.RunJetStream(t)
	js, closeNC := natstest.JetStream(t, srv.ClientURL())
	defer closeNC()
	nc, err := natsconn.Connect(natsconn.Options{URL: srv.ClientURL()}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	pub, err := publish.NewPublisher(nc, publish.PublisherOptions{Stream: testStream, Timeout: 2 * time.Second, RecentIDs: 100, RecentTTL: time.Hour}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	topo := topology.New(js, so)
	if _, err := topo.EnsureProduct(context.Background()); err != nil {
		t.Fatal(err)
	}
	k := topology.NewKeeper(topo, pub, quietLog())
	ctx := context.Background()
	if err := k.Check(ctx); err != nil || !k.Ready() {
		t.Fatalf("check: %v, ready %v", err, k.Ready())
	}
	if _, err := pub.Publish(ctx, []publish.Message{msg("x")}); err != nil {
		t.Fatal(err)
	}
	// Replaced behind the receiver's back. The server removes the old
	// stream's store after it answers the delete: a create at once may
	// find it still there ("error creating store for stream", seen under
	// load), so the create is tried again for a bounded while.
	if err := js.DeleteStream(ctx, testStream); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, err := topo.EnsureProduct(ctx)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	if err := k.Check(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := pub.Publish(ctx, []publish.Message{msg("x")})
	if err != nil || res[0].Duplicate {
		t.Fatalf("after the replacement: %+v, %v (answered from the old stream's memory)", res, err)
	}
	if got := natstest.StreamCount(t, js, testStream); got != 1 {
		t.Errorf("new stream holds %d, want 1", got)
	}
}
