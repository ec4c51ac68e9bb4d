// Package preflight checks, from the outside, that a webhook endpoint is
// the receiver and takes the given credentials, before a subscription
// points the catalogue at it (register create/apply/update) and in
// register status: the name resolves, the port answers, the certificate is
// valid for the name and not about to expire, and a preflight request (a
// POST with Cdse-Preflight: 1, which the receiver answers without storing
// anything) is answered by the receiver: first without the credentials,
// which are sent only once the endpoint has answered that as the receiver
// does (401 with its Basic realm), then with them. Each
// failure says which of four things is wrong — the endpoint is not
// reachable, its certificate is bad, the credentials are wrong, or what
// answers is not the receiver — in words an operator acts on.
package preflight

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/cdse-jetstream/receiver/internal/ingest/webhook/wire"
)

// DefaultTimeout bounds each check.
const DefaultTimeout = 10 * time.Second

// ExpiryWarning is how close to its expiry a certificate gets a warning.
const ExpiryWarning = 14 * 24 * time.Hour

// Options say what to check.
type Options struct {
	// Endpoint is the webhook's URL, as the subscription gives it to the
	// catalogue: https://host[:port]/path.
	Endpoint string
	// Username and Password are the webhook's Basic-auth credentials.
	Username, Password string
	// RootCAs verify the endpoint's certificate; nil: the system's roots.
	RootCAs *x509.CertPool
	// Timeout bounds each check (0: DefaultTimeout).
	Timeout time.Duration
	// Now is the clock certificates are judged by (nil: time.Now).
	Now func() time.Time
	// Insecure allows an http:// endpoint (local tests); the TLS check is
	// then skipped. The catalogue itself needs https.
	Insecure bool
}

// Status is a check's outcome.
type Status string

// The outcomes: a warning does not fail the report; a skipped check could
// not apply (its detail says why).
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Problem is what a failed report means for the operator.
type Problem string

// The problems, one per kind of fix.
const (
	// InvalidEndpoint: the URL itself is not one to give the catalogue.
	InvalidEndpoint Problem = "invalid-endpoint"
	// Unreachable: the name does not resolve, the port does not answer,
	// or a proxy in front cannot reach the receiver.
	Unreachable Problem = "unreachable"
	// BadCertificate: the certificate is from an unknown authority, for
	// another name, or expired.
	BadCertificate Problem = "bad-certificate"
	// WrongCredentials: the receiver refuses the user and password.
	WrongCredentials Problem = "wrong-credentials"
	// NotReceiver: something else answers at this URL.
	NotReceiver Problem = "not-receiver"
)

// Step is one check of the report, one line of its table.
type Step struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
}

// Report is the checks made, in order, up to the first failure.
type Report struct {
	Endpoint string `json:"endpoint"`
	Checks   []Step `json:"checks"`
	// Problem is the kind of the failure, "" without one.
	Problem Problem `json:"problem,omitempty"`
}

// OK says whether no check failed (warnings allowed).
func (r Report) OK() bool {
	for _, c := range r.Checks {
		if c.Status == Fail {
			return false
		}
	}
	return len(r.Checks) > 0
}

// MarshalJSON adds "ok" to the fields.
func (r Report) MarshalJSON() ([]byte, error) {
	type fields Report
	return json.Marshal(struct {
		OK bool `json:"ok"`
		fields
	}{r.OK(), fields(r)})
}

// PrintReport writes the checks as a table (✔ ok, ✘ fail, ! warn, - skip),
// as register status does.
func PrintReport(w io.Writer, r Report) error { return PrintSteps(w, r.Checks) }

// PrintSteps writes checks as a table (check, a mark, the detail), as
// register status prints its own.
func PrintSteps(w io.Writer, steps []Step) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tOK\tDETAIL")
	mark := map[Status]string{OK: "✔", Fail: "✘", Warn: "!", Skip: "-"}
	for _, c := range steps {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, mark[c.Status], c.Detail)
	}
	return tw.Flush()
}

