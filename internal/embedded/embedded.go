// Package embedded runs the nats-server of the one-command default inside
// the receiver's process: JetStream on a file store in the data directory,
// consumers allowed to read but never to publish into the streams, and the
// login file the one-shot commands use to reach it.
package embedded

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nuid"

	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/internal/natsconn"
)

// Options configure the in-process nats-server of the default mode.
type Options struct {
	// Addr is where downstream consumers connect ("127.0.0.1:4222");
	// port 0 picks a free one (tests).
	Addr string
	// DataDir holds the JetStream file store (in DataDir/jetstream).
	DataDir string
	// MaxPayload must hold the largest accepted notification plus headers.
	MaxPayload int32
	// SyncEvery is the interval of the file store's background fsync (0:
	// the server's default, 2 minutes); SyncAlways flushes before every
	// PubAck instead. The store writes before it acknowledges either way,
	// so a process crash loses nothing; the sync decides what a power loss
	// of the machine can take.
	SyncEvery  time.Duration
	SyncAlways bool
	// ConsumerUser and ConsumerPassword, when set, turn on authentication:
	// consumers log in with them and may read the stream (subscribe, create
	// consumers, ack) but not publish to it or change it, so that nothing
	// reaches the stream except through the receiver. The receiver's own
	// in-process connection uses credentials made up at start.
	ConsumerUser, ConsumerPassword string
	// SubjectPrefix and QuarantinePrefix are what consumers must not
	// publish to.
	SubjectPrefix, QuarantinePrefix, InterestPrefix string
}

// Server is a running embedded server and the credentials of the
// receiver's own connection (empty without authentication).
type Server struct {
	*server.Server
	User, Password string
}

// consumerPermissions let a consumer read everything and use consumers,
// but not publish notifications or manage streams.
func consumerPermissions(prefixes ...string) *server.Permissions {
	var deny []string
	for _, p := range prefixes {
		if p != "" {
			deny = append(deny, p+".>")
		}
	}
	return &server.Permissions{
		Publish: &server.SubjectPermission{
			Allow: []string{"$JS.API.INFO", "$JS.API.STREAM.INFO.>", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.LIST",
				"$JS.API.STREAM.MSG.GET.>", "$JS.API.DIRECT.GET.>", "$JS.API.CONSUMER.>", "$JS.ACK.>", "$JS.FC.>", "_INBOX.>"},
			Deny: deny,
		},
		Subscribe: &server.SubjectPermission{Allow: []string{">"}},
	}
}

// startLimit bounds the embedded server's start, store recovery
// included.
const startLimit = 10 * time.Minute

// Start starts a nats-server with JetStream in this process and waits
// until it accepts connections. Shut it down with Shutdown and
// WaitForShutdown after the clients have drained.
func Start(ctx context.Context, o Options, log logrus.FieldLogger) (*Server, error) {
	host, portStr, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("embedded nats address %q: %w", o.Addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("embedded nats port %q: %w", portStr, err)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	opts := &server.Options{
		ServerName:   "cdse-receiver-embedded",
		Host:         host,
		Port:         port,
		JetStream:    true,
		StoreDir:     o.DataDir, // the server adds "jetstream"
		MaxPayload:   o.MaxPayload,
		SyncInterval: o.SyncEvery,
		SyncAlways:   o.SyncAlways,
		NoSigs:       true, // the receiver owns signal handling
		NoLog:        true,
	}
	emb := &Server{}
	if o.ConsumerUser != "" {
		emb.User, emb.Password = "cdse-receiver", nuid.Next()+nuid.Next()
		opts.Users = []*server.User{
			{Username: emb.User, Password: emb.Password},
			{Username: o.ConsumerUser, Password: o.ConsumerPassword, Permissions: consumerPermissions(o.SubjectPrefix, o.QuarantinePrefix, o.InterestPrefix)},
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	emb.Server = srv
	srv.SetLoggerV2(&serverLog{log: log}, false, false, false)
	go srv.Start()
	// Wait in short steps, so that a cancelled start stops waiting. The
	// server accepts connections once JetStream has recovered its store,
	// which grows with the stream: a restart after a crash rebuilds the
	// index, 5 million messages took longer than the 30 s this once
	// allowed (bench/RESULTS.md, make bench-grow).
	deadline := time.Now().Add(startLimit)
	for !srv.ReadyForConnections(100 * time.Millisecond) {
		if err := ctx.Err(); err != nil {
			srv.Shutdown()
			srv.WaitForShutdown()
			return nil, fmt.Errorf("embedded nats: start cancelled: %w", err)
		}
		if time.Now().After(deadline) {
			srv.Shutdown()
			return nil, fmt.Errorf("embedded nats: not ready for connections within %s (is the port free, the data directory writable?)", startLimit)
		}
	}
	return emb, nil
}

// serverLog routes the embedded server's log through logrus.
type serverLog struct{ log logrus.FieldLogger }

func (l *serverLog) Noticef(format string, v ...any) { l.log.Debugf("nats-server: "+format, v...) }
func (l *serverLog) Warnf(format string, v ...any)   { l.log.Warnf("nats-server: "+format, v...) }
func (l *serverLog) Fatalf(format string, v ...any)  { l.log.Errorf("nats-server: "+format, v...) }
func (l *serverLog) Errorf(format string, v ...any)  { l.log.Errorf("nats-server: "+format, v...) }
func (l *serverLog) Debugf(format string, v ...any)  { l.log.Debugf("nats-server: "+format, v...) }
func (l *serverLog) Tracef(format string, v ...any)  { l.log.Debugf("nats-server: "+format, v...) }

// ConnectOptions connect the receiver's own connection to the server, in
// process, with the credentials made up at start.
func (s *Server) ConnectOptions() natsconn.Options {
	return natsconn.Options{URL: s.ClientURL(), User: s.User, Password: s.Password, InProcess: s.Server}
}
