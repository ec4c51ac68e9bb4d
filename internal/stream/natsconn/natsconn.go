// Package natsconn connects the receiver and its commands to NATS: the
// server's long-lived connection (reconnecting forever, never buffering a
// publish while disconnected), a one-shot command's connection, and the
// check of the server's version.
package natsconn

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cdse-jetstream/receiver/internal/platform/redact"
	"github.com/cdse-jetstream/receiver/internal/stream/natssettings"
	"github.com/nats-io/nats.go"
	"github.com/sirupsen/logrus"
)

// Options say how to reach NATS: an external server or cluster, or the
// embedded one in this process (InProcess).
type Options struct {
	URL       string
	CredsFile string
	User      string
	Password  string
	Token     string
	CAFile    string
	// InProcess, when set, connects to that server inside this process
	// (the embedded one) instead of dialling URL.
	InProcess nats.InProcessConnProvider
	// InboxPrefix, when set, replaces _INBOX as the prefix of the
	// connection's reply subjects (PubAcks, JetStream API answers). The
	// embedded server lets consumers publish to _INBOX.> (their own
	// replies) but not to this prefix, so that no consumer can answer a
	// publish of the receiver's in JetStream's place. Unset with an
	// external NATS, whose permissions the operator wrote for _INBOX.
	InboxPrefix string
	// PermissionHint, when set, is logged with a permissions violation:
	// what this binary's user needs and which setting grants it (the
	// server says only which subject it refused).
	PermissionHint string
}

// FromSettings is how to reach the NATS of the settings every binary
// shares (NATS_URL, its login, its CA): the one mapping of them.
func FromSettings(s natssettings.NATS) Options {
	return Options{URL: s.NATSURL, CredsFile: s.NATSCreds, User: s.NATSUser, Password: s.NATSPassword,
		Token: s.NATSToken, CAFile: s.NATSCA}
}

// LoginHint is logged with the server's refusal of the login: the
// settings that make it (the same names in every binary).
const LoginHint = "the NATS server refused the login: check NATS_USER and NATS_PASSWORD (or NATS_CREDS, NATS_TOKEN)"

// Who names who o logs in as, for the log (never the secret).
func (o Options) Who() string {
	switch {
	case o.User != "":
		return o.User
	case o.CredsFile != "":
		return "NATS_CREDS " + o.CredsFile
	case o.Token != "":
		return "NATS_TOKEN"
	case o.InProcess != nil:
		return "in-process"
	}
	return "anonymous"
}

// ErrNotConnected is what Explain says of a request made before the
// client was connected, with no reason from the server known yet.
var ErrNotConnected = errors.New("not connected to NATS")

// notConnected is ErrNotConnected with the last reason known (nil: none
// yet) in place of the client's error, which it still wraps.
type notConnected struct{ err, last error }

func (e notConnected) Error() string {
	if e.last == nil {
		return ErrNotConnected.Error() + " yet (the connection's log says why once it knows)"
	}
	return ErrNotConnected.Error() + ": " + e.last.Error()
}

func (e notConnected) Unwrap() []error { return []error{ErrNotConnected, e.err, e.last} }

// Explain is err with the server's reason when nc is not connected
// because of one: without it a request fails with the client's view
// ("outbound buffer limit exceeded", "connection closed") and not the
// server's ("authorization violation"); and with what to fix when the
// server refused a right.
func Explain(nc *nats.Conn, o Options, err error) error {
	last := nc.LastError()
	if r, ok := refused.Load(nc); ok && !nc.IsConnected() {
		// The client clears LastError between its attempts.
		last = r.(error)
	}
	switch {
	case err == nil:
		return nil
	case isAuth(last) && !nc.IsConnected():
		return fmt.Errorf("%w (as NATS user %s): %s", last, o.Who(), LoginHint)
	case errors.Is(last, nats.ErrPermissionViolation) && o.PermissionHint != "":
		return fmt.Errorf("%w, after %w (as NATS user %s): %s", err, last, o.Who(), o.PermissionHint)
	case !nc.IsConnected() && errors.Is(err, nats.ErrReconnectBufExceeded):
		// A request while the client is not connected: its own words,
		// "outbound buffer limit exceeded", name nothing to fix; the
		// last reason known does (the first attempt may not have one
		// yet; the connection logs it when it does).
		return notConnected{err: err, last: last}
	}
	return err
}

