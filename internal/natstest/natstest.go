// Package natstest starts real nats-servers with JetStream for tests, on
// loopback and random ports, stopped when the test ends. It follows the
// helpers of nats.go's jetstream tests: options are copied by value, so one
// test's changes never leak into another's.
package natstest

import (
	"net/url"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
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
