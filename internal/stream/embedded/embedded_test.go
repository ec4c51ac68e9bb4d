package embedded

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
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

// startEmbedded starts the embedded server and the receiver's in-process
// connection to it, both stopped when the test ends.
func startEmbedded(t *testing.T, o Options) (*Server, *nats.Conn) {
	t.Helper()
	srv, err := Start(context.Background(), o, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	nc, err := natsconn.Connect(srv.ConnectOptions(), quietLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return srv, nc
}

func TestEmbedded(t *testing.T) {
	dir := t.TempDir()
	srv, nc := startEmbedded(t, Options{Addr: "127.0.0.1:0", DataDir: dir, MaxPayload: 2 << 20})
	if nc.MaxPayload() != 2<<20 {
		t.Errorf("max payload %d", nc.MaxPayload())
	}
	js, _ := jetstream.New(nc)
	info, err := topology.New(js, topology.Options{Stream: "E", SubjectPrefix: "e", Duplicates: time.Minute}).EnsureProduct(context.Background())
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

func TestEmbeddedConsumersCannotPublish(t *testing.T) {
	// The receiver's own in-process connection publishes.
	srv, nc := startEmbedded(t, Options{Addr: "127.0.0.1:0", DataDir: t.TempDir(), MaxPayload: 1 << 20,
		ConsumerUser: "reader", ConsumerPassword: "reader-pw", SubjectPrefix: "cdse.product"})
	pub, err := publish.NewPublisher(nc, publish.PublisherOptions{Stream: testStream, Timeout: 2 * time.Second}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := topology.New(pub.JetStream(), topology.Options{Stream: testStream, SubjectPrefix: "cdse.product", Duplicates: time.Minute}).EnsureProduct(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := pub.Publish(context.Background(), []publish.Message{{Subject: "cdse.product.created.SENTINEL-2", MsgID: "by-receiver", Header: map[string][]string{"Nats-Msg-Id": {"by-receiver"}}, Data: []byte(`{}`)}}); err != nil {
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
	if got := natstest.StreamCount(t, pub.JetStream(), testStream); got != 1 {
		t.Errorf("stream holds %d messages, want 1", got)
	}
}

// TestStartFailsAtOnceOnABusyPort: with the port taken (another receiver, a
// make run left running), the start ends with the port and what to do,
// rather than waiting for the store's start limit (ten minutes) without
// serving or exiting.
func TestStartFailsAtOnceOnABusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	log, _ := test.NewNullLogger()
	done := make(chan error, 1)
	go func() {
		srv, err := Start(context.Background(), Options{Addr: ln.Addr().String(), DataDir: t.TempDir()}, log)
		if err == nil {
			srv.Shutdown()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) || !strings.Contains(err.Error(), "NATS_EMBEDDED_ADDR") {
			t.Fatalf("start on a busy port: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the start on a busy port did not end within 30 s")
	}
}
