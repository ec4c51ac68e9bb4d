// Package embedded runs the nats-server of the one-command default inside
// the receiver's process: JetStream on a file store in the data directory,
// consumers (anonymous by default, or with the consumer login) allowed to
// read but never to publish into the streams or change them, the
// receiver's own login with every right, and the login file the one-shot
// commands use to reach it.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nuid"

	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/internal/stream/natsconn"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
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
	// ConsumerUser and ConsumerPassword, when set, are the consumers'
	// login, and a client without it is refused. Unset, consumers connect
	// without a login (the default, on loopback). Either way a consumer
	// has consumerPermissions: it reads the streams and uses consumers but
	// cannot publish into a stream, or purge, change or delete one, nor
	// touch the fetcher's durable (Stream, FetchConsumer).
	ConsumerUser, ConsumerPassword string
	// FetcherUser and FetcherPassword, when set, are the fetcher's login
	// (cmd/fetcher): a consumer's rights, and the fetcher's stream
	// (FetcherStream, its subjects topology's fetched and failed
	// prefixes) to create, update and publish to; nothing of the
	// receiver's streams.
	FetcherUser, FetcherPassword string
	// Stream and FetchConsumer name the fetcher's durable on the product
	// stream (NATS_STREAM, FETCH_CONSUMER): consumers may not create,
	// change, delete, pull from or acknowledge on it, only the fetcher's
	// login and the receiver's may (durableSubjects; the receiver's own
	// durable on Stream, topology.VersionsConsumer, the receiver's only). Either empty:
	// no such guard.
	Stream, FetchConsumer string
	// SubjectPrefix, QuarantinePrefix, InterestPrefix, CompletePrefix and
	// SupersededPrefix are the configured prefixes of the receiver's
	// streams, which consumers must not publish to (with
	// topology.PlannedPrefixes).
	SubjectPrefix, QuarantinePrefix, InterestPrefix, CompletePrefix, SupersededPrefix string
}

// Server is a running embedded server and the login of the receiver's own
// connection: an internal user with a password made up at each start,
// known only to this process and to the login file.
type Server struct {
	*server.Server
	User, Password string
}

// ReceiverUser is the receiver's own user on the embedded server, with
// every right; anonymousUser is who a client without a login becomes when
// no consumer login is set (the server's no_auth_user).
const (
	ReceiverUser  = "cdse-receiver"
	anonymousUser = "anonymous-consumer"
)

// ReceiverInboxPrefix is the reply prefix of the receiver's connections to
// the embedded server (its PubAcks and JetStream API answers arrive under
// it). Consumers may publish to _INBOX.> (their own replies) but not
// here, so none can answer a publish of the receiver's in JetStream's
// place (a forged PubAck would have the receiver answer 200 for a
// notification never stored), nor read its answers.
const ReceiverInboxPrefix = "_RCV"

// consumerPermissions let a consumer read everything and create and use
// its consumers, but not publish into the receiver's streams nor create,
// change, purge or delete a stream, delete a message or delete a consumer.
//
// Deleting a consumer is denied as a whole: NATS has no owner of a
// consumer to scope the right to, and a consumer that could delete its own
// durable could delete any team's, with its place and its unacknowledged
// messages. Ephemeral and ordered consumers (nats sub, the examples) are
// removed by the server once idle; a durable no longer wanted is deleted
// by the operator (receiver's login, docs/consumers.md).
func consumerPermissions(prefixes ...string) *server.Permissions {
	deny := []string{
		ReceiverInboxPrefix + ".>",
		"$JS.API.STREAM.CREATE.>", "$JS.API.STREAM.UPDATE.>", "$JS.API.STREAM.DELETE.>", "$JS.API.STREAM.PURGE.>",
		"$JS.API.STREAM.MSG.DELETE.>", "$JS.API.CONSUMER.DELETE.>",
	}
	for _, p := range prefixes {
		if p != "" {
			deny = append(deny, p+".>")
		}
	}
	return &server.Permissions{
		// Only what reading needs is allowed, so that a JetStream API
		// added by a later server is denied until it is listed here.
		Publish: &server.SubjectPermission{
			Allow: []string{
				"$JS.API.INFO",
				"$JS.API.STREAM.INFO.>", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.LIST",
				"$JS.API.STREAM.MSG.GET.>", "$JS.API.DIRECT.GET.>",
				"$JS.API.CONSUMER.CREATE.>", "$JS.API.CONSUMER.DURABLE.CREATE.>",
				"$JS.API.CONSUMER.INFO.>", "$JS.API.CONSUMER.NAMES.>", "$JS.API.CONSUMER.LIST.>",
				"$JS.API.CONSUMER.MSG.NEXT.>",
				"$JS.ACK.>", "$JS.FC.>",
				"_INBOX.>",
			},
			Deny: deny,
		},
		Subscribe: &server.SubjectPermission{Allow: []string{">"}, Deny: []string{ReceiverInboxPrefix + ".>"}},
	}
}

