package fetch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
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
		fe, err := New(Options{DownloadURL: tt.download, TrustedHosts: tt.trusted}, staticTokens{}, &FileTarget{dir: t.TempDir()}, nil, nil)
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
	fe, err := New(Options{DownloadURL: "http://127.0.0.1:8080/odata/v1", TrustedHosts: []string{"localhost:9000"}}, staticTokens{}, &FileTarget{dir: t.TempDir()}, nil, nil)
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
		if _, err := New(Options{DownloadURL: "https://d.org/odata/v1", TrustedHosts: []string{e}}, staticTokens{}, &FileTarget{dir: t.TempDir()}, nil, nil); err == nil {
			t.Errorf("trusted host %q accepted", e)
		}
	}
}

// TestSafeNames: product names of [A-Za-z0-9._-], 1 to 200 bytes; what
// would look like another name or not fit a file system is refused with
// its reason, before any request.
func TestSafeNames(t *testing.T) {
	tests := []struct {
		name, key string
		why       string // "" accepted; else a part of the error
	}{
		{"S2B_MSIL2A_20241115T103319_N0511_R108_T32TQM_20241115T123456.SAFE", "SENTINEL-2/S2MSI2A/2024/11/15/S2B_MSIL2A_20241115T103319_N0511_R108_T32TQM_20241115T123456.SAFE.zip", ""},
		{"S1A_IW_GRDH_1SDV_20241115T053015_20241115T053040_056547_06EF4C_1A2B.SAFE", "S1A_IW_GRDH_1SDV_20241115T053015_20241115T053040_056547_06EF4C_1A2B.SAFE.zip", ""},
		{"S5P_OFFL_L2__NO2____20241114T103229_20241114T121359_36729_03_020600_20241116T023505.nc", "x/S5P_OFFL_L2__NO2____20241114T103229_20241114T121359_36729_03_020600_20241116T023505.nc.zip", ""},
		{strings.Repeat("A", 300), strings.Repeat("A", 300) + ".zip", "300 bytes, more than 200"},
		{strings.Repeat("A", 200), strings.Repeat("A", 200) + ".zip", ""},
		{"S2B_MSIL2A\u202eGPJ.SAFE", "k.zip", "U+202E"},     // a right-to-left override
		{"S2B_MSIL2A\u200b_X.SAFE", "k.zip", "U+200B"},      // zero-width space
		{"S2B_MSIL2A_\uff34\uff12.SAFE", "k.zip", "U+FF34"}, // full-width letters
		{"a/../b", "k.zip", "U+002F"},
		{"..", "k.zip", "starts with a dot"},
		{"ok.SAFE", "../ok.SAFE.zip", "starts with a dot"},
		{"ok.SAFE", ".partial/ok.SAFE.zip", "starts with a dot"},
		{"ok.SAFE", "/abs/ok.SAFE.zip", "empty"},
		{"ok.SAFE", "a//ok.SAFE.zip", "empty"},
		{"ok.SAFE", `a\b/ok.SAFE.zip`, "U+005C"},
		{"ok\nSAFE", "k.zip", "U+000A"},
	}
	for _, tt := range tests {
		err := checkName(tt.name, tt.key)
		switch {
		case tt.why == "" && err != nil:
			t.Errorf("%q %q refused: %v", tt.name, tt.key, err)
		case tt.why != "" && (err == nil || !errors.Is(err, ErrBadName) || !strings.Contains(err.Error(), tt.why) || !strings.HasPrefix(err.Error(), "unsafe name: ")):
			t.Errorf("%q %q: %v, want unsafe name: …%s…", tt.name, tt.key, err, tt.why)
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
		if got := Permanent(targetErr(fmt.Errorf("fetch target: %w", tt.err))); got != tt.permanent {
			t.Errorf("%v: permanent %v, want %v", tt.err, got, tt.permanent)
		}
	}
}
