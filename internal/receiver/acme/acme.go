// Package acme gets and renews the webhook's own certificate by ACME (Let's
// Encrypt, or any RFC 8555 CA), so that a receiver on a machine with a
// public name serves HTTPS without a proxy or a certificate of its own. It
// is golang.org/x/crypto/acme/autocert with the receiver's rules: the
// certificate obtained at start (not at the first handshake), TLS 1.2+,
// the TLS-ALPN-01 challenge answered on the webhook's own port and HTTP-01
// on an optional plain-HTTP port, the certificates and the account key
// kept in a directory of the receiver's only (files 0600, directory 0700),
// and the expiry of the certificate in force for the metric.
package acme

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	xacme "golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"

	"github.com/cdse-jetstream/receiver/internal/receiver/acmerules"
)

// requestTimeout bounds each request to the ACME server.
const requestTimeout = 30 * time.Second

// Options configure a Manager.
type Options struct {
	// Domains are the host names to serve certificates for (at least one;
	// acmerules.ValidateDomains). A handshake for another name is refused; one
	// without a name (SNI) gets the first domain's certificate.
	Domains []string
	// Email is the contact the CA warns about problems (optional).
	Email string
	// Directory is the ACME directory URL; "" is Let's Encrypt's
	// production CA. Setting the domains means accepting that CA's terms
	// of service.
	Directory string
	// CAFile is a PEM file of the roots to trust the ACME server with (a
	// private ACME CA); "" trusts the system's roots.
	CAFile string
	// CacheDir keeps the certificates and the account key (required): a
	// restart reuses them instead of ordering again. Each directory URL
	// has a subdirectory of its own (a certificate of Let's Encrypt's
	// staging CA is not served once the production CA is configured).
	// The directories are created 0700 (and made 0700 if they exist); the
	// files in them are 0600.
	CacheDir string
	// RenewBefore is how long before its expiry a certificate is renewed;
	// 0 is the lesser of 30 days and a third of the certificate's lifetime
	// (30 days for Let's Encrypt's 90-day certificates). More than 30 days
	// counts as 30.
	RenewBefore time.Duration
}

// Manager serves the certificates of Options.Domains and renews them.
type Manager struct {
	ac      *autocert.Manager
	domains []string
	cache   *dirCache
	tr      *transport
	log     logrus.FieldLogger

	life  context.Context
	close context.CancelFunc

	obtainMu sync.Mutex

	mu       sync.Mutex
	notAfter map[string]time.Time // by cache key (domain, domain+rsa)
}

// New checks the options and prepares the cache directory; it makes no
// request (Obtain does).
func New(o Options, log logrus.FieldLogger) (*Manager, error) {
	if err := acmerules.ValidateDomains(o.Domains); err != nil {
		return nil, fmt.Errorf("acme domains: %w", err)
	}
	if o.CacheDir == "" {
		return nil, errors.New("acme: a cache directory is required (the certificates and the account key are kept there)")
	}
	if o.RenewBefore < 0 {
		return nil, errors.New("acme: RenewBefore must not be negative")
	}
	if o.Directory == "" {
		o.Directory = acmerules.LetsEncrypt
	}
	if !strings.HasPrefix(o.Directory, "https://") {
		return nil, fmt.Errorf("acme: the directory %q is not an https URL", o.Directory)
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("acme: CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("acme: CA file %s holds no PEM certificate", o.CAFile)
		}
		base.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if o.Email != "" && (!strings.Contains(o.Email, "@") || strings.ContainsAny(o.Email, " ,;:<>\"")) {
		return nil, fmt.Errorf("acme: %q is not an email address", o.Email)
	}
	dir := filepath.Join(o.CacheDir, cacheName(o.Directory))
	if err := prepareDir(o.CacheDir, dir, log); err != nil {
		return nil, err
	}
	life, cancel := context.WithCancel(context.Background())
	m := &Manager{
		log:      log,
		life:     life,
		close:    cancel,
		notAfter: map[string]time.Time{},
	}
	for _, d := range o.Domains {
		m.domains = append(m.domains, strings.ToLower(d))
	}
	m.tr = &transport{base: base, life: life}
	m.cache = &dirCache{dir: autocert.DirCache(dir), stored: m.stored}
	m.ac = &autocert.Manager{
		Prompt:      autocert.AcceptTOS,
		Cache:       m.cache,
		HostPolicy:  autocert.HostWhitelist(m.domains...),
		RenewBefore: o.RenewBefore,
		Email:       o.Email,
		Client: &xacme.Client{
			DirectoryURL: o.Directory,
			UserAgent:    "cdse-jetstream-receiver",
			HTTPClient:   &http.Client{Timeout: requestTimeout, Transport: m.tr},
		},
	}
	return m, nil
}

// cacheName is the subdirectory of a directory URL: its host, port and
// path, in characters safe in a file name.
func cacheName(directory string) string {
	name := strings.TrimPrefix(directory, "https://")
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, name)
}