// durableSubjects are what a consumer could send to take over a durable
// consumer of the receiver's stages, the fetcher's or the receiver's own
// (topology.VersionsConsumer): create or update it (another filter, a
// max_ack_pending of 1: the running fetcher silently stops receiving),
// delete it, pull from it, or acknowledge its messages (those products
// are never fetched, or never compared, and nothing says so). A
// consumer's own durables are untouched: NATS has no owner of a consumer,
// so these are named.
//
// Each API subject is denied with any suffix: CREATE has the forms
// <stream>.<consumer> and <stream>.<consumer>.<filter>, and a suffix the
// server ignores today must not open a way around. The legacy form
// CREATE.<stream>, meant for unnamed ephemerals, takes the consumer's
// name from the request's body (config.name), where a permission cannot
// look: with it, a consumer updates the fetcher's durable as well (tried
// on nats-server 2.15), so it is denied on this stream as a whole. Clients
// name their ephemerals in the subject since nats-server 2.9 (nats.go, the
// nats CLI, nats.js' ordered consumers); one that creates an unnamed
// ephemeral on the legacy subject is refused. The acks have two forms,
// $JS.ACK.<stream>.<consumer>.… and $JS.ACK.<domain>.<account
// hash>.<stream>.<consumer>.…; the server takes both.
func durableSubjects(stream, consumer string) []string {
	if stream == "" || consumer == "" {
		return nil
	}
	out := []string{"$JS.API.CONSUMER.CREATE." + stream}
	for _, api := range []string{"CREATE", "DURABLE.CREATE", "DELETE", "MSG.NEXT"} {
		s := "$JS.API.CONSUMER." + api + "." + stream + "." + consumer
		out = append(out, s, s+".>")
	}
	return append(out, "$JS.ACK."+stream+"."+consumer+".>", "$JS.ACK.*.*."+stream+"."+consumer+".>")
}

// FetcherStream is the fetcher's stream (its FETCH_STREAM default), the
// one stream its login may create and update on the embedded server.
const FetcherStream = "CDSE_FETCHED"

// fetcherLeases is the fetcher's lease bucket beside FetcherStream
// (fetcher.LeaseBucket, which the fetcher declares: the embedded server
// does not import the fetcher, so the name is spelt here too; test/fetch
// runs the fetcher with this login, where a difference fails).
const fetcherLeases = FetcherStream + "_LEASES"

// fetcherPermissions are a consumer's, plus the fetcher's own stream:
// created and updated (its subjects are topology's fetched and failed
// prefixes), and published to. The receiver's streams stay out of reach.
func fetcherPermissions(denied ...string) *server.Permissions {
	p := consumerPermissions(denied...)
	// The fetched and failed events, the retries `fetcher failed retry`
	// puts back, and removing a failed event once retried or dropped.
	p.Publish.Allow = append(p.Publish.Allow,
		"$JS.API.STREAM.CREATE."+FetcherStream, "$JS.API.STREAM.UPDATE."+FetcherStream,
		"$JS.API.STREAM.MSG.DELETE."+FetcherStream,
		// Its lease bucket (a KV bucket is the stream KV_<bucket>, its
		// keys' subjects $KV.<bucket>.>): which replica downloads what.
		"$JS.API.STREAM.CREATE.KV_"+fetcherLeases, "$JS.API.STREAM.UPDATE.KV_"+fetcherLeases,
		"$KV."+fetcherLeases+".>",
		topology.PlannedPrefixes[0]+".>", topology.PlannedPrefixes[1]+".>", topology.RetryPrefix+".>")
	// A deny wins over an allow in nats-server: the consumers' denials of
	// stream creation, message deletion and the fetcher's prefixes are
	// dropped here, each replaced by the narrow allow above (what is not
	// allowed stays denied: deleting a message of another stream too).
	var deny []string
	for _, d := range p.Publish.Deny {
		switch d {
		case "$JS.API.STREAM.CREATE.>", "$JS.API.STREAM.UPDATE.>", "$JS.API.STREAM.MSG.DELETE.>",
			topology.PlannedPrefixes[0] + ".>", topology.PlannedPrefixes[1] + ".>", topology.RetryPrefix + ".>":
			continue
		}
		deny = append(deny, d)
	}
	p.Publish.Deny = deny
	return p
}

