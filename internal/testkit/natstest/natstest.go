// Package natstest starts real nats-servers with JetStream for tests, on
// loopback and random ports, stopped when the test ends. It follows the
// helpers of nats.go's jetstream tests: options are copied by value, so one
// test's changes never leak into another's.
package natstest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultOptions are the options every test server starts from.
var DefaultOptions = server.Options{
	Host:                  "127.0.0.1",
	Port:                  -1,
	NoLog:                 true,
	NoSigs:                true,
	MaxControlLine:        4096,
	DisableShortFirstPing: true,
	JetStream:             true,
}

// RunJetStream starts a JetStream server with its store in a fresh temporary
// directory and shuts it down when the test ends.
func RunJetStream(t testing.TB) *server.Server {
	t.Helper()
	opts := DefaultOptions
	opts.StoreDir = t.TempDir()
	return Run(t, opts)
}

// JetStream connects to url as a separate client would (a consumer, a
// test's reader) and returns a JetStream context on that connection and
// the function that closes it.
func JetStream(t testing.TB, url string, opts ...nats.Option) (jetstream.JetStream, func()) {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		t.Fatal(err)
	}
	return js, nc.Close
}

// StoreDir is the JetStream store directory srv was started with.
func StoreDir(srv *server.Server) string {
	return filepath.Dir(srv.JetStreamConfig().StoreDir)
}

// Run starts a server with opts (a copy) and shuts it down when the test ends.
func Run(t testing.TB, opts server.Options) *server.Server {
	t.Helper()
	srv, err := server.NewServer(&opts)
	if err != nil {
		t.Fatalf("nats-server: %v", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		t.Fatal("nats-server not ready within 10s")
	}
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	return srv
}

// Port is the client port srv listens on.
// It still answers after a shutdown, so a restart can reuse it.
func Port(srv *server.Server) int {
	u, err := url.Parse(srv.ClientURL())
	if err != nil {
		panic(err)
	}
	p, _ := strconv.Atoi(u.Port())
	return p
}

// Restart shuts srv down and starts a new server on the same port with the
// JetStream store at storeDir (the one srv used), as after a crash.
func Restart(t testing.TB, srv *server.Server, storeDir string) *server.Server {
	t.Helper()
	opts := DefaultOptions
	opts.Port = Port(srv)
	opts.StoreDir = storeDir
	srv.Shutdown()
	srv.WaitForShutdown()
	return Run(t, opts)
}

// RunCluster starts an n-node JetStream cluster on loopback and waits until
// it has a JetStream meta leader. The servers shut down when the test ends.
func RunCluster(t testing.TB, n int) []*server.Server {
	t.Helper()
	ports := FreePorts(t, n)
	var routes []*url.URL
	for _, p := range ports {
		u, _ := url.Parse("nats-route://127.0.0.1:" + strconv.Itoa(p))
		routes = append(routes, u)
	}
	servers := make([]*server.Server, n)
	for i := range servers {
		opts := DefaultOptions
		opts.ServerName = "n" + strconv.Itoa(i+1)
		opts.StoreDir = t.TempDir()
		opts.Cluster = server.ClusterOpts{Name: "cdse-test", Host: "127.0.0.1", Port: ports[i]}
		opts.Routes = routes
		servers[i] = Run(t, opts)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, s := range servers {
			if s.JetStreamIsLeader() {
				return servers
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no JetStream meta leader within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ClusterURL lists the client URLs of servers, comma-separated.
func ClusterURL(servers []*server.Server) string {
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.ClientURL())
	}
	return strings.Join(urls, ",")
}

// FreePort returns a free TCP port on loopback.
func FreePort(t testing.TB) int {
	t.Helper()
	return FreePorts(t, 1)[0]
}

// FreePorts returns n distinct free TCP ports on loopback. Every listener
// is held until all are chosen, so the system cannot hand the same port
// out twice (as nats.go's test helpers do).
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	lns := make([]net.Listener, 0, n)
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports
}

// Msg is a stored message as the tests look at it.
type Msg struct {
	Subject string
	Header  nats.Header
	Data    []byte
}

// StreamMessages reads every message of the stream, in order, with an
// ordered consumer.
func StreamMessages(t testing.TB, js jetstream.JetStream, stream string) []Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var (
		info *jetstream.StreamInfo
		cons jetstream.Consumer
	)
	// Each API request gets a few seconds, tried again until ctx ends: a
	// cluster recovering from lost nodes may drop a request, which would
	// otherwise wait out the whole minute unanswered.
	err := retryAPI(ctx, func(actx context.Context) error {
		s, err := js.Stream(actx, stream)
		if err == nil {
			info, err = s.Info(actx)
		}
		if err == nil {
			cons, err = s.OrderedConsumer(actx, jetstream.OrderedConsumerConfig{})
		}
		return err
	})
	if err != nil {
		t.Fatalf("reading %s: %v", stream, err)
	}
	var out []Msg
	for uint64(len(out)) < info.State.Msgs {
		// Ask for exactly what is left: Fetch returns as soon as that many
		// arrived, instead of waiting out MaxWait for a full batch.
		before := len(out)
		batch, err := cons.Fetch(min(500, int(info.State.Msgs)-len(out)), jetstream.FetchMaxWait(5*time.Second))
		if err == nil {
			for m := range batch.Messages() {
				out = append(out, Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
			}
			err = batch.Error()
		}
		// A cluster that just lost a node may answer a fetch with nothing
		// while the stream's leadership settles: try again until ctx ends.
		if err != nil || len(out) == before {
			select {
			case <-ctx.Done():
				t.Fatalf("read %d of %d messages of %s: %v", len(out), info.State.Msgs, stream, err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return out
}

// CountBy counts the messages by the value of a header.
func CountBy(msgs []Msg, header string) map[string]int {
	out := map[string]int{}
	for _, m := range msgs {
		out[m.Header.Get(header)]++
	}
	return out
}

// StreamCount is the number of messages the stream holds.
func StreamCount(t testing.TB, js jetstream.JetStream, stream string) uint64 {
	t.Helper()
	s, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// WaitStreamCount waits, at most d, until the stream holds at least n
// messages; the error says how many it held.
func WaitStreamCount(t testing.TB, js jetstream.JetStream, stream string, n uint64, d time.Duration) error {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		got := StreamCount(t, js, stream)
		if got >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s holds %d messages after %s, want %d", stream, got, d, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// retryAPI runs f, each try bounded to 5 s, until it succeeds or ctx ends
// (the last try's error then).
func retryAPI(ctx context.Context, f func(context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := f(actx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}
