package app

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/testcert"
)

// writeCert writes a self-signed certificate for 127.0.0.1 (valid for an
// hour) and returns the pool that trusts it.
func writeCert(t *testing.T, certFile, keyFile string, serial int64) *x509.CertPool {
	t.Helper()
	return testcert.Write(t, certFile, keyFile, serial, time.Now().Add(time.Hour))
}

func TestTLSServeAndRotate(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	pool := writeCert(t, certFile, keyFile, 1)
	c := testConfig(t, t.TempDir())
	c.TLSCertFile, c.TLSKeyFile = certFile, keyFile
	a, _ := startApp(t, c)
	url := "https://" + a.WebhookAddr() + c.Path
	body := fixtures.Notification(t, "created-s2.json")

	post := func(pool *x509.CertPool, minV, maxV uint16) (*http.Response, error) {
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: minV, MaxVersion: maxV}}}
		defer client.CloseIdleConnections()
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.SetBasicAuth(c.Username, c.Password)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}
	resp, err := post(pool, tls.VersionTLS12, 0)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("HTTPS post: %v %v", resp, err)
	}
	if resp.TLS.PeerCertificates[0].SerialNumber.Int64() != 1 {
		t.Error("unexpected certificate")
	}
	if _, err := post(pool, tls.VersionTLS10, tls.VersionTLS11); err == nil {
		t.Error("TLS 1.1 accepted")
	}
	// Plain HTTP to the TLS port never reaches the handler.
	if resp, err := http.Post("http://"+a.WebhookAddr()+c.Path, "application/json", bytes.NewReader(body)); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to the TLS port: %d", resp.StatusCode)
		}
	}

	// Rotation: new files, new serial; picked up without a restart.
	time.Sleep(1100 * time.Millisecond) // the files' mtime must differ, and the reloader looks once a second
	pool2 := writeCert(t, certFile, keyFile, 2)
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := post(pool2, tls.VersionTLS12, 0)
		if err == nil && resp.TLS.PeerCertificates[0].SerialNumber.Int64() == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rotated certificate not served: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestTLSConfigValidation(t *testing.T) {
	c := validConfig()
	c.TLSCertFile = "/x/tls.crt"
	if err := c.Validate(); err == nil {
		t.Error("a certificate without a key accepted")
	}
}
