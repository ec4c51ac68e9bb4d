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

	"github.com/cdse-jetstream/receiver/internal/stream/natsconn"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
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

func setup(t *testing.T, srv *server.Server, o PublisherOptions, so topology.Options) fixture {
	t.Helper()
	nc, err := natsconn.Connect(natsconn.Options{URL: srv.ClientURL()}, quietLog())
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
	if so.Stream == "" {
		so = topology.Options{Stream: testStream, SubjectPrefix: "cdse.product", Duplicates: time.Hour}
	}
	if _, err := topology.New(pub.JetStream(), so).EnsureProduct(context.Background()); err != nil {
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
			f := setup(t, natstest.RunJetStream(t), PublisherOptions{RecentIDs: recent, RecentTTL: time.Hour}, topology.Options{})
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
	a := setup(t, srv, PublisherOptions{RecentIDs: 10, RecentTTL: time.Hour}, topology.Options{})
	b := setup(t, srv, PublisherOptions{RecentIDs: 10, RecentTTL: time.Hour}, topology.Options{})
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
	f := setup(t, srv, PublisherOptions{}, topology.Options{})
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
	f := setup(t, srv, PublisherOptions{}, topology.Options{Stream: testStream, SubjectPrefix: "cdse.product", Duplicates: time.Minute})
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
	f := setup(t, natstest.Run(t, opts), PublisherOptions{}, topology.Options{})
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
	f := setup(t, srv, PublisherOptions{Timeout: 200 * time.Millisecond}, topology.Options{Stream: testStream, SubjectPrefix: "other", Duplicates: time.Minute})
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

func TestKnownDuplicatesAnsweredDuringOutage(t *testing.T) {
	srv := natstest.RunJetStream(t)
	f := setup(t, srv, PublisherOptions{RecentIDs: 10, RecentTTL: time.Hour}, topology.Options{})
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
	nc, err := natsconn.Connect(natsconn.Options{URL: srv.ClientURL()}, quietLog())
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

// TestCopiesMadeOnlyForWhatIsSent: a message's copies are made when it is
// published, with each copy's result, and not for a message answered from
// the memory of stored ids (its copies were stored with it).
func TestCopiesMadeOnlyForWhatIsSent(t *testing.T) {
	f := setup(t, natstest.RunJetStream(t), PublisherOptions{RecentIDs: 10, RecentTTL: time.Hour}, topology.Options{})
	made := 0
	m := msg("x")
	m.MakeCopies = func() []Message {
		made++
		c := msg("x-copy")
		c.Subject = "cdse.product.copies.x"
		return []Message{c}
	}
	msgs := []Message{m}
	res, err := f.pub.Publish(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs[0].Copies) != 1 || len(res[0].CopiesStored) != 1 || !res[0].CopiesStored[0] {
		t.Errorf("the first publish: copies %d, result %+v", len(msgs[0].Copies), res[0])
	}
	msgs = []Message{m}
	if res, err = f.pub.Publish(context.Background(), msgs); err != nil || !res[0].Local || msgs[0].Copies != nil {
		t.Errorf("the resend: %+v %v, copies %d", res, err, len(msgs[0].Copies))
	}
	if made != 1 || streamMsgs(t, f.js) != 2 {
		t.Errorf("copies made %d times, want 1 (the resend is answered from memory); %d messages stored, want 2", made, streamMsgs(t, f.js))
	}
}
