package embedded

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/internal/stream/natsconn"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// permissionsFixture is an embedded server started as the receiver starts
// it, with the product stream (and the interests' subjects) holding one
// message the receiver published, and a durable consumer of the
// receiver's own; the fetcher's durable is fetcherDurable.
type permissionsFixture struct {
	srv      *Server
	receiver *nats.Conn
	js       jetstream.JetStream // the receiver's
}

const durableOfAnother = "someone-elses-durable"

func startPermissionsFixture(t *testing.T, o Options) permissionsFixture {
	t.Helper()
	o.Addr, o.DataDir, o.MaxPayload = "127.0.0.1:0", t.TempDir(), 1<<20
	o.SubjectPrefix, o.QuarantinePrefix, o.InterestPrefix = "cdse.product", "cdse.quarantine", "cdse.interest"
	// Another prefix than the planned default, which stays denied.
	o.SupersededPrefix = "own.superseded"
	o.Stream, o.FetchConsumer = testStream, fetcherDurable
	srv, nc := startEmbedded(t, o)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	topo := topology.New(js, topology.Options{Stream: testStream, SubjectPrefix: o.SubjectPrefix, InterestPrefix: o.InterestPrefix,
		Duplicates: time.Minute, QuarantineStream: testStream + "_Q", QuarantinePrefix: o.QuarantinePrefix})
	if _, err := topo.EnsureProduct(ctx); err != nil {
		t.Fatal(err)
	}
	if err := topo.EnsureQuarantine(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "cdse.product.created.SENTINEL-2.S2MSI2A", []byte(`{}`), jetstream.WithMsgID("by-receiver")); err != nil {
		t.Fatalf("the receiver publishes: %v", err)
	}
	if _, err := js.CreateConsumer(ctx, testStream, jetstream.ConsumerConfig{Durable: durableOfAnother, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	return permissionsFixture{srv: srv, receiver: nc, js: js}
}

// consumerModes are the two ways a consumer reaches the embedded server:
// anonymously by default, with the consumer login when one is set.
var consumerModes = []struct {
	name  string
	opts  Options
	login []nats.Option
}{
	{name: "anonymous by default"},
	{name: "consumer login", opts: Options{ConsumerUser: "reader", ConsumerPassword: "reader-pw"}, login: []nats.Option{nats.UserInfo("reader", "reader-pw")}},
}

// expectDenied sends a request on subject as a consumer and fails unless
// the server refuses it with a permissions violation (and no answer comes).
func expectDenied(t *testing.T, url string, login []nats.Option, subject string, data []byte) {
	t.Helper()
	errs := make(chan error, 8)
	nc, err := nats.Connect(url, append(login, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))...)
	if err != nil {
		t.Fatalf("consumer connection: %v", err)
	}
	defer nc.Close()
	inbox := nc.NewInbox()
	answers := make(chan *nats.Msg, 1)
	if _, err := nc.ChanSubscribe(inbox, answers); err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishRequest(subject, inbox, data); err != nil {
		t.Fatal(err)
	}
	// The server answers a denied publish with an -ERR; a granted
	// JetStream request, or a publish the stream stores, answers on the
	// inbox instead.
	timeout := time.After(5 * time.Second)
	for {
		select {
		case err := <-errs:
			if strings.Contains(strings.ToLower(err.Error()), "permissions violation") && strings.Contains(err.Error(), subject) {
				return
			}
			t.Logf("other error: %v", err)
		case m := <-answers:
			t.Errorf("%s: a consumer was allowed (answer %q)", subject, m.Data)
			return
		case <-timeout:
			t.Errorf("%s: no permissions violation within 5 s", subject)
			return
		}
	}
}

// TestConsumersCannotChangeTheStreams: whether anonymous (the default) or
// with the consumer login, a consumer cannot publish to any subject of the
// receiver's streams, now or planned, nor purge, change or delete a stream,
// delete a message, delete a durable, or publish into the receiver's reply
// inbox (where its PubAcks arrive).
func TestConsumersCannotChangeTheStreams(t *testing.T) {
	for _, mode := range consumerModes {
		t.Run(mode.name, func(t *testing.T) {
			f := startPermissionsFixture(t, mode.opts)
			denied := []struct{ name, subject, data string }{
				{"publish a product", "cdse.product.created.X.Y", `{}`},
				{"publish an interest copy", "cdse.interest.alps.created.X.Y", `{}`},
				{"publish into the quarantine", "cdse.quarantine.push", `{}`},
				{"publish a fetched product", "cdse.fetched.created.X.Y", `{}`},
				{"publish a failed fetch", "cdse.fetchfailed.created.X.Y", `{}`},
				{"publish a completion", "cdse.complete.created.X.Y", `{}`},
				{"queue a fetch retry", "cdse.fetchretry.fetcher.X.Y", `{}`},
				{"publish a notice of supersession", "own.superseded.X.Y", `{}`},
				{"publish a notice on the planned prefix", "cdse.superseded.X.Y", `{}`},
				{"purge the stream", "$JS.API.STREAM.PURGE." + testStream, `{}`},
				{"delete the stream", "$JS.API.STREAM.DELETE." + testStream, ``},
				{"update the stream", "$JS.API.STREAM.UPDATE." + testStream, `{"name":"` + testStream + `","subjects":["cdse.product.>"],"storage":"memory"}`},
				{"create a stream", "$JS.API.STREAM.CREATE.SQUATTER", `{"name":"SQUATTER","subjects":["squat.>"]}`},
				{"delete a message", "$JS.API.STREAM.MSG.DELETE." + testStream, `{"seq":1}`},
				{"delete a durable", "$JS.API.CONSUMER.DELETE." + testStream + "." + durableOfAnother, ``},
				{"answer in the receiver's inbox", f.receiver.NewRespInbox(), `{"stream":"` + testStream + `","seq":99}`},
			}
			for _, d := range denied {
				t.Run(d.name, func(t *testing.T) {
					expectDenied(t, f.srv.ClientURL(), mode.login, d.subject, []byte(d.data))
				})
			}
			// Nothing changed: the stream holds the receiver's message,
			// the durable is there, and the receiver still publishes.
			ctx := context.Background()
			if got := natstest.StreamCount(t, f.js, testStream); got != 1 {
				t.Errorf("stream holds %d messages, want 1", got)
			}
			if _, err := f.js.Consumer(ctx, testStream, durableOfAnother); err != nil {
				t.Errorf("the receiver's durable: %v", err)
			}
			if _, err := f.js.Publish(ctx, "cdse.product.created.SENTINEL-2.S2MSI1C", []byte(`{}`)); err != nil {
				t.Errorf("the receiver publishes after the denials: %v", err)
			}
		})
	}
}

// TestConsumersRead: what the README's nats lines and the examples do —
// stream info and names, a stored message by subject (both APIs), an
// ordered consumer, a durable of one's own fetched and acknowledged — works
// for a consumer, anonymous by default or with the consumer login.
func TestConsumersRead(t *testing.T) {
	for _, mode := range consumerModes {
		t.Run(mode.name, func(t *testing.T) {
			f := startPermissionsFixture(t, mode.opts)
			js, closeNC := natstest.JetStream(t, f.srv.ClientURL(), mode.login...)
			defer closeNC()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := js.Stream(ctx, testStream)
			if err != nil {
				t.Fatalf("stream info: %v", err)
			}
			if n := s.CachedInfo().State.Msgs; n != 1 {
				t.Errorf("stream info says %d messages", n)
			}
			names := js.StreamNames(ctx)
			var got []string
			for n := range names.Name() {
				got = append(got, n)
			}
			if names.Err() != nil || len(got) == 0 {
				t.Errorf("stream names %v: %v", got, names.Err())
			}
			if m, err := s.GetLastMsgForSubject(ctx, "cdse.product.created.SENTINEL-2.S2MSI2A"); err != nil || m.Header.Get("Nats-Msg-Id") != "by-receiver" {
				t.Errorf("message by subject: %v", err)
			}
			ordered, err := js.OrderedConsumer(ctx, testStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"cdse.product.>"}})
			if err != nil {
				t.Fatalf("ordered consumer: %v", err)
			}
			if m, err := ordered.Next(jetstream.FetchMaxWait(5 * time.Second)); err != nil || m.Headers().Get("Nats-Msg-Id") != "by-receiver" {
				t.Errorf("ordered consumer read: %v", err)
			}
			mine, err := js.CreateOrUpdateConsumer(ctx, testStream, jetstream.ConsumerConfig{Durable: "mine", FilterSubject: "cdse.product.created.>", AckPolicy: jetstream.AckExplicitPolicy})
			if err != nil {
				t.Fatalf("durable consumer: %v", err)
			}
			batch, err := mine.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for m := range batch.Messages() {
				if err := m.DoubleAck(ctx); err != nil {
					t.Errorf("ack: %v", err)
				}
				n++
			}
			if n != 1 || batch.Error() != nil {
				t.Errorf("fetched %d: %v", n, batch.Error())
			}
			if info, err := mine.Info(ctx); err != nil || info.AckFloor.Consumer != 1 {
				t.Errorf("durable info after the ack: %+v %v", info, err)
			}
			if _, err := js.Consumer(ctx, testStream, durableOfAnother); err != nil {
				t.Errorf("consumer info of another's durable: %v", err)
			}
		})
	}
}