// isAuth says whether err is the server's refusal of the login.
func isAuth(err error) bool {
	return errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) ||
		errors.Is(err, nats.ErrAuthRevoked) || errors.Is(err, nats.ErrAccountAuthExpired)
}

// Connect dials NATS and keeps reconnecting forever. While disconnected,
// publishes fail at once instead of being buffered (ReconnectBufSize -1): a
// request must get a 503 the sender retries, not a 2xx for bytes held in
// memory, and memory must not grow with an outage.
func Connect(o Options, log logrus.FieldLogger) (*nats.Conn, error) {
	var last lastError // the reconnect error logged last
	opts := []nats.Option{
		nats.Name("cdse-receiver"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500 * time.Millisecond),
		nats.ReconnectJitter(250*time.Millisecond, time.Second),
		nats.ReconnectBufSize(-1),
		nats.RetryOnFailedConnect(true),
		// Closed, the client keeps its reason in LastError; the entry
		// would outlive the connection.
		nats.ClosedHandler(func(nc *nats.Conn) { refused.Delete(nc) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err == nil {
				return // a deliberate close or drain
			}
			log.WithError(err).Warn("nats disconnected; requests get 503 until it is back")
		}),
		nats.ConnectHandler(func(nc *nats.Conn) { connected(nc, &last); checkServer(nc, log, "nats connected") }),
		nats.ReconnectHandler(func(nc *nats.Conn) { connected(nc, &last); checkServer(nc, log, "nats reconnected") }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			l := log.WithError(err)
			if errors.Is(err, nats.ErrPermissionViolation) {
				l = l.WithField("nats_user", o.Who())
				if o.PermissionHint != "" {
					l = l.WithField("fix", o.PermissionHint)
				}
			}
			l.Error("nats error")
		}),
		// Without it a refused login is never logged: the client
		// retries in silence and requests fail with "outbound buffer
		// limit exceeded". Each error once, not every ReconnectWait.
		nats.ReconnectErrHandler(func(nc *nats.Conn, err error) {
			if err == nil {
				return
			}
			refused.Store(nc, err)
			if last.Swap(err.Error()) == err.Error() {
				return
			}
			l := log.WithError(err).WithField("nats_user", o.Who())
			if isAuth(err) {
				l.WithField("fix", LoginHint).Error("nats refused the login")
				return
			}
			l.Warn("cannot connect to nats; retrying")
		}),
	}
	nc, err := nats.Connect(o.URL, append(opts, o.auth()...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to nats: %w", err)
	}
	return nc, nil
}

// lastError is the text of the last error logged, shared by the
// connection's callbacks.
type lastError struct {
	mu sync.Mutex
	s  string
}

// Swap sets s and returns the one before.
func (l *lastError) Swap(s string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.s
	l.s = s
	return old
}

// refused is each connection's last failed attempt's error while it is
// not connected, for Explain.
var refused sync.Map // *nats.Conn → error

// connected forgets nc's failed attempts.
func connected(nc *nats.Conn, last *lastError) {
	refused.Delete(nc)
	last.Swap("")
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
		entry.Warnf("%s to nats-server %s, older than %s, the oldest release this receiver is tested with: upgrade the server (docs/deployment.md: NATS server versions)", msg, v, MinServerVersion)
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

// auth are the options that log in, verify the servers and take the
// replies.
func (o Options) auth() []nats.Option {
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
	if o.InProcess != nil {
		opts = append(opts, nats.InProcessServer(o.InProcess))
	}
	if o.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(o.InboxPrefix))
	}
	return opts
}

// ConnectOnce dials NATS for a one-shot command (receiver quarantine,
// backfill): it fails at once when no server answers instead of waiting
// for one, and does not reconnect for long.
func ConnectOnce(o Options, name string) (*nats.Conn, error) {
	nc, err := nats.Connect(o.URL, append([]nats.Option{nats.Name(name), nats.Timeout(5 * time.Second),
		nats.MaxReconnects(10), nats.ReconnectBufSize(-1)}, o.auth()...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to nats at %s: %w", redact.URLs(o.URL), err)
	}
	return nc, nil
}
