// Package simhosts serves the catalogue simulator on two hosts, as the
// live service answers: the catalogue (and identity provider) on one, the
// download service, which the catalogue's $value redirects to, on another.
// The fetcher's tests and benchmark need them apart: the login token's
// rule is a rule about hosts.
package simhosts

import (
	"net"
	"net/http/httptest"
	"testing"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
)

// Hosts is the simulator and its two servers' addresses.
type Hosts struct {
	Sim *cdsesim.Sim
	// Catalogue is the catalogue host's base, http://127.0.0.1:port (its
	// OData root is Catalogue + "/odata/v1", its token URL Catalogue +
	// cdsesim.TokenPath).
	Catalogue string
	// Download is the download service's OData root on downloadHost.
	Download string
}

// Start makes the simulator of o (its DownloadURL set to the download
// host) and serves it on 127.0.0.1 and on downloadHost ("localhost" for a
// second host name, "127.0.0.1" for the same); both stop with the test.
func Start(t testing.TB, o cdsesim.Options, downloadHost string) *Hosts {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(downloadHost, "0"))
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	o.DownloadURL = "http://" + net.JoinHostPort(downloadHost, port) + "/odata/v1"
	sim := cdsesim.New(o)
	cat := httptest.NewServer(sim.Handler())
	dl := httptest.NewUnstartedServer(sim.Handler())
	dl.Listener.Close()
	dl.Listener = ln
	dl.Start()
	t.Cleanup(func() { cat.Close(); dl.Close(); sim.Close() })
	return &Hosts{Sim: sim, Catalogue: cat.URL, Download: o.DownloadURL}
}