// checker carries a run's state.
type checker struct {
	o     Options
	r     Report
	host  string // the URL's host name or IP, without brackets
	port  string
	tls   bool
	addrs []string      // what the name resolves to
	addr  string        // the address the TCP check connected to: later checks use it
	conn  net.Conn      // the TCP check's connection to addr, for the TLS check
	took  time.Duration // to connect to addr
}

func (c *checker) add(name string, st Status, format string, a ...any) {
	c.r.Checks = append(c.r.Checks, Step{Name: name, Status: st, Detail: fmt.Sprintf(format, a...)})
}

// fail adds a failed check and its problem; the run stops.
func (c *checker) fail(name string, p Problem, format string, a ...any) bool {
	c.add(name, Fail, format, a...)
	c.r.Problem = p
	return false
}

// Check runs the checks in order — url, dns, tcp, tls, webhook — and stops
// at the first failure. Every step carries ctx and is bounded by the
// timeout.
func Check(ctx context.Context, o Options) Report {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	c := &checker{o: o}
	if u, err := url.Parse(o.Endpoint); err == nil {
		c.r.Endpoint = u.Redacted() // never a password from the URL
	}
	_ = c.url() && c.dns(ctx) && c.tcp(ctx) && c.tlsCheck(ctx) && c.webhook(ctx)
	if c.conn != nil { // no TLS check made
		c.conn.Close()
	}
	return c.r
}

func (c *checker) url() bool {
	const name = "url"
	u, err := url.Parse(c.o.Endpoint)
	switch {
	case err != nil:
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which may hold a password
		}
		return c.fail(name, InvalidEndpoint, "the endpoint is not a URL: %v", err)
	case u.User != nil: // first: the messages below show the URL
		return c.fail(name, InvalidEndpoint, "%s carries credentials in the URL: give them as the webhook's user and password instead", u.Redacted())
	case u.Scheme == "http" && !c.o.Insecure:
		return c.fail(name, InvalidEndpoint, "%s is http: the catalogue sends credentials and notifications only to an https endpoint", c.o.Endpoint)
	case u.Scheme != "https" && u.Scheme != "http":
		return c.fail(name, InvalidEndpoint, "%q is not an https URL", c.o.Endpoint)
	case u.Host == "" || u.Hostname() == "":
		return c.fail(name, InvalidEndpoint, "%q has no host", c.o.Endpoint)
	case u.Fragment != "":
		return c.fail(name, InvalidEndpoint, "%s has a fragment (#...): the catalogue would not send it", c.o.Endpoint)
	}
	c.host, c.port, c.tls = u.Hostname(), u.Port(), u.Scheme == "https"
	if c.port == "" {
		c.port = map[bool]string{true: "443", false: "80"}[c.tls]
	}
	if c.tls {
		c.add(name, OK, "%s", c.o.Endpoint)
	} else {
		c.add(name, Warn, "%s is http (allowed for local tests only): the catalogue needs https", c.o.Endpoint)
	}
	return true
}

var errNoAddress = errors.New("no address")

// resolve looks the host name up, in the resolver's order.
func (c *checker) resolve(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(ctx, c.host)
	if err == nil && len(addrs) == 0 {
		err = errNoAddress
	}
	return addrs, err
}

func (c *checker) dns(ctx context.Context) bool {
	const name = "dns"
	if net.ParseIP(c.host) != nil {
		c.add(name, OK, "%s is an IP address: nothing to resolve", c.host)
		return true
	}
	addrs, err := c.resolve(ctx)
	if err != nil {
		var de *net.DNSError
		switch {
		case errors.As(err, &de) && de.IsNotFound, errors.Is(err, errNoAddress):
			return c.fail(name, Unreachable, "not reachable: %s has no address (no DNS record): create its A/AAAA record, or fix the URL's host", c.host)
		case errors.As(err, &de) && de.IsTimeout, errors.Is(err, context.DeadlineExceeded):
			return c.fail(name, Unreachable, "not reachable: resolving %s timed out (%s): the name's DNS servers do not answer", c.host, c.o.Timeout)
		default:
			return c.fail(name, Unreachable, "not reachable: cannot resolve %s: %v", c.host, err)
		}
	}
	c.addrs = addrs
	c.add(name, OK, "%s → %s", c.host, strings.Join(addrs, ", "))
	return true
}

