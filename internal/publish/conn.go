package publish

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
	"github.com/sirupsen/logrus"
)

// EmbeddedOptions configure the in-process nats-server of the default mode.
type EmbeddedOptions struct {
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
	SubjectPrefix, QuarantinePrefix string
}

// Embedded is a running embedded server and the credentials of the
// receiver's own connection (empty without authentication).
type Embedded struct {
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

// embeddedStartLimit bounds the embedded server's start, store recovery
// included.
const embeddedStartLimit = 10 * time.Minute

// StartEmbedded starts a nats-server with JetStream in this process and
// waits until it accepts connections. Shut it down with Shutdown and
// WaitForShutdown after the clients have drained.
func StartEmbedded(ctx context.Context, o EmbeddedOptions, log logrus.FieldLogger) (*Embedded, error) {
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
	emb := &Embedded{}
	if o.ConsumerUser != "" {
		emb.User, emb.Password = "cdse-receiver", nuid.Next()+nuid.Next()
		opts.Users = []*server.User{
			{Username: emb.User, Password: emb.Password},
			{Username: o.ConsumerUser, Password: o.ConsumerPassword, Permissions: consumerPermissions(o.SubjectPrefix, o.QuarantinePrefix)},
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
	deadline := time.Now().Add(embeddedStartLimit)
	for !srv.ReadyForConnections(100 * time.Millisecond) {
		if err := ctx.Err(); err != nil {
			srv.Shutdown()
			srv.WaitForShutdown()
			return nil, fmt.Errorf("embedded nats: start cancelled: %w", err)
		}
		if time.Now().After(deadline) {
			srv.Shutdown()
			return nil, fmt.Errorf("embedded nats: not ready for connections within %s (is the port free, the data directory writable?)", embeddedStartLimit)
		}
	}
	return emb, nil
}

// ConnectOptions say how to reach an external NATS.
type ConnectOptions struct {
	URL       string
	CredsFile string
	User      string
	Password  string
	Token     string
	CAFile    string
}

// Connect dials NATS and keeps reconnecting forever. While disconnected,
// publishes fail at once instead of being buffered (ReconnectBufSize -1): a
// request must get a 503 the sender retries, not a 2xx for bytes held in
// memory, and memory must not grow with an outage.
// With srv non-nil the connection is in-process (embedded mode).
func Connect(o ConnectOptions, emb *Embedded, log logrus.FieldLogger) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name("cdse-receiver"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500 * time.Millisecond),
		nats.ReconnectJitter(250*time.Millisecond, time.Second),
		nats.ReconnectBufSize(-1),
		nats.RetryOnFailedConnect(true),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err == nil {
				return // a deliberate close or drain
			}
			log.WithError(err).Warn("nats disconnected; requests get 503 until it is back")
		}),
		nats.ConnectHandler(func(nc *nats.Conn) { checkServer(nc, log, "nats connected") }),
		nats.ReconnectHandler(func(nc *nats.Conn) { checkServer(nc, log, "nats reconnected") }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			log.WithError(err).Error("nats error")
		}),
	}
	url := o.URL
	if emb != nil {
		opts = append(opts, nats.InProcessServer(emb.Server))
		url = emb.ClientURL()
		if emb.User != "" {
			opts = append(opts, nats.UserInfo(emb.User, emb.Password))
		}
	}
	nc, err := nats.Connect(url, append(opts, o.auth()...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to nats: %w", err)
	}
	return nc, nil
}

// MinServerVersion is the oldest nats-server release the receiver is tested
// with (internal/e2e TestServerVersions). An older server is not refused —
// everything the receiver uses is older still — but a connection to one is
// logged as a warning, so an operator learns it at start, not from a
// failure later.
const MinServerVersion = "2.10.0"

// checkServer logs the version of the server nc reached, as a warning when
// it is older than MinServerVersion.
func checkServer(nc *nats.Conn, log logrus.FieldLogger, msg string) {
	v := nc.ConnectedServerVersion()
	entry := log.WithFields(logrus.Fields{"server": nc.ConnectedUrlRedacted(), "server_version": v})
	if !VersionAtLeast(v, MinServerVersion) {
		entry.Warnf("%s to nats-server %s, older than %s, the oldest release this receiver is tested with: upgrade the server (README: NATS server versions)", msg, v, MinServerVersion)
		return
	}
	entry.Info(msg)
}

// VersionAtLeast compares "major.minor.patch" versions, ignoring a "v"
// prefix and a "-pre-release" suffix; an unparsable v is not at least min.
func VersionAtLeast(v, min string) bool {
	a, ok1 := versionParts(v)
	b, ok2 := versionParts(min)
	if !ok1 || !ok2 {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return true
}

func versionParts(v string) ([3]int, bool) {
	var out [3]int
	v, _, _ = strings.Cut(strings.TrimPrefix(v, "v"), "-")
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return out, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return out, false
		}
		out[i] = n
	}
	return out, true
}

// auth are the options that log in and verify the servers.
func (o ConnectOptions) auth() []nats.Option {
	var opts []nats.Option
	if o.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(o.CredsFile))
	}
	if o.User != "" {
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	if o.Token != "" {
		opts = append(opts, nats.Token(o.Token))
	}
	if o.CAFile != "" {
		opts = append(opts, nats.RootCAs(o.CAFile))
	}
	return opts
}

// ConnectOnce dials NATS for a one-shot command (receiver quarantine,
// backfill): it fails at once when no server answers instead of waiting
// for one, and does not reconnect for long.
func ConnectOnce(o ConnectOptions, name string) (*nats.Conn, error) {
	nc, err := nats.Connect(o.URL, append([]nats.Option{nats.Name(name), nats.Timeout(5 * time.Second),
		nats.MaxReconnects(10), nats.ReconnectBufSize(-1)}, o.auth()...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to nats at %s: %w", RedactURL(o.URL), err)
	}
	return nc, nil
}

// RedactURL hides a password written into a NATS URL list.
func RedactURL(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}

// serverLog routes the embedded server's log through logrus.
type serverLog struct{ log logrus.FieldLogger }

func (l *serverLog) Noticef(format string, v ...any) { l.log.Debugf("nats-server: "+format, v...) }
func (l *serverLog) Warnf(format string, v ...any)   { l.log.Warnf("nats-server: "+format, v...) }
func (l *serverLog) Fatalf(format string, v ...any)  { l.log.Errorf("nats-server: "+format, v...) }
func (l *serverLog) Errorf(format string, v ...any)  { l.log.Errorf("nats-server: "+format, v...) }
func (l *serverLog) Debugf(format string, v ...any)  { l.log.Debugf("nats-server: "+format, v...) }
func (l *serverLog) Tracef(format string, v ...any)  { l.log.Debugf("nats-server: "+format, v...) }
