// Package tlsreload serves a TLS certificate from files and re-reads them
// when they change: the webhook's HTTPS without a restart on rotation.
package tlsreload

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// Reloader serves a certificate and key from files and re-reads them
// when they change, so that a rotation (cert-manager renewing a Secret)
// takes effect without a restart. A pair that fails to load leaves the
// previous one in force.
type Reloader struct {
	certFile, keyFile string
	now               func() time.Time

	// onError hears of a pair that failed to load (the old one stays).
	onError func(error)

	mu      sync.Mutex
	cert    *tls.Certificate
	modTime time.Time
	checked time.Time
}

// New loads the pair once; it fails if that does not work. Later failures
// to reload go to onError (nil: ignored).
func New(certFile, keyFile string, onError func(error)) (*Reloader, error) {
	if onError == nil {
		onError = func(error) {}
	}
	r := &Reloader{certFile: certFile, keyFile: keyFile, now: time.Now, onError: onError}
	if err := r.reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// stamp is the newer modification time of the two files.
func (r *Reloader) stamp() (time.Time, error) {
	var newest time.Time
	for _, f := range []string{r.certFile, r.keyFile} {
		st, err := os.Stat(f)
		if err != nil {
			return time.Time{}, err
		}
		if st.ModTime().After(newest) {
			newest = st.ModTime()
		}
	}
	return newest, nil
}

func (r *Reloader) reload() error {
	stamp, err := r.stamp()
	if err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("tls: load %s and %s: %w", r.certFile, r.keyFile, err)
	}
	r.cert, r.modTime = &cert, stamp
	return nil
}

// GetCertificate is tls.Config.GetCertificate. It looks at the files at
// most once a second.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := r.now(); now.Sub(r.checked) >= time.Second {
		r.checked = now
		if stamp, err := r.stamp(); err == nil && !stamp.Equal(r.modTime) {
			// A half-written pair fails to load; the old one stays and the
			// next check tries again.
			if err := r.reload(); err != nil {
				r.onError(err)
			}
		}
	}
	return r.cert, nil
}

// NotAfter is when the certificate in force expires.
func (r *Reloader) NotAfter() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cert == nil || r.cert.Leaf == nil {
		return time.Time{}
	}
	return r.cert.Leaf.NotAfter
}

// TLSConfig is the server configuration: TLS 1.2 and newer, the reloader's
// certificate.
func (r *Reloader) TLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.GetCertificate}
}
