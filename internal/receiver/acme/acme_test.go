package acme_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/pebbletest"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	xacme "golang.org/x/crypto/acme"

	"github.com/cdse-jetstream/receiver/internal/receiver/acme"
	"github.com/cdse-jetstream/receiver/internal/receiver/acmerules"
)

// TestDefaultDirectory: the configuration's default directory (a leaf's
// copy of it) is the ACME library's Let's Encrypt URL.
func TestDefaultDirectory(t *testing.T) {
	if acmerules.LetsEncrypt != xacme.LetsEncryptURL {
		t.Errorf("acmerules.LetsEncrypt %q, the library's %q", acmerules.LetsEncrypt, xacme.LetsEncryptURL)
	}
}

func TestNewRefuses(t *testing.T) {
	log, _ := logtest.NewNullLogger()
	dir := t.TempDir()
	for name, o := range map[string]acme.Options{
		"no domains":     {CacheDir: dir},
		"bad domain":     {Domains: []string{"*.example.org"}, CacheDir: dir},
		"no cache":       {Domains: []string{"hooks.example.org"}},
		"http directory": {Domains: []string{"hooks.example.org"}, CacheDir: dir, Directory: "http://ca.example/dir"},
		"no CA file":     {Domains: []string{"hooks.example.org"}, CacheDir: dir, CAFile: filepath.Join(dir, "missing.pem")},
		"negative":       {Domains: []string{"hooks.example.org"}, CacheDir: dir, RenewBefore: -time.Hour},
	} {
		if _, err := acme.New(o, log); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The cache directory is the receiver's only: created 0700, the
// directory URL's subdirectory made 0700 and its files 0600 if they were
// not.
func TestCacheDirPermissions(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	top := filepath.Join(t.TempDir(), "a", "acme")
	o := acme.Options{Domains: []string{"hooks.example.org"}, CacheDir: top}
	if _, err := acme.New(o, log); err != nil {
		t.Fatal(err)
	}
	checkModes(t, top)
	entries, err := os.ReadDir(top)
	if err != nil || len(entries) != 1 || entries[0].Name() != "acme-v02.api.letsencrypt.org_directory" {
		t.Fatalf("the cache directory holds %v (%v), want Let's Encrypt's subdirectory", entries, err)
	}
	sub := filepath.Join(top, entries[0].Name())
	if err := os.Chmod(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "hooks.example.org"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := acme.New(o, log); err != nil {
		t.Fatal(err)
	}
	checkModes(t, top)
	if n := len(hook.AllEntries()); n != 2 {
		t.Errorf("%d warnings, want 2 (the directory, the file)", n)
	}
	// Another CA, another subdirectory.
	o.Directory = "https://acme-staging-v02.api.letsencrypt.org/directory"
	if _, err := acme.New(o, log); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(top); len(entries) != 2 {
		t.Errorf("the cache directory holds %v, want a subdirectory per CA", entries)
	}
}

// checkModes fails unless dir is 0700 and every file in it 0600.
func checkModes(t *testing.T, dir string) (files []string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir() && info.Mode().Perm() != 0o700:
			t.Errorf("directory %s is %o, want 700", p, info.Mode().Perm())
		case !d.IsDir() && info.Mode().Perm() != 0o600:
			t.Errorf("file %s is %o, want 600", p, info.Mode().Perm())
		}
		if !d.IsDir() {
			files = append(files, d.Name())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// The plain-HTTP port redirects to https only for the configured domains,
// keeping the path and query and dropping the port; any other Host
// (another name, an IP address, none) gets 421 with a JSON error and no
// Location. Challenges go to autocert, which refuses another host's.
func TestHTTPHandlerRedirects(t *testing.T) {
	log, _ := logtest.NewNullLogger()
	m, err := acme.New(acme.Options{Domains: []string{"hooks.example.org", "Second.Example.org"}, CacheDir: t.TempDir()}, log)
	if err != nil {
		t.Fatal(err)
	}
	const misdirected = `{"error":"misdirected_request"`
	for _, fallback := range []struct {
		name string
		h    http.Handler
	}{
		{"nil fallback", nil},
		// A fallback of the caller's own is not handed other hosts either.
		{"a fallback", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://"+r.Host+r.URL.RequestURI(), http.StatusFound)
		})},
	} {
		h := m.HTTPHandler(fallback.h)
		for _, c := range []struct {
			method, target, host string // host: the Host header, if not target's
			code                 int
			location             string
			body                 string // the start of the body
			custom               bool   // fallback's answer differs: check only that it got it
		}{
			{"GET", "http://hooks.example.org/notifications?x=1&y=%2F", "", http.StatusFound, "https://hooks.example.org/notifications?x=1&y=%2F", "", true},
			{"GET", "http://hooks.example.org:80/", "", http.StatusFound, "https://hooks.example.org/", "", true},
			{"GET", "http://hooks.example.org:8080/a/b", "", http.StatusFound, "https://hooks.example.org/a/b", "", true},
			{"HEAD", "http://HOOKS.Example.ORG./x", "", http.StatusFound, "https://hooks.example.org/x", "", true},
			{"GET", "http://second.example.org//evil.example/x", "", http.StatusFound, "https://second.example.org//evil.example/x", "", true},
			{"POST", "http://hooks.example.org/notifications", "", http.StatusBadRequest, "", `{"error":"https_required"`, true},
			// Not ours: no redirect.
			{"GET", "http://evil.example/", "", http.StatusMisdirectedRequest, "", misdirected, false},
			{"GET", "http://evil.example:80/notifications?x=1", "", http.StatusMisdirectedRequest, "", misdirected, false},
			{"GET", "http://hooks.example.org.evil.example/", "", http.StatusMisdirectedRequest, "", misdirected, false},
			{"GET", "http://203.0.113.7/", "", http.StatusMisdirectedRequest, "", misdirected, false},
			{"GET", "http://203.0.113.7:80/", "", http.StatusMisdirectedRequest, "", misdirected, false},
			{"GET", "http://[2001:db8::1]:80/", "", http.StatusMisdirectedRequest, "", misdirected, false},
			{"GET", "http://hooks.example.org/", "-", http.StatusMisdirectedRequest, "", misdirected, false}, // no Host
			{"POST", "http://evil.example/notifications", "", http.StatusMisdirectedRequest, "", misdirected, false},
			// Challenges: autocert's. One nobody asked for; another host's
			// is refused.
			{"GET", "http://hooks.example.org/.well-known/acme-challenge/nothing", "", http.StatusNotFound, "", "", false},
			{"GET", "http://hooks.example.org:5002/.well-known/acme-challenge/nothing", "", http.StatusNotFound, "", "", false},
			{"GET", "http://other.example.org/.well-known/acme-challenge/nothing", "", http.StatusForbidden, "", "", false},
		} {
			t.Run(fallback.name+" "+c.method+" "+c.target+" "+c.host, func(t *testing.T) {
				r := httptest.NewRequest(c.method, c.target, nil)
				switch c.host {
				case "-":
					r.Host = ""
				case "":
				default:
					r.Host = c.host
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				loc := w.Header().Get("Location")
				if fallback.h != nil && c.custom {
					if w.Code != http.StatusFound || !strings.HasPrefix(loc, "https://") {
						t.Errorf("%d %q: the fallback did not get it", w.Code, loc)
					}
					return
				}
				if w.Code != c.code || loc != c.location || !strings.HasPrefix(w.Body.String(), c.body) {
					t.Errorf("%d %q %q, want %d %q %q", w.Code, loc, w.Body.String(), c.code, c.location, c.body)
				}
				if c.body != "" && w.Header().Get("Content-Type") != "application/json" {
					t.Errorf("Content-Type %q", w.Header().Get("Content-Type"))
				}
			})
		}
	}
}

// A CA that never answers: Obtain returns when its context ends, and
// the requests under way are cut.
func TestObtainHonoursContext(t *testing.T) {
	release := make(chan struct{})
	ca := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer ca.Close()
	defer close(release)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	log, _ := logtest.NewNullLogger()
	m, err := acme.New(acme.Options{Domains: []string{"hooks.example.org"}, CacheDir: t.TempDir(), Directory: ca.URL + "/dir", CAFile: caFile}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = m.Obtain(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Obtain: %v, want the deadline", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Obtain returned after %s", d)
	}
	if !m.NotAfter().IsZero() {
		t.Errorf("NotAfter %s without a certificate", m.NotAfter())
	}
	// A CA that is not there: an error, at once.
	m2, err := acme.New(acme.Options{Domains: []string{"hooks.example.org"}, CacheDir: t.TempDir(), Directory: fmt.Sprintf("https://127.0.0.1:%d/dir", natstest.FreePort(t)), CAFile: caFile}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if err := m2.Obtain(context.Background()); err == nil || !strings.Contains(err.Error(), "hooks.example.org") {
		t.Errorf("Obtain from no CA: %v", err)
	}
}

// newManager makes a Manager for pebble p with the webhook's TLS port
// serving it.
func newManager(t *testing.T, p *pebbletest.CA, o acme.Options) (*acme.Manager, *logtest.Hook) {
	t.Helper()
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	o.Directory, o.CAFile = p.Directory, p.CAFile
	m, err := acme.New(o, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	p.ServeTLS(m.TLSConfig())
	return m, hook
}

// served is the certificate the TLS port serves for domain, to a client
// that verifies it against pebble's root and the name.
func served(t *testing.T, p *pebbletest.CA, domain string) *x509.Certificate {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", p.TLSAddr, &tls.Config{ServerName: domain, RootCAs: p.Root, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatalf("handshake for %s: %v", domain, err)
	}
	defer c.Close()
	st := c.ConnectionState()
	if st.NegotiatedProtocol != "http/1.1" {
		t.Errorf("ALPN %q, want http/1.1", st.NegotiatedProtocol)
	}
	if st.Version < tls.VersionTLS12 {
		t.Errorf("TLS version %x", st.Version)
	}
	return st.PeerCertificates[0]
}

// cached is the certificate the cache directory holds for domain (in the
// CA's subdirectory: there must be one).
func cached(t *testing.T, dir, domain string) *x509.Certificate {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*", domain))
	if len(files) != 1 {
		t.Fatalf("%d cache files of %s: %v", len(files), domain, files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	for {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			t.Fatalf("no certificate in the cache file of %s", domain)
		}
		if b.Type == "CERTIFICATE" {
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
}

// Issuance by TLS-ALPN-01 on the webhook's port, validated for real by
// pebble; the handshake of a verifying client; the cache's modes; then a
// restart on the same cache that serves the same certificate without a
// new order.
func TestIssueAndRestart(t *testing.T) {
	p := pebbletest.Start(t, pebbletest.Options{Validity: 90 * 24 * time.Hour})
	const domain = "hooks.receiver.test"
	cache := filepath.Join(t.TempDir(), "acme")
	opts := acme.Options{Domains: []string{domain}, Email: "ops@receiver.test", CacheDir: cache}

	m, hook := newManager(t, p, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.Obtain(ctx); err != nil {
		t.Fatal(err)
	}
	if n := p.Orders(); n != 1 {
		t.Errorf("%d orders for one certificate", n)
	}
	leaf := served(t, p, domain)
	if len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != domain {
		t.Errorf("certificate for %v", leaf.DNSNames)
	}
	if !m.NotAfter().Equal(leaf.NotAfter) {
		t.Errorf("NotAfter %s, the certificate's %s", m.NotAfter(), leaf.NotAfter)
	}
	if c := cached(t, cache, domain); c.SerialNumber.Cmp(leaf.SerialNumber) != 0 {
		t.Errorf("the cache holds serial %x, %x is served", c.SerialNumber, leaf.SerialNumber)
	}
	files := checkModes(t, cache)
	for _, want := range []string{"acme_account+key", domain} {
		found := false
		for _, f := range files {
			found = found || f == want
		}
		if !found {
			t.Errorf("the cache has no %s: %v", want, files)
		}
	}
	if !logged(hook, "ACME certificate issued and stored") || !logged(hook, "ACME certificate in force") {
		t.Errorf("log lines missing: %v", messages(hook))
	}
	// Another name is refused, not ordered.
	d := &net.Dialer{Timeout: 5 * time.Second}
	if c, err := tls.DialWithDialer(d, "tcp", p.TLSAddr, &tls.Config{ServerName: "other.receiver.test", RootCAs: p.Root}); err == nil {
		c.Close()
		t.Error("a handshake for another name succeeded")
	}
	if n := p.Orders(); n != 1 {
		t.Errorf("%d orders after a handshake for another name", n)
	}
	m.Close()

	// The restart.
	m2, _ := newManager(t, p, opts)
	if err := m2.Obtain(ctx); err != nil {
		t.Fatal(err)
	}
	if n := p.Orders(); n != 1 {
		t.Errorf("the restart ordered: %d orders", n)
	}
	again := served(t, p, domain)
	if again.SerialNumber.Cmp(leaf.SerialNumber) != 0 {
		t.Errorf("after the restart serial %x, before %x", again.SerialNumber, leaf.SerialNumber)
	}
	if !m2.NotAfter().Equal(leaf.NotAfter) {
		t.Errorf("NotAfter after the restart %s, want %s", m2.NotAfter(), leaf.NotAfter)
	}
	checkModes(t, cache)
	m2.Close()

	// Another directory URL (the same pebble by another name) is another
	// CA to the cache: a new order, not the other's certificate.
	other := opts
	other.Directory, other.CAFile = strings.Replace(p.Directory, "127.0.0.1", "localhost", 1), p.CAFile
	log, _ := logtest.NewNullLogger()
	m3, err := acme.New(other, log)
	if err != nil {
		t.Fatal(err)
	}
	defer m3.Close()
	p.ServeTLS(m3.TLSConfig())
	if err := m3.Obtain(ctx); err != nil {
		t.Fatal(err)
	}
	if n := p.Orders(); n != 2 {
		t.Errorf("%d orders after changing the directory URL, want 2", n)
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 2 {
		t.Errorf("the cache holds %v, want a subdirectory per directory URL", entries)
	}
}

// With the webhook's port not answering the challenge, the CA validates
// by HTTP-01 on the plain-HTTP port.
func TestHTTP01(t *testing.T) {
	p := pebbletest.Start(t, pebbletest.Options{Validity: 90 * 24 * time.Hour})
	const domain = "web.receiver.test"
	m, _ := newManager(t, p, acme.Options{Domains: []string{domain}, CacheDir: t.TempDir()})
	p.ServeTLS(nil) // TLS-ALPN-01 fails
	p.ServeHTTP(m.HTTPHandler(nil))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.Obtain(ctx); err != nil {
		t.Fatal(err)
	}
	if n := p.Orders(); n != 2 {
		t.Errorf("%d orders, want 2 (TLS-ALPN-01 failed, then HTTP-01)", n)
	}
	p.ServeTLS(m.TLSConfig())
	if leaf := served(t, p, domain); leaf.DNSNames[0] != domain {
		t.Errorf("certificate for %v", leaf.DNSNames)
	}
}

// A certificate nearing its expiry (RenewBefore beyond its whole
// lifetime) is renewed by itself: a new serial is served and cached, and
// NotAfter follows. After Close nothing more is ordered.
func TestRenewal(t *testing.T) {
	p := pebbletest.Start(t, pebbletest.Options{Validity: time.Hour})
	const domain = "renew.receiver.test"
	cache := filepath.Join(t.TempDir(), "acme")
	m, hook := newManager(t, p, acme.Options{Domains: []string{domain}, CacheDir: cache, RenewBefore: 2 * time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.Obtain(ctx); err != nil {
		t.Fatal(err)
	}
	first := served(t, p, domain)
	deadline := time.Now().Add(15 * time.Second)
	var renewed *x509.Certificate
	for renewed == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no renewal after 15 s (%d orders)", p.Orders())
		}
		time.Sleep(100 * time.Millisecond)
		if c := served(t, p, domain); c.SerialNumber.Cmp(first.SerialNumber) != 0 {
			renewed = c
		}
	}
	// (X.509 times are in seconds: a renewal within the second has the
	// same NotAfter.)
	if renewed.NotAfter.Before(first.NotAfter) {
		t.Errorf("renewed NotAfter %s is before the first's %s", renewed.NotAfter, first.NotAfter)
	}
	if !logged(hook, "lower the margin") {
		t.Errorf("no warning of a margin beyond the lifetime: %v", messages(hook))
	}
	m.Close()
	// What is in force is cached (a renewal under way when Close came is
	// written out meanwhile) and counted.
	deadline = time.Now().Add(5 * time.Second)
	for c := cached(t, cache, domain); c.NotAfter.Before(renewed.NotAfter); c = cached(t, cache, domain) {
		if time.Now().After(deadline) {
			t.Fatalf("the cache holds a certificate older than the renewed one")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if m.NotAfter().Before(renewed.NotAfter) {
		t.Errorf("NotAfter %s, before the renewed %s", m.NotAfter(), renewed.NotAfter)
	}
	n := p.Orders()
	if n < 2 {
		t.Errorf("%d orders: no renewal order", n)
	}
	// Nothing to wait for: nothing must happen. Half a second is longer
	// than renewals took above.
	time.Sleep(500 * time.Millisecond)
	if after := p.Orders(); after != n {
		t.Errorf("%d orders after Close, %d at Close", after, n)
	}
	checkModes(t, cache)
}

func logged(h *logtest.Hook, msg string) bool {
	for _, e := range h.AllEntries() {
		if strings.Contains(e.Message, msg) {
			return true
		}
	}
	return false
}

func messages(h *logtest.Hook) []string {
	var out []string
	for _, e := range h.AllEntries() {
		out = append(out, e.Message)
	}
	return out
}

func TestMain(m *testing.M) {
	code := m.Run()
	bins.Cleanup()
	os.Exit(code)
}