func (c *checker) tcp(ctx context.Context) bool {
	const name = "tcp"
	addrs := c.addrs
	if len(addrs) == 0 {
		addrs = []string{c.host}
	}
	type result struct {
		conn net.Conn
		err  error
		took time.Duration
	}
	results := make([]result, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := net.Dialer{Timeout: c.o.Timeout}
			start := time.Now()
			conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(a, c.port))
			results[i] = result{conn, err, time.Since(start)}
		}()
	}
	wg.Wait()
	var failed []string
	for i, a := range addrs {
		hp := net.JoinHostPort(a, c.port)
		switch r := results[i]; {
		case r.err != nil:
			failed = append(failed, fmt.Sprintf("%s: %s", hp, dialError(r.err, c.o.Timeout)))
		case c.conn == nil:
			// Kept for the TLS check: a connection closed before its
			// handshake is an error in the server's log.
			c.conn, c.addr, c.took = r.conn, hp, r.took
		default:
			r.conn.Close()
		}
	}
	switch {
	case c.conn == nil:
		return c.fail(name, Unreachable, "not reachable: nothing accepts connections on port %s (%s): is the receiver (or its proxy) running, and the port open in the firewall?", c.port, strings.Join(failed, "; "))
	case len(failed) > 0:
		c.add(name, Warn, "connected to %s, but not to %s: the catalogue may use any of the name's addresses", c.addr, strings.Join(failed, "; "))
	default:
		c.add(name, OK, "connected to %s in %.1f ms", c.addr, float64(c.took)/float64(time.Millisecond))
	}
	return true
}

// dialError says why a connection failed, briefly.
func dialError(err error, timeout time.Duration) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("no answer within %s", timeout)
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "no route to the address"
	}
	return err.Error()
}

func (c *checker) tlsConfig() *tls.Config {
	return &tls.Config{ServerName: c.host, RootCAs: c.o.RootCAs, MinVersion: tls.VersionTLS12, Time: c.o.Now, NextProtos: []string{"http/1.1"}}
}