// users are the embedded server's logins: the receiver's, with every
// right; the consumers', which is who a client without a login becomes
// when no consumer login is set; and the fetcher's, when set.
func users(o Options, receiverPassword string) ([]*server.User, string, error) {
	denied := append([]string{o.SubjectPrefix, o.QuarantinePrefix, o.InterestPrefix, o.CompletePrefix, o.SupersededPrefix}, topology.PlannedPrefixes...)
	// The fetcher's login keeps its durable: fetcherPermissions are made
	// from consumerPermissions, before this denial. Neither may touch the
	// receiver's own.
	perms := consumerPermissions(denied...)
	perms.Publish.Deny = append(perms.Publish.Deny, durableSubjects(o.Stream, o.FetchConsumer)...)
	perms.Publish.Deny = append(perms.Publish.Deny, durableSubjects(o.Stream, topology.VersionsConsumer)...)
	receiver := &server.User{Username: ReceiverUser, Password: receiverPassword}
	for _, u := range []string{o.ConsumerUser, o.FetcherUser} {
		if u == ReceiverUser || u == anonymousUser {
			return nil, "", fmt.Errorf("embedded nats: a consumer's or the fetcher's user cannot be named %q, the receiver's own users are", u)
		}
	}
	if o.FetcherUser != "" && o.FetcherUser == o.ConsumerUser {
		return nil, "", errors.New("embedded nats: the fetcher's user must differ from the consumers'")
	}
	us := []*server.User{receiver}
	noAuth := ""
	if o.ConsumerUser == "" {
		// The password is never given out: this user is reached only as
		// the no_auth_user, by connecting without a login.
		us, noAuth = append(us, &server.User{Username: anonymousUser, Password: nuid.Next() + nuid.Next(), Permissions: perms}), anonymousUser
	} else {
		us = append(us, &server.User{Username: o.ConsumerUser, Password: o.ConsumerPassword, Permissions: perms})
	}
	if o.FetcherUser != "" {
		fp := fetcherPermissions(denied...)
		fp.Publish.Deny = append(fp.Publish.Deny, durableSubjects(o.Stream, topology.VersionsConsumer)...)
		us = append(us, &server.User{Username: o.FetcherUser, Password: o.FetcherPassword, Permissions: fp})
	}
	return us, noAuth, nil
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
	// The receiver's password is new at each start and leaves the process
	// only through the login file (0600, in the data directory).
	emb := &Server{User: ReceiverUser, Password: nuid.Next() + nuid.Next()}
	if opts.Users, opts.NoAuthUser, err = users(o, emb.Password); err != nil {
		return nil, err
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	emb.Server = srv
	sl := &serverLog{log: log, fatal: make(chan string, 1)}
	srv.SetLoggerV2(sl, false, false, false)
	go srv.Start()
	// Wait in short steps, so that a cancelled start stops waiting. The
	// server accepts connections once JetStream has recovered its store,
	// which grows with the stream: a restart after a crash rebuilds the
	// index, 5 million messages took longer than the 30 s this once
	// allowed (bench/RESULTS.md, make bench-grow).
	deadline := time.Now().Add(startLimit)
	for !srv.ReadyForConnections(100 * time.Millisecond) {
		select {
		case msg := <-sl.fatal:
			// A port in use ends the start at once: nothing else will
			// free it, and waiting the store's time hides the cause.
			srv.Shutdown()
			srv.WaitForShutdown()
			return nil, fmt.Errorf("embedded nats on %s: %s (another receiver, or a make run left running, may hold the port: stop it, or set NATS_EMBEDDED_ADDR to a free one; NATS_URL to use an existing NATS)", o.Addr, msg)
		default:
		}
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

// serverLog routes the embedded server's log through logrus; the first
// fatal error (the server gives up, e.g. on a port in use) also goes to
// fatal, which Start waits on.
type serverLog struct {
	log   logrus.FieldLogger
	fatal chan string
}

func (l *serverLog) Noticef(format string, v ...any) { l.log.Debugf("nats-server: "+format, v...) }
func (l *serverLog) Warnf(format string, v ...any)   { l.log.Warnf("nats-server: "+format, v...) }
func (l *serverLog) Fatalf(format string, v ...any) {
	l.log.Errorf("nats-server: "+format, v...)
	select {
	case l.fatal <- fmt.Sprintf(format, v...):
	default:
	}
}
func (l *serverLog) Errorf(format string, v ...any) { l.log.Errorf("nats-server: "+format, v...) }
func (l *serverLog) Debugf(format string, v ...any) { l.log.Debugf("nats-server: "+format, v...) }
func (l *serverLog) Tracef(format string, v ...any) { l.log.Debugf("nats-server: "+format, v...) }

// ConnectOptions connect the receiver's own connection to the server, in
// process, with the credentials made up at start and replies under
// ReceiverInboxPrefix.
func (s *Server) ConnectOptions() natsconn.Options {
	return natsconn.Options{URL: s.ClientURL(), User: s.User, Password: s.Password, InProcess: s.Server, InboxPrefix: ReceiverInboxPrefix}
}
