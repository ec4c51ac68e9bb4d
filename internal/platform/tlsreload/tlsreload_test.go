package tlsreload

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/testkit/testcert"
)

// TestReloader: a rotation is served once the files change and a second has
// passed since the last look; a broken pair leaves the old one in force and
// is reported. The clock and the files' times are set, not waited for.
func TestReloader(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	notAfter := time.Now().Add(time.Hour).Truncate(time.Second)
	testcert.Write(t, certFile, keyFile, 7, notAfter)
	var reported []error
	r, err := New(certFile, keyFile, func(err error) { reported = append(reported, err) })
	if err != nil {
		t.Fatal(err)
	}
	if !r.NotAfter().Equal(notAfter) {
		t.Errorf("NotAfter %s, want %s", r.NotAfter(), notAfter)
	}
	clock := time.Now()
	r.now = func() time.Time { return clock }
	// touched is when the files were last changed, in steps of a minute so
	// that every change is seen whatever the file system's resolution.
	touched := time.Now()
	touch := func() {
		touched = touched.Add(time.Minute)
		for _, f := range []string{certFile, keyFile} {
			if err := os.Chtimes(f, touched, touched); err != nil {
				t.Fatal(err)
			}
		}
	}
	steps := []struct {
		name     string
		change   func()
		advance  time.Duration
		serial   int64
		reported int
	}{
		{"unchanged", nil, time.Second, 7, 0},
		{"a broken certificate keeps the old pair", func() {
			if err := os.WriteFile(certFile, []byte("not a certificate"), 0o600); err != nil {
				t.Fatal(err)
			}
			touch()
		}, time.Second, 7, 1},
		{"a new pair within the second is not looked at", func() {
			testcert.Write(t, certFile, keyFile, 8, notAfter)
			touch()
		}, 0, 7, 1},
		{"a second later it is served", nil, time.Second, 8, 1},
	}
	for _, s := range steps {
		if s.change != nil {
			s.change()
		}
		clock = clock.Add(s.advance)
		cert, err := r.GetCertificate(nil)
		if err != nil || cert == nil {
			t.Fatalf("%s: no certificate served: %v", s.name, err)
		}
		leaf, err := x509.ParseCertificate(cert.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		if got := leaf.SerialNumber.Int64(); got != s.serial {
			t.Errorf("%s: serving serial %d, want %d", s.name, got, s.serial)
		}
		if len(reported) != s.reported {
			t.Errorf("%s: %d reload errors reported, want %d", s.name, len(reported), s.reported)
		}
	}
	if c := r.TLSConfig(); c.MinVersion != tls.VersionTLS12 || c.GetCertificate == nil {
		t.Errorf("TLSConfig: MinVersion %x, GetCertificate set %v", c.MinVersion, c.GetCertificate != nil)
	}
}