// TestLoginFileKeepsEveryRight: the one-shot commands, connecting with the
// login file, publish and manage the streams (a quarantine replay
// publishes products and deletes what it replayed), with their replies
// under the receiver's inbox prefix.
func TestLoginFileKeepsEveryRight(t *testing.T) {
	for _, mode := range consumerModes {
		t.Run(mode.name, func(t *testing.T) {
			f := startPermissionsFixture(t, mode.opts)
			dir := t.TempDir()
			if err := f.srv.WriteLogin(dir); err != nil {
				t.Fatal(err)
			}
			o, err := ReadLogin(dir)
			if err != nil {
				t.Fatal(err)
			}
			nc, err := natsconn.ConnectOnce(o, "command")
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if inbox := nc.NewRespInbox(); !strings.HasPrefix(inbox, ReceiverInboxPrefix+".") {
				t.Errorf("the command's replies arrive on %s", inbox)
			}
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			ack, err := js.Publish(ctx, "cdse.quarantine.push", []byte(`{}`))
			if err != nil {
				t.Fatalf("publish: %v", err)
			}
			s, err := js.Stream(ctx, ack.Stream)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteMsg(ctx, ack.Sequence); err != nil {
				t.Errorf("delete a message: %v", err)
			}
			if err := js.DeleteConsumer(ctx, testStream, durableOfAnother); err != nil {
				t.Errorf("delete a durable: %v", err)
			}
		})
	}
}