// prepareDir creates the cache directory (0700) unless it exists, and the
// directory URL's subdirectory in it, which is the Manager's own: it is
// made 0700 and its files 0600 (what autocert.DirCache writes), saying
// so. A cache directory that exists is left as it is: it may be another
// directory's parent (the data directory).
func prepareDir(top, dir string, log logrus.FieldLogger) error {
	if err := os.MkdirAll(top, 0o700); err != nil {
		return fmt.Errorf("acme: cache directory: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("acme: cache directory: %w", err)
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		switch {
		case d.IsDir():
			want = 0o700
		case !info.Mode().IsRegular():
			return nil
		}
		if perm := info.Mode().Perm(); perm != want && (d.IsDir() || perm&0o077 != 0) {
			if err := os.Chmod(p, want); err != nil {
				return err
			}
			log.WithField("path", p).Warnf("ACME cache was mode %o: made %o", perm, want)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("acme: cache directory: %w", err)
	}
	return nil
}

// TLSConfig is the webhook listener's configuration: TLS 1.2 and newer,
// the managed certificates, and the TLS-ALPN-01 challenge answered on the
// same port (acme-tls/1 next to http/1.1; HTTP/1.1 only, as the webhook
// with a certificate file).
func (m *Manager) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: m.getCertificate,
		NextProtos:     []string{"http/1.1", xacme.ALPNProto},
	}
}

// getCertificate is autocert's, with a handshake without a server name
// served the first domain's certificate, and the certificate served
// remembered for NotAfter.
func (m *Manager) getCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if hello.ServerName == "" {
		h := *hello
		h.ServerName = m.domains[0]
		hello = &h
	}
	cert, err := m.ac.GetCertificate(hello)
	if err != nil || cert.Leaf == nil || isChallenge(hello) {
		return cert, err
	}
	key := strings.TrimSuffix(strings.ToLower(hello.ServerName), ".")
	if cert.Leaf.PublicKeyAlgorithm != x509.ECDSA { // RSA, for a client without ECDSA
		key += "+rsa"
	}
	m.mu.Lock()
	m.notAfter[key] = cert.Leaf.NotAfter
	m.mu.Unlock()
	return cert, nil
}

func isChallenge(hello *tls.ClientHelloInfo) bool {
	return len(hello.SupportedProtos) == 1 && hello.SupportedProtos[0] == xacme.ALPNProto
}

// HTTPHandler is the handler of an optional plain-HTTP port (80): it
// answers the CA's HTTP-01 challenges, which lets the CA validate by HTTP
// too (TLS-ALPN-01 on the webhook's port is tried first), and hands every
// other request for one of the domains to fallback; nil redirects GET and
// HEAD to https://<domain><path and query> (port 443) and answers anything
// else 400. A request for any other host — another name, an IP address, no
// Host at all — is answered 421 with a JSON error and no Location, whatever
// fallback is: redirecting to the name a client sent (autocert's own
// fallback does) makes this port an open redirector for any name pointed
// at the machine.
func (m *Manager) HTTPHandler(fallback http.Handler) http.Handler {
	if fallback == nil {
		fallback = http.HandlerFunc(m.redirect)
	}
	h := m.ac.HTTPHandler(fallback)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/acme-challenge/") {
			// The host policy compares names: a challenge request on
			// another port than 80 carries it in Host. autocert refuses
			// a challenge for another host itself (403).
			if host, _, err := net.SplitHostPort(r.Host); err == nil {
				r = r.Clone(r.Context())
				r.Host = host
			}
			h.ServeHTTP(w, r)
			return
		}
		if _, ok := m.domainOf(r.Host); !ok {
			// 421 Misdirected Request (RFC 9110, 15.5.20): this server is
			// not configured to answer for that authority. Not a 404 (the
			// path may well exist for our names) nor a redirect.
			writeError(w, http.StatusMisdirectedRequest, "misdirected_request", "this server answers only for its own domain names")
			return
		}
		fallback.ServeHTTP(w, r)
	})
}

