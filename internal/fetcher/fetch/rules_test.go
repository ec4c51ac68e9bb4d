package fetch

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"syscall"
	"testing"

	"github.com/cdse-jetstream/receiver/internal/fetcher/target"
)

// TestMayAuthorize: the token goes to the download URL's own origin and
// to a trusted domain (or subdomain) over HTTPS on the entry's port or
// 443 only; never down from HTTPS to HTTP.
func TestMayAuthorize(t *testing.T) {
	tests := []struct {
		download string
		trusted  []string
		urls     map[string]bool
	}{
		{download: "https://download.dataspace.copernicus.eu/odata/v1", urls: map[string]bool{
			"https://download.dataspace.copernicus.eu/x":      true,
			"https://zipper.dataspace.copernicus.eu/x":        true,
			"https://zipper.dataspace.copernicus.eu:443/x":    true,
			"https://zipper.dataspace.copernicus.eu:8443/x":   false, // another port, maybe another service
			"https://download.dataspace.copernicus.eu:8443/x": false,
			"http://zipper.dataspace.copernicus.eu/x":         false,
			"http://download.dataspace.copernicus.eu/x":       false,
			"https://evil-dataspace.copernicus.eu/x":          false,
			"https://dataspace.copernicus.eu.evil.org/x":      false,
			"https://s3.example.org/bucket/x":                 false,
			"http://localhost:8080/x":                         false, // not trusted
			"https://DOWNLOAD.dataspace.copernicus.eu:443/":   true,
		}},
		{download: "https://download.example.org/odata/v1", trusted: []string{"s3.example.org:9000", "Zipper.Example.org"}, urls: map[string]bool{
			"https://s3.example.org:9000/b/x":     true,
			"https://eu.s3.example.org:9000/b/x":  true,
			"https://s3.example.org/b/x":          false,
			"https://s3.example.org:9001/b/x":     false,
			"https://zipper.example.org/x":        true,
			"https://zipper.example.org:9000/x":   false,
			"https://download.example.org:443/x":  true,
			"https://download.example.org:8443/x": false,
			"http://download.example.org/odata/x": false,
			"https://example.org/x":               false,
		}},
		{download: "http://127.0.0.1:8080/odata/v1", trusted: []string{"localhost:9000"}, urls: map[string]bool{
			"http://127.0.0.1:8080/x": true,
			"http://127.0.0.1:8081/x": false,
			"http://localhost:9000/x": true, // loopback: plain HTTP allowed, on the entry's port
			"http://localhost:9001/x": false,
			"http://localhost/x":      false,
		}},
	}
	for _, tt := range tests {
		fe, err := New(Options{DownloadURL: tt.download, TrustedHosts: tt.trusted}, staticTokens{}, mustFile(t, t.TempDir()), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for u, want := range tt.urls {
			r, _ := http.NewRequest("GET", u, nil)
			if got := fe.mayAuthorize(r.URL); got != want {
				t.Errorf("download %s, trusted %q: %s: %v, want %v", tt.download, tt.trusted, u, got, want)
			}
		}
	}
}

// TestRedirectNeverDowngrades: after an HTTPS hop, an HTTP one carries no
// token, even to a host that would otherwise get it.
func TestRedirectNeverDowngrades(t *testing.T) {
	fe, err := New(Options{DownloadURL: "http://127.0.0.1:8080/odata/v1", TrustedHosts: []string{"localhost:9000"}}, staticTokens{}, mustFile(t, t.TempDir()), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(context.Background(), authKey{}, "Bearer secret")
	for _, tt := range []struct {
		via, to string
		want    bool
	}{
		{"http://127.0.0.1:8080/odata/v1/Products(x)/$value", "http://localhost:9000/x", true},
		{"https://localhost:9443/x", "http://localhost:9000/x", false},
		{"https://localhost:9443/x", "http://127.0.0.1:8080/x", false},
	} {
		via, _ := http.NewRequest("GET", tt.via, nil)
		req, _ := http.NewRequestWithContext(ctx, "GET", tt.to, nil)
		if err := fe.checkRedirect(req, []*http.Request{via}); err != nil {
			t.Fatal(err)
		}
		if got := req.Header.Get("Authorization") != ""; got != tt.want {
			t.Errorf("%s -> %s: token %v, want %v", tt.via, tt.to, got, tt.want)
		}
	}
}

func TestTrustedHostEntries(t *testing.T) {
	for _, e := range []string{"https://x.org", "x.org/path", "x.org:0", "x.org:70000", "x.org:http", "user@x.org"} {
		if _, err := New(Options{DownloadURL: "https://d.org/odata/v1", TrustedHosts: []string{e}}, staticTokens{}, mustFile(t, t.TempDir()), nil, nil); err == nil {
			t.Errorf("trusted host %q accepted", e)
		}
	}
}

// TestTargetErrorsThatCannotSucceed: a name too long for the file system
// and a read-only file system are permanent at once (not retried for half
// an hour); a full disk or a passing I/O error are not.
func TestTargetErrorsThatCannotSucceed(t *testing.T) {
	for _, tt := range []struct {
		err       error
		permanent bool
	}{
		{&os.PathError{Op: "open", Path: "x", Err: syscall.ENAMETOOLONG}, true},
		{&os.PathError{Op: "rename", Path: "x", Err: syscall.EROFS}, true},
		{&os.PathError{Op: "write", Path: "x", Err: syscall.EIO}, false},
		{&os.PathError{Op: "open", Path: "x", Err: syscall.EACCES}, false},
	} {
		if got := Permanent(target.Refused(fmt.Errorf("fetch target: %w", tt.err))); got != tt.permanent {
			t.Errorf("%v: permanent %v, want %v", tt.err, got, tt.permanent)
		}
	}
}