func (c *checker) tlsCheck(ctx context.Context) bool {
	const name = "tls"
	if !c.tls {
		c.add(name, Skip, "http endpoint: no TLS to check")
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	conn := tls.Client(c.conn, c.tlsConfig())
	c.conn = nil
	defer conn.Close() // with close_notify: nothing for the server to log
	if err := conn.HandshakeContext(ctx); err != nil {
		return c.tlsFailure(name, err)
	}
	st := conn.ConnectionState()
	leaf := st.PeerCertificates[0]
	// The earliest expiry of the chain the client trusts (the root is the
	// client's own).
	chain := st.VerifiedChains[0]
	expires := leaf.NotAfter
	for _, cert := range chain[:max(1, len(chain)-1)] {
		if cert.NotAfter.Before(expires) {
			expires = cert.NotAfter
		}
	}
	left := expires.Sub(c.o.Now())
	issuer := leaf.Issuer.CommonName
	if issuer == "" && len(leaf.Issuer.Organization) > 0 {
		issuer = leaf.Issuer.Organization[0]
	}
	what := fmt.Sprintf("valid for %s, issued by %q, %s", c.host, issuer, tls.VersionName(st.Version))
	if left < ExpiryWarning {
		c.add(name, Warn, "%s, but expires in %s (%s): renew it now; the catalogue refuses an expired certificate", what, days(left), expires.UTC().Format("2006-01-02 15:04 UTC"))
	} else {
		c.add(name, OK, "%s, until %s (%s)", what, expires.UTC().Format("2006-01-02"), days(left))
	}
	return true
}

func days(d time.Duration) string {
	switch n := int(d / (24 * time.Hour)); {
	case d < 24*time.Hour:
		return d.Round(time.Minute).String()
	case n == 1:
		return "1 day"
	default:
		return fmt.Sprintf("%d days", n)
	}
}

// tlsFailure classifies a failed handshake.
func (c *checker) tlsFailure(name string, err error) bool {
	var (
		unknown  x509.UnknownAuthorityError
		hostErr  x509.HostnameError
		invalid  x509.CertificateInvalidError
		recErr   tls.RecordHeaderError
		verifErr *tls.CertificateVerificationError
	)
	switch {
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return c.fail(name, BadCertificate, "bad certificate: %s (the certificate is expired or not yet valid): renew it", invalid.Detail)
	case errors.As(err, &unknown):
		issuer := ""
		if unknown.Cert != nil {
			issuer = fmt.Sprintf(" (issued by %q)", unknown.Cert.Issuer.CommonName)
		}
		return c.fail(name, BadCertificate, "bad certificate: signed by an unknown authority%s: serve a certificate from a public CA (Let's Encrypt: RECEIVER_ACME_DOMAINS), with its intermediate certificates", issuer)
	case errors.As(err, &hostErr):
		return c.fail(name, BadCertificate, "bad certificate: not valid for %s (%v): serve a certificate for this name", c.host, hostErr)
	case errors.As(err, &verifErr), errors.As(err, &invalid):
		return c.fail(name, BadCertificate, "bad certificate: %v", err)
	case errors.As(err, &recErr):
		return c.fail(name, NotReceiver, "not the receiver: port %s does not speak TLS (an http:// server?): serve HTTPS there, or fix the URL", c.port)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return c.fail(name, Unreachable, "not reachable: no TLS handshake within %s", c.o.Timeout)
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		return c.fail(name, Unreachable, "not reachable: the connection was closed during the TLS handshake (%v)", err)
	}
	return c.fail(name, BadCertificate, "bad certificate: the TLS handshake failed: %v: is a certificate for %s served?", err, c.host)
}

// reply is what the endpoint answered to one preflight request.
type reply struct {
	code     int
	status   string // "401 Unauthorized"
	ctype    string
	realms   []string // of the Basic challenges of WWW-Authenticate
	location string
	body     []byte // its first 64 KiB
	took     time.Duration
}

// challenged says whether r is the receiver's answer to a request without
// credentials: 401 with a Basic challenge of the receiver's realm.
func (r reply) challenged() bool {
	if r.code != http.StatusUnauthorized {
		return false
	}
	for _, realm := range r.realms {
		if realm == wire.Realm {
			return true
		}
	}
	return false
}

// realm says which Basic realm r asked for, for a message.
func (r reply) realm() string {
	if len(r.realms) == 0 {
		return "no Basic realm"
	}
	return fmt.Sprintf("realm %q", r.realms[0])
}

// notSent ends every message about an endpoint that did not answer as the
// receiver: the operator learns that the password did not leak there.
const notSent = "the credentials were not sent to it"

// webhook asks the endpoint twice. First without the credentials: only
// an endpoint answering as the receiver does (401 with its Basic realm)
// gets them, in a second request, so a typo in the host name does not
// hand the password to whoever holds that name. The realm is public: this
// stops mistakes, not an impostor who copies it.
func (c *checker) webhook(ctx context.Context) bool {
	const name = "webhook"
	addr := c.addr
	tr := &http.Transport{
		// The address checked: the same server, not another of the name's,
		// for both requests.
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
		TLSClientConfig:   c.tlsConfig(),
		DisableKeepAlives: true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{
		Transport: tr,
		Timeout:   c.o.Timeout,
		// A redirect is reported, never followed: not with the
		// credentials, and not by the probe either (its answer is judged
		// as it is).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}

	probe, err := c.post(ctx, client, false)
	if err != nil {
		return c.requestFailure(name, err)
	}
	if !probe.challenged() {
		return c.notChallenged(name, probe)
	}
	if c.o.Username == "" && c.o.Password == "" {
		// Nothing to check the credentials with: the receiver's own
		// challenge still says the URL is right.
		c.add(name, Warn, "the receiver answers at this URL (401, realm %q); the credentials were not checked: none were given", wire.Realm)
		return true
	}

	r, err := c.post(ctx, client, true)
	if err != nil {
		return c.requestFailure(name, err)
	}
	switch r.code {
	case http.StatusOK:
		var a wire.Answer
		if strings.HasPrefix(r.ctype, "application/json") && json.Unmarshal(r.body, &a) == nil && a.Preflight == "ok" && a.Service == wire.Service {
			version := ""
			if a.Version != "" {
				version = " (version " + a.Version + ")"
			}
			c.add(name, OK, "the receiver%s accepts the credentials (%s in %s)", version, r.status, r.took)
			return true
		}
		return c.fail(name, NotReceiver, "not the receiver: POST %s answered %s with %s: something else answers at this URL (a proxy's page? another service?): check the URL's host and path (RECEIVER_PATH)", c.o.Endpoint, r.status, describe(r.ctype, r.body))
	case http.StatusUnauthorized:
		if r.challenged() {
			return c.fail(name, WrongCredentials, "wrong credentials: the receiver refuses the user and password (401): use the receiver's RECEIVER_USERNAME and RECEIVER_PASSWORD (or a line of its RECEIVER_HTPASSWD_FILE)")
		}
		return c.fail(name, NotReceiver, "not the receiver: POST %s answered 401 with %s, not the receiver's %q: another server (a proxy's own login?) asks for credentials", c.o.Endpoint, r.realm(), wire.Realm)
	case http.StatusTooManyRequests:
		return c.fail(name, WrongCredentials, "wrong credentials, probably: 429: the receiver limits failed logins per address (RECEIVER_AUTH_FAILURE_LIMIT a minute) and correct credentials always pass: check them, then retry in a minute")
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return c.fail(name, Unreachable, "not reachable: POST %s answered %s: the receiver (or the proxy in front of it, which cannot reach it) is not serving: check that the receiver runs and is ready", c.o.Endpoint, r.status)
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return c.fail(name, NotReceiver, "not the receiver: POST %s redirects (%s) to %s: give the URL the receiver answers at (a redirect is not followed with the credentials, and the catalogue may not follow one)", c.o.Endpoint, r.status, r.location)
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return c.fail(name, NotReceiver, "not the receiver: POST %s answered %s: check the URL's path (the receiver's RECEIVER_PATH, /notifications by default) and that the host forwards it to the receiver", c.o.Endpoint, r.status)
	}
	return c.fail(name, NotReceiver, "not the receiver (or one older than the preflight check): POST %s answered %s with %s", c.o.Endpoint, r.status, describe(r.ctype, r.body))
}

// notChallenged fails the check for an endpoint whose answer to the
// request without credentials was not the receiver's challenge, naming
// what it answered; the credentials were not sent.
func (c *checker) notChallenged(name string, r reply) bool {
	got := fmt.Sprintf("POST %s without credentials answered %s (%s), not the receiver's 401 with Basic realm %q: %s", c.o.Endpoint, r.status, r.realm(), wire.Realm, notSent)
	switch r.code {
	case http.StatusTooManyRequests:
		// The receiver answers 429, without a challenge, to an address
		// over its limit of failed logins, a request without credentials
		// included.
		return c.fail(name, WrongCredentials, "wrong credentials, probably: %s. The receiver limits failed logins per address (RECEIVER_AUTH_FAILURE_LIMIT a minute) and answers 429 to any request from an address over it: check the credentials, then retry in a minute", got)
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return c.fail(name, Unreachable, "not reachable: %s. The receiver (or the proxy in front of it, which cannot reach it) is not serving: check that the receiver runs and is ready", got)
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return c.fail(name, NotReceiver, "not the receiver: %s; it redirects to %s (never followed): give the URL the receiver answers at", got, r.location)
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return c.fail(name, NotReceiver, "not the receiver: %s. Check the URL's host and path (the receiver's RECEIVER_PATH, /notifications by default) and that the host forwards it to the receiver", got)
	case http.StatusUnauthorized:
		return c.fail(name, NotReceiver, "not the receiver: %s. Another server (a proxy's own login?) asks for credentials: check the URL's host", got)
	}
	return c.fail(name, NotReceiver, "not the receiver: %s. It answered with %s: something else answers at this URL (a typo in the host? a proxy's page?): check the URL's host and path (RECEIVER_PATH)", got, describe(r.ctype, r.body))
}

// post sends the preflight request, with the credentials or without, and
// reads the answer; each request is bounded by the timeout.
func (c *checker) post(ctx context.Context, client *http.Client, credentials bool) (reply, error) {
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.o.Endpoint, http.NoBody)
	if err != nil {
		return reply{}, fmt.Errorf("preflight request: %w", err)
	}
	if credentials {
		req.SetBasicAuth(c.o.Username, c.o.Password)
	}
	req.Header.Set(wire.Header, "1")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "cdse-jetstream-receiver-preflight")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return reply{
		code:     resp.StatusCode,
		status:   fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode)),
		ctype:    resp.Header.Get("Content-Type"),
		realms:   basicRealms(resp.Header.Values("WWW-Authenticate")),
		location: resp.Header.Get("Location"),
		body:     body,
		took:     time.Since(start).Round(time.Millisecond),
	}, nil
}