// redirect sends GET and HEAD for a configured domain to the same path and
// query over HTTPS on the default port; the target's host is the
// configured name, never the Host header's text.
func (m *Manager) redirect(w http.ResponseWriter, r *http.Request) {
	domain, ok := m.domainOf(r.Host)
	if !ok { // HTTPHandler checked it; a caller of redirect alone gets the same
		writeError(w, http.StatusMisdirectedRequest, "misdirected_request", "this server answers only for its own domain names")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, http.StatusBadRequest, "https_required", "use HTTPS")
		return
	}
	uri := r.URL.RequestURI()
	if !strings.HasPrefix(uri, "/") { // "*", or an empty path
		uri = "/"
	}
	http.Redirect(w, r, "https://"+domain+uri, http.StatusFound)
}

// domainOf is the configured domain a Host header names, without its port
// and in any case, with or without the trailing dot of a fully qualified
// name.
func (m *Manager) domainOf(host string) (string, bool) {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, d := range m.domains {
		if host == d {
			return d, true
		}
	}
	return "", false
}

// writeError answers a JSON error of the webhook's shape ({"error": a
// stable word, "message": words}).
func writeError(w http.ResponseWriter, status int, code, message string) {
	body, _ := json.Marshal(struct {
		Code    string `json:"error"`
		Message string `json:"message"`
	}{code, message})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// Obtain makes sure every domain has a valid certificate, from the cache
// or ordered from the CA, before the listener serves; renewal then runs by
// itself ahead of expiry. Each request to the CA carries ctx and the
// request timeout; when ctx ends Obtain returns at once. A failed domain
// does not stop the others; the error names each.
func (m *Manager) Obtain(ctx context.Context) error {
	m.obtainMu.Lock()
	defer m.obtainMu.Unlock()
	if m.life.Err() != nil {
		return errClosed
	}
	m.tr.setObtain(ctx)
	defer m.tr.clearObtain()
	var errs []error
	for _, d := range m.domains {
		cert, err := m.obtain(ctx, d)
		if err != nil {
			errs = append(errs, fmt.Errorf("acme: certificate for %s: %w", d, err))
			continue
		}
		m.log.WithFields(logrus.Fields{"domain": d, "serial": cert.Leaf.SerialNumber.Text(16), "not_after": cert.Leaf.NotAfter.UTC().Format(time.RFC3339),
			"issuer": cert.Leaf.Issuer.CommonName}).Info("ACME certificate in force")
	}
	return errors.Join(errs...)
}

func (m *Manager) obtain(ctx context.Context, domain string) (*tls.Certificate, error) {
	type result struct {
		cert *tls.Certificate
		err  error
	}
	done := make(chan result, 1)
	go func() {
		// What a current client offers: an ECDSA certificate.
		hello := &tls.ClientHelloInfo{
			ServerName:        domain,
			SignatureSchemes:  []tls.SignatureScheme{tls.ECDSAWithP256AndSHA256},
			SupportedCurves:   []tls.CurveID{tls.X25519, tls.CurveP256},
			CipherSuites:      []uint16{tls.TLS_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
			SupportedVersions: []uint16{tls.VersionTLS13, tls.VersionTLS12},
		}
		cert, err := m.getCertificate(hello)
		done <- result{cert, err}
	}()
	select {
	case r := <-done:
		if r.err != nil && ctx.Err() != nil {
			// Cut short by ctx, whose end says why better.
			return nil, context.Cause(ctx)
		}
		if r.err == nil && r.cert.Leaf == nil {
			r.err = errors.New("no certificate")
		}
		return r.cert, r.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// NotAfter is the earliest expiry among the certificates in force (one
// per domain); zero before the first one.
func (m *Manager) NotAfter() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	var first time.Time
	for _, t := range m.notAfter {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	return first
}

// Close stops talking to the CA: renewals from now on fail (and would be
// retried by a new Manager), nothing more is written to the cache
// directory once Close returns. The certificates in force are still
// served.
func (m *Manager) Close() error {
	m.close()
	m.cache.shut()
	return nil
}

var errClosed = errors.New("acme: manager closed")

// stored hears of a certificate autocert wrote to the cache: a new one or
// a renewal, in force from now on.
func (m *Manager) stored(key string, data []byte) {
	leaf := leafOf(data)
	if leaf == nil {
		return
	}
	m.mu.Lock()
	m.notAfter[key] = leaf.NotAfter
	m.mu.Unlock()
	lifetime := leaf.NotAfter.Sub(leaf.NotBefore)
	entry := m.log.WithFields(logrus.Fields{"domain": strings.TrimSuffix(key, "+rsa"), "serial": leaf.SerialNumber.Text(16),
		"not_after": leaf.NotAfter.UTC().Format(time.RFC3339), "issuer": leaf.Issuer.CommonName})
	entry.Info("ACME certificate issued and stored")
	if rb := m.ac.RenewBefore; rb > 0 && min(rb, 30*24*time.Hour) >= lifetime {
		entry.Warnf("the certificate's lifetime (%s) is not longer than the renewal margin (%s): it is renewed again at once; lower the margin", lifetime, rb)
	}
}

// leafOf is the first certificate of a cache entry (a key, then the
// chain), or nil.
func leafOf(data []byte) *x509.Certificate {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil
		}
		if b.Type == "CERTIFICATE" {
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil
			}
			return c
		}
	}
}

// dirCache is autocert.DirCache that reports the certificates written and
// stops writing once shut.
type dirCache struct {
	dir    autocert.DirCache
	stored func(key string, data []byte)

	mu     sync.RWMutex
	closed bool
}

// isCertKey says whether a cache key names a domain's certificate (not
// the account key, a challenge token or a challenge certificate).
func isCertKey(key string) bool {
	return !strings.Contains(key, "+") || strings.HasSuffix(key, "+rsa")
}

func (c *dirCache) Get(ctx context.Context, key string) ([]byte, error) {
	return c.dir.Get(ctx, key)
}

func (c *dirCache) Put(ctx context.Context, key string, data []byte) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return errClosed
	}
	if err := c.dir.Put(ctx, key, data); err != nil {
		return err
	}
	if isCertKey(key) {
		c.stored(key, data)
	}
	return nil
}

