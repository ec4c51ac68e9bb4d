package binary_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/receiver/status"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/pebbletest"
	"github.com/cdse-jetstream/receiver/internal/testkit/scrape"
)

// TestACMEEndToEnd: the receiver with RECEIVER_ACME_DOMAINS gets its
// certificate from a real ACME CA (pebble, validating TLS-ALPN-01 on the
// receiver's own webhook port) before it says it started, serves the
// webhook over HTTPS with it (a client verifying against the CA's root
// and the name stores a notification), reports its expiry, keeps it and
// the account key in the data directory (0600), answers HTTP-01 and
// redirects on its plain-HTTP port, and, restarted, serves the cached
// certificate without a new order.
func TestACMEEndToEnd(t *testing.T) {
	t.Parallel()
	const domain = "hooks.example.org"
	ports := natstest.FreePorts(t, 2)
	ca := pebbletest.Start(t, pebbletest.Options{Validity: 90 * 24 * time.Hour, TLSPort: ports[0], HTTPPort: ports[1]})
	data := t.TempDir()
	env := []string{
		"RECEIVER_ADDR=127.0.0.1:" + strconv.Itoa(ports[0]),
		"RECEIVER_ACME_HTTP_ADDR=127.0.0.1:" + strconv.Itoa(ports[1]),
		"RECEIVER_ACME_DOMAINS=" + domain,
		"RECEIVER_ACME_EMAIL=ops@example.org",
		"RECEIVER_ACME_DIRECTORY=" + ca.Directory,
		"RECEIVER_ACME_CA_FILE=" + ca.CAFile,
	}
	p := startReceiver(t, data, env...)
	orders := ca.Orders()
	if orders != 1 {
		t.Fatalf("%d orders for one domain", orders)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Root, ServerName: domain}}}
	defer client.CloseIdleConnections()
	postTLS := func() {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, "https://"+p.webhook+"/notifications", bytes.NewReader(fixtures.Notification(t, "created-s2.json")))
		req.Header.Set("Content-Type", "application/json")
		req.SetBasicAuth(user, password)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("HTTPS with the ACME certificate: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || resp.TLS == nil || resp.TLS.PeerCertificates[0].DNSNames[0] != domain {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	}
	postTLS()

	// The expiry metric, about 90 days ahead.
	expiry, err := strconv.ParseFloat(scrape.Value(t, "http://"+p.admin, "cdse_receiver_tls_certificate_expiry_timestamp_seconds"), 64)
	if d := time.Until(time.Unix(int64(expiry), 0)); err != nil || d < 89*24*time.Hour || d > 91*24*time.Hour {
		t.Errorf("certificate expiry metric %v: %s from now", expiry, d)
	}
	// /status says the webhook serves TLS (it said false under ACME).
	st, err := status.Fetch(context.Background(), &http.Client{Timeout: 5 * time.Second}, "http://"+p.admin)
	if err != nil || st.Webhook == nil || !st.Webhook.TLS {
		t.Errorf("/status under ACME: %+v, %v", st, err)
	}
	// The cache: files 0600 in directories 0700.
	var files int
	err = filepath.WalkDir(filepath.Join(data, "acme"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, _ := d.Info()
		if want := fs.FileMode(0o600); !d.IsDir() {
			files++
			if info.Mode().Perm() != want {
				t.Errorf("%s is %o", path, info.Mode().Perm())
			}
		} else if info.Mode().Perm() != 0o700 {
			t.Errorf("%s is %o", path, info.Mode().Perm())
		}
		return nil
	})
	if err != nil || files < 2 {
		t.Fatalf("ACME cache: %d files, %v", files, err)
	}
	// The plain-HTTP port redirects to HTTPS.
	noRedirect := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/notifications", ports[1]), nil)
	req.Host = domain
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode/100 != 3 || !strings.HasPrefix(loc, "https://"+domain) {
		t.Errorf("plain HTTP: %d, Location %q", resp.StatusCode, loc)
	}

	// Restarted on the same data directory: the cached certificate, no order.
	p.stop(t)
	p = startReceiver(t, data, env...)
	client.CloseIdleConnections()
	postTLS()
	if got := ca.Orders(); got != orders {
		t.Errorf("the restart ordered again: %d orders, was %d", got, orders)
	}
	if !strings.Contains(p.logs.String(), "ACME certificate in force") {
		t.Errorf("no log line of the certificate in force:\n%s", p.logs.String())
	}
	if _, err := os.Stat(filepath.Join(data, "acme")); err != nil {
		t.Fatal(err)
	}
}