// requestFailure classifies a preflight request that got no answer.
func (c *checker) requestFailure(name string, err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return c.fail(name, Unreachable, "not reachable: no answer to the preflight request within %s", c.o.Timeout)
	}
	var verifErr *tls.CertificateVerificationError
	if errors.As(err, &verifErr) {
		return c.tlsFailure(name, err)
	}
	return c.fail(name, Unreachable, "not reachable: the preflight request failed: %v", err)
}

// describe says what a body is, briefly: its type and its start.
func describe(ctype string, body []byte) string {
	if ctype == "" {
		ctype = "no Content-Type"
	}
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) == 0 {
		return ctype + ", empty"
	}
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return fmt.Sprintf("%s: %q", ctype, s)
}

// basicRealms are the realms of the Basic challenges of WWW-Authenticate
// headers (RFC 7235; a header may hold several challenges).
func basicRealms(headers []string) []string {
	var out []string
	for _, h := range headers {
		rest := h
		for {
			i := strings.Index(strings.ToLower(rest), "basic")
			if i < 0 {
				break
			}
			// "basic" as a scheme: at the start or after a comma/space.
			if i > 0 && !strings.ContainsRune(" ,", rune(rest[i-1])) {
				rest = rest[i+5:]
				continue
			}
			rest = rest[i+5:]
			params := strings.TrimLeft(rest, " ")
			if r, ok := param(params, "realm"); ok {
				out = append(out, r)
			}
		}
	}
	return out
}

// param finds name=value or name="value" in an auth-param list.
func param(s, name string) (string, bool) {
	for s != "" {
		s = strings.TrimLeft(s, " ,")
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return "", false
		}
		key := strings.TrimSpace(s[:eq])
		s = strings.TrimLeft(s[eq+1:], " ")
		var val string
		if strings.HasPrefix(s, `"`) {
			var b strings.Builder
			i := 1
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				b.WriteByte(s[i])
			}
			val, s = b.String(), s[min(i+1, len(s)):]
		} else {
			end := strings.IndexAny(s, ", ")
			if end < 0 {
				end = len(s)
			}
			val, s = s[:end], s[end:]
		}
		if strings.EqualFold(key, name) {
			return val, true
		}
	}
	return "", false
}