func (c *dirCache) Delete(ctx context.Context, key string) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return errClosed
	}
	return c.dir.Delete(ctx, key)
}

// shut waits for the writes under way and refuses the next.
func (c *dirCache) shut() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
}

// transport ties every request to the CA to the Manager's life and, while
// Obtain runs, to its context (autocert gives its own requests a
// background context).
type transport struct {
	base http.RoundTripper
	life context.Context

	mu     sync.Mutex
	obtain context.Context
}

func (t *transport) setObtain(ctx context.Context) {
	t.mu.Lock()
	t.obtain = ctx
	t.mu.Unlock()
}

func (t *transport) clearObtain() {
	t.mu.Lock()
	t.obtain = nil
	t.mu.Unlock()
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.life.Err() != nil {
		return nil, errClosed
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	stops := []func() bool{context.AfterFunc(t.life, func() { cancel(errClosed) })}
	t.mu.Lock()
	if o := t.obtain; o != nil {
		stops = append(stops, context.AfterFunc(o, func() { cancel(context.Cause(o)) }))
	}
	t.mu.Unlock()
	release := func() {
		for _, stop := range stops {
			stop()
		}
		cancel(nil)
	}
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		release()
		return nil, err
	}
	resp.Body = &releaseBody{ReadCloser: resp.Body, release: release}
	return resp, nil
}

// releaseBody releases the request's context when the body is closed.
type releaseBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *releaseBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}
