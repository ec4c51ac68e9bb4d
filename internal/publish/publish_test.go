package publish

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/natstest"
)

const testStream = "CDSE_TEST"

func quietLog() logrus.FieldLogger {
	l, _ := test.NewNullLogger()
	return l
}

type fixture struct {
	srv *server.Server
	nc  *nats.Conn
	pub *Publisher
	js  jetstream.JetStream
}

func setup(t *testing.T, srv *server.Server, o PublisherOptions, so StreamOptions) fixture {
	t.Helper()
	nc, err := Connect(ConnectOptions{URL: srv.ClientURL()}, nil, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if o.Stream == "" {
		o.Stream = testStream
	}
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Second
	}
	pub, err := NewPublisher(nc, o, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if so.Name == "" {
		so = StreamOptions{Name: testStream, Subjects: []string{"cdse.product.>"}, Duplicates: time.Hour}
	}
	if _, err := EnsureStream(context.Background(), pub.JetStream(), so); err != nil {
		t.Fatal(err)
	}
	return fixture{srv: srv, nc: nc, pub: pub, js: pub.JetStream()}
}

func msg(id string) Message {
	return Message{
		Subject: "cdse.product.created.SENTINEL-2",
		MsgID:   id,
		Header:  map[string][]string{"Nats-Msg-Id": {id}, "Cdse-Event": {"created"}},
		Data:    []byte(`{"id":"` + id + `"}`),
	}
}

func streamMsgs(t *testing.T, js jetstream.JetStream) uint64 {
	t.Helper()
	return natstest.StreamCount(t, js, testStream)
}

func TestPublishStoresAndDeduplicates(t *testing.T) {
	for _, recent := range []int{0, 100} {
		t.Run(fmt.Sprintf("recent=%d", recent), func(t *testing.T) {
			f := setup(t, natstest.RunJetStream(t), PublisherOptions{RecentIDs: recent, RecentTTL: time.Hour}, StreamOptions{})
			ctx := context.Background()
			res, err := f.pub.Publish(ctx, []Message{msg("a"), msg("b")})
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Duplicate || res[1].Duplicate || res[0].Seq != 1 || res[1].Seq != 2 {
				t.Fatalf("first publish: %+v", res)
			}
			for range 3 { // the catalogue's retries
				res, err = f.pub.Publish(ctx, []Message{msg("a"), msg("c")})
				if err != nil {
					t.Fatal(err)
				}
				if !res[0].Duplicate {
					t.Fatalf("retry: %+v", res)
				}
			}
			// The local fast path answers without asking JetStream (Seq 0).
			if locally := res[0].Seq == 0; locally != (recent > 0) {
				t.Errorf("duplicate answered locally = %v with recent=%d", locally, recent)
			}
			if res[1].Duplicate != true {
				t.Errorf("c was stored by the first retry: %+v", res)
			}
			if got := streamMsgs(t, f.js); got != 3 {
				t.Errorf("stream holds %d messages, want 3", got)
			}
			// The message carries the headers and the data unchanged.
			s, _ := f.js.Stream(ctx, testStream)
			m, err := s.GetMsg(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			if string(m.Data) != `{"id":"a"}` || m.Header.Get("Cdse-Event") != "created" || m.Header.Get("Nats-Msg-Id") != "a" {
				t.Errorf("stored message %q headers %v", m.Data, m.Header)
			}
		})
	}
}

func TestDedupeAcrossPublishers(t *testing.T) {
	// Two receivers sharing one NATS: the second learns of the first's
	// message from JetStream, not from its own memory.
	srv := natstest.RunJetStream(t)
	a := setup(t, srv, PublisherOptions{RecentIDs: 10, RecentTTL: time.Hour}, StreamOptions{})
	b := setup(t, srv, PublisherOptions{RecentIDs: 10, RecentTTL: time.Hour}, StreamOptions{})
	if _, err := a.pub.Publish(context.Background(), []Message{msg("x")}); err != nil {
		t.Fatal(err)
	}
	res, err := b.pub.Publish(context.Background(), []Message{msg("x")})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Duplicate {
		t.Errorf("second receiver stored a duplicate: %+v", res)
	}
	if got := streamMsgs(t, a.js); got != 1 {
		t.Errorf("stream holds %d messages, want 1", got)
	}
}

func TestPublishFailsWhileServerDown(t *testing.T) {
	srv := natstest.RunJetStream(t)
	store := natstest.StoreDir(srv)
	f := setup(t, srv, PublisherOptions{}, StreamOptions{})
	if _, err := f.pub.Publish(context.Background(), []Message{msg("before")}); err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	srv.WaitForShutdown()
	waitFor(t, 5*time.Second, func() bool { return !f.nc.IsConnected() })

	start := time.Now()
	_, err := f.pub.Publish(context.Background(), []Message{msg("during")})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("publish while down: %v, want ErrUnavailable", err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("failing took %s; a disconnected publisher must fail at once", time.Since(start))
	}

	natstest.Restart(t, srv, store)
	waitFor(t, 10*time.Second, func() bool { return f.nc.IsConnected() })
	var res []Result
	waitFor(t, 10*time.Second, func() bool {
		res, err = f.pub.Publish(context.Background(), []Message{msg("after"), msg("before")})
		return err == nil
	})
	if res[0].Duplicate || !res[1].Duplicate {
		t.Errorf("after restart: %+v (the old id must still be known)", res)
	}
	if got := streamMsgs(t, f.js); got != 2 {
		t.Errorf("stream holds %d messages, want 2", got)
	}
}

func TestPublishStreamFull(t *testing.T) {
	srv := natstest.RunJetStream(t)
	f := setup(t, srv, PublisherOptions{}, StreamOptions{Name: testStream, Subjects: []string{"cdse.product.>"}, Duplicates: time.Minute})
	// An operator limited the stream and chose to refuse new messages.
	s, _ := f.js.Stream(context.Background(), testStream)
	cfg := s.CachedInfo().Config
	cfg.MaxMsgs = 1
	cfg.Discard = jetstream.DiscardNew
	if _, err := f.js.UpdateStream(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pub.Publish(context.Background(), []Message{msg("one")}); err != nil {
		t.Fatal(err)
	}
	_, err := f.pub.Publish(context.Background(), []Message{msg("two")})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "maximum messages") {
		t.Fatalf("publish to a full stream: %v", err)
	}
}

func TestPublishTooLarge(t *testing.T) {
	opts := natstest.DefaultOptions
	opts.StoreDir = t.TempDir()
	opts.MaxPayload = 1024
	f := setup(t, natstest.Run(t, opts), PublisherOptions{}, StreamOptions{})
	m := msg("big")
	m.Data = make([]byte, 2048)
	_, err := f.pub.Publish(context.Background(), []Message{m})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("publish of 2 KiB to a 1 KiB server: %v", err)
	}
}

func TestPublishTimeout(t *testing.T) {
	// A broker that acknowledges slower than the timeout: a responder that
	// answers late stands in for an overloaded JetStream.
	srv := natstest.RunJetStream(t)
	f := setup(t, srv, PublisherOptions{Timeout: 200 * time.Millisecond}, StreamOptions{Name: testStream, Subjects: []string{"other.>"}, Duplicates: time.Minute})
	slow, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	release := make(chan struct{})
	sub, err := slow.Subscribe("cdse.product.>", func(m *nats.Msg) {
		<-release
		_ = m.Respond([]byte(`{"stream":"` + testStream + `","seq":1}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	_ = slow.Flush()

	_, err = f.pub.Publish(context.Background(), []Message{msg("slow")})
	close(release)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no PubAck within") {
		t.Fatalf("publish to a slow broker: %v", err)
	}
	if got := testutil.ToFloat64(f.pub.errs.WithLabelValues("timeout")); got != 1 {
		t.Errorf("timeout errors counted: %v", got)
	}
}

func TestEnsureStream(t *testing.T) {
	srv := natstest.RunJetStream(t)
	js, closeNC := natstest.JetStream(t, srv.ClientURL())
	defer closeNC()
	ctx := context.Background()
	o := StreamOptions{Name: "S", Subjects: []string{"cdse.product.>"}, Duplicates: 2 * time.Hour}

	t.Run("create", func(t *testing.T) {
		info, err := EnsureStream(ctx, js, o)
		if err != nil {
			t.Fatal(err)
		}
		if info.Config.Storage != jetstream.FileStorage || info.Config.Duplicates != 2*time.Hour {
			t.Errorf("config %+v", info.Config)
		}
	})
	t.Run("idempotent", func(t *testing.T) {
		if _, err := EnsureStream(ctx, js, o); err != nil {
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
		info, err := EnsureStream(ctx, js, o2)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(info.Config.Subjects) != "[legacy.> cdse.product.>]" || info.Config.Duplicates != time.Hour {
			t.Errorf("subjects %v duplicates %v", info.Config.Subjects, info.Config.Duplicates)
		}
	})
	t.Run("refuses memory storage", func(t *testing.T) {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "M", Subjects: []string{"m.>"}, Storage: jetstream.MemoryStorage}); err != nil {
			t.Fatal(err)
		}
		_, err := EnsureStream(ctx, js, StreamOptions{Name: "M", Subjects: []string{"m.>"}, Duplicates: time.Minute})
		if err == nil || !strings.Contains(err.Error(), "file storage") {
			t.Errorf("memory stream accepted: %v", err)
		}
	})
}

// startEmbedded starts the embedded server and the receiver's in-process
// connection to it, both stopped when the test ends.
func startEmbedded(t *testing.T, o EmbeddedOptions) (*Embedded, *nats.Conn) {
	t.Helper()
	srv, err := StartEmbedded(context.Background(), o, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	nc, err := Connect(ConnectOptions{}, srv, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return srv, nc
}

func TestEmbedded(t *testing.T) {
	dir := t.TempDir()
	srv, nc := startEmbedded(t, EmbeddedOptions{Addr: "127.0.0.1:0", DataDir: dir, MaxPayload: 2 << 20})
	if nc.MaxPayload() != 2<<20 {
		t.Errorf("max payload %d", nc.MaxPayload())
	}
	js, _ := jetstream.New(nc)
	info, err := EnsureStream(context.Background(), js, StreamOptions{Name: "E", Subjects: []string{"e.>"}, Duplicates: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.Storage != jetstream.FileStorage {
		t.Errorf("storage %v", info.Config.Storage)
	}
	// A consumer outside the process reaches the embedded server over TCP.
	ext, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatalf("external client: %v", err)
	}
	ext.Close()
	if !strings.HasPrefix(natstest.StoreDir(srv.Server), dir) {
		t.Errorf("store %s not under %s", natstest.StoreDir(srv.Server), dir)
	}
}

func waitFor(t *testing.T, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestEmbeddedConsumersCannotPublish(t *testing.T) {
	// The receiver's own in-process connection publishes.
	srv, nc := startEmbedded(t, EmbeddedOptions{Addr: "127.0.0.1:0", DataDir: t.TempDir(), MaxPayload: 1 << 20,
		ConsumerUser: "reader", ConsumerPassword: "reader-pw", SubjectPrefix: "cdse.product"})
	pub, err := NewPublisher(nc, PublisherOptions{Stream: testStream, Timeout: 2 * time.Second}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureStream(context.Background(), pub.JetStream(), StreamOptions{Name: testStream, Subjects: []string{"cdse.product.>"}, Duplicates: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := pub.Publish(context.Background(), []Message{msg("by-receiver")}); err != nil {
		t.Fatal(err)
	}
	// Anonymous: refused.
	if c, err := nats.Connect(srv.ClientURL()); err == nil {
		c.Close()
		t.Fatal("anonymous connection accepted")
	}
	// A consumer reads, but cannot inject.
	js, closeNC := natstest.JetStream(t, srv.ClientURL(), nats.UserInfo("reader", "reader-pw"))
	defer closeNC()
	ctx := context.Background()
	cons, err := js.OrderedConsumer(ctx, testStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	if m, err := cons.Next(jetstream.FetchMaxWait(2 * time.Second)); err != nil || m.Headers().Get("Nats-Msg-Id") != "by-receiver" {
		t.Fatalf("read: %v", err)
	}
	// Denied publishes get no answer: wait briefly, not the default 5 s.
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if _, err := js.Publish(short, "cdse.product.created.SENTINEL-2", []byte(`{}`)); err == nil {
		t.Error("a consumer published into the stream")
	}
	short2, cancel2 := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel2()
	if err := js.DeleteStream(short2, testStream); err == nil {
		t.Error("a consumer deleted the stream")
	}
	if got := streamMsgs(t, pub.JetStream()); got != 1 {
		t.Errorf("stream holds %d messages, want 1", got)
	}
}

func TestKnownDuplicatesAnsweredDuringOutage(t *testing.T) {
	srv := natstest.RunJetStream(t)
	f := setup(t, srv, PublisherOptions{RecentIDs: 10, RecentTTL: time.Hour}, StreamOptions{})
	if _, err := f.pub.Publish(context.Background(), []Message{msg("stored")}); err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	srv.WaitForShutdown()
	waitFor(t, 5*time.Second, func() bool { return !f.nc.IsConnected() })
	// A retry of what this replica stored: true to say so, NATS or not.
	res, err := f.pub.Publish(context.Background(), []Message{msg("stored")})
	if err != nil || !res[0].Duplicate {
		t.Fatalf("known duplicate during the outage: %v %+v", err, res)
	}
	// Anything new with it: not stored, so not acknowledged.
	if _, err := f.pub.Publish(context.Background(), []Message{msg("stored"), msg("new")}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("new message during the outage: %v", err)
	}
}

func TestNewPublisherRefusesNoTimeout(t *testing.T) {
	srv := natstest.RunJetStream(t)
	nc, err := Connect(ConnectOptions{URL: srv.ClientURL()}, nil, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for _, d := range []time.Duration{0, -time.Second} {
		if _, err := NewPublisher(nc, PublisherOptions{Stream: testStream, Timeout: d}, prometheus.NewRegistry()); err == nil {
			t.Errorf("timeout %s accepted", d)
		}
	}
}

// TestKeeperForgetsIdsOfAReplacedStream: a stream deleted and created again
// by someone else between two checks is noticed by its creation time, and
// the ids remembered as stored are forgotten, so a retry is stored in the
// new stream instead of being answered "duplicate" from memory.
func TestKeeperForgetsIdsOfAReplacedStream(t *testing.T) {
	so := StreamOptions{Name: testStream, Subjects: []string{"cdse.product.>"}, Duplicates: time.Hour}
	f := setup(t, natstest.RunJetStream(t), PublisherOptions{RecentIDs: 100, RecentTTL: time.Hour}, so)
	k := NewKeeper(f.js, so, f.pub, quietLog())
	ctx := context.Background()
	if err := k.Check(ctx); err != nil || !k.Ready() {
		t.Fatalf("check: %v, ready %v", err, k.Ready())
	}
	if _, err := f.pub.Publish(ctx, []Message{msg("x")}); err != nil {
		t.Fatal(err)
	}
	// Replaced behind the receiver's back.
	if err := f.js.DeleteStream(ctx, testStream); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureStream(ctx, f.js, so); err != nil {
		t.Fatal(err)
	}
	if err := k.Check(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := f.pub.Publish(ctx, []Message{msg("x")})
	if err != nil || res[0].Duplicate {
		t.Fatalf("after the replacement: %+v, %v (answered from the old stream's memory)", res, err)
	}
	if got := streamMsgs(t, f.js); got != 1 {
		t.Errorf("new stream holds %d, want 1", got)
	}
}

func TestVersionAtLeast(t *testing.T) {
	for _, c := range []struct {
		v, min string
		want   bool
	}{
		{"2.10.0", "2.10.0", true},
		{"v2.10.27", "2.10.0", true},
		{"2.9.25", "2.10.0", false},
		{"2.11.0-RC.1", "2.10.0", true},
		{"3.0.0", "2.10.0", true},
		{"2.10", "2.10.0", false},
		{"", "2.10.0", false},
		{"2.x.0", "2.10.0", false},
	} {
		if got := VersionAtLeast(c.v, c.min); got != c.want {
			t.Errorf("VersionAtLeast(%q, %q) = %v, want %v", c.v, c.min, got, c.want)
		}
	}
}
