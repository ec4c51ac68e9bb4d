// Package pebbletest runs the tests' ACME CA: Let's Encrypt's pebble, built
// from the version tools/go.mod pins and run as a process of its own on
// loopback, validating the challenges for real (TLS-ALPN-01 and HTTP-01 on
// ports of the test's choosing, or on swappable servers of its own) with a
// DNS server answering 127.0.0.1 for every name. A counting reverse proxy
// in front of its directory sees every order.
package pebbletest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

var pebbleModule struct {
	once sync.Once
	dir  string
	err  error
}

// buildPebble builds pebble as tools/go.mod pins it (bins.Build: once per
// test process, removed by bins.Cleanup) and finds its module (for its test
// CA and listener certificate).
func buildPebble(t testing.TB) (bin, moduleDir string) {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	tools := filepath.Join(filepath.Dir(here), "..", "..", "..", "tools")
	bin = bins.Build(t, "github.com/letsencrypt/pebble/v2/cmd/pebble", "-C", tools)
	m := &pebbleModule
	m.once.Do(func() {
		cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/letsencrypt/pebble/v2")
		cmd.Dir = tools
		out, err := cmd.Output()
		if err != nil {
			m.err = fmt.Errorf("finding pebble's module: %v", err)
			return
		}
		m.dir = strings.TrimSpace(string(out))
	})
	if m.err != nil {
		t.Fatal(m.err)
	}
	return bin, m.dir
}

// CA is one running test CA and the ports it validates on.
type CA struct {
	Directory string         // the directory URL, through the counting proxy
	CAFile    string         // the roots of the directory's certificate (pebble.minica.pem)
	Root      *x509.CertPool // the root pebble issues under (management /roots/0)

	orders atomic.Int64

	// TLSAddr is where pebble validates TLS-ALPN-01 (its tlsPort): the
	// port of Options.TLSPort, or a server of the harness's own serving
	// with the configuration set by ServeTLS.
	TLSAddr string
	tlsCfg  atomic.Pointer[tls.Config]
	// HTTP-01 is validated on the port served with the handler of ServeHTTP.
	httpH atomic.Pointer[http.Handler]
}

// Orders is how many orders the CA was asked for.
func (p *CA) Orders() int64 { return p.orders.Load() }

// ServeTLS makes the TLS port serve with cfg (nil: every handshake fails).
func (p *CA) ServeTLS(cfg *tls.Config) { p.tlsCfg.Store(cfg) }

// ServeHTTP makes the HTTP port serve h (nil: 404).
func (p *CA) ServeHTTP(h http.Handler) { p.httpH.Store(&h) }

// Options of a test CA.
type Options struct {
	// Validity of the certificates it issues.
	Validity time.Duration
	// TLSPort and HTTPPort are the loopback ports pebble validates
	// TLS-ALPN-01 and HTTP-01 on (a receiver's); 0: servers of the
	// harness's own (ServeTLS, ServeHTTP).
	TLSPort, HTTPPort int
}

// Start runs a pebble and everything around it; all of it stops when the
// test ends.
func Start(t testing.TB, o Options) *CA {
	t.Helper()
	bin, mod := buildPebble(t)
	p := &CA{CAFile: filepath.Join(mod, "test", "certs", "pebble.minica.pem")}
	listenerCert := filepath.Join(mod, "test", "certs", "localhost", "cert.pem")
	listenerKey := filepath.Join(mod, "test", "certs", "localhost", "key.pem")

	// The ports pebble validates on: the test's, or a TLS server with a
	// swappable configuration and an HTTP server with a swappable handler.
	tlsPort, httpPort := o.TLSPort, o.HTTPPort
	p.TLSAddr = fmt.Sprintf("127.0.0.1:%d", tlsPort)
	if tlsPort == 0 {
		tlsLn := listen(t)
		p.TLSAddr = tlsLn.Addr().String()
		tlsPort = port(tlsLn.Addr())
		base := &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			if c := p.tlsCfg.Load(); c != nil {
				return c, nil
			}
			return nil, errors.New("the test serves no TLS now")
		}}
		serve(t, tls.NewListener(tlsLn, base), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "webhook\n") }))
	}
	if httpPort == 0 {
		httpLn := listen(t)
		httpPort = port(httpLn.Addr())
		serve(t, httpLn, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if h := p.httpH.Load(); h != nil && *h != nil {
				(*h).ServeHTTP(w, r)
				return
			}
			http.NotFound(w, r)
		}))
	}
	dns := startDNS(t)

	dir := t.TempDir()
	ports := natstest.FreePorts(t, 2)
	acmeAddr, mgmtAddr := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	var cfg struct {
		Pebble map[string]any `json:"pebble"`
	}
	cfg.Pebble = map[string]any{
		"listenAddress":           acmeAddr,
		"managementListenAddress": mgmtAddr,
		"certificate":             listenerCert,
		"privateKey":              listenerKey,
		"httpPort":                httpPort,
		"tlsPort":                 tlsPort,
		"ocspResponderURL":        "",
		"keyAlgorithm":            "ecdsa",
		"profiles":                map[string]any{"default": map[string]any{"description": "test", "validityPeriod": int(o.Validity / time.Second)}},
	}
	b, _ := json.Marshal(cfg)
	cfgFile := filepath.Join(dir, "pebble.json")
	if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-config", cfgFile, "-dnsserver", dns)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0", "PEBBLE_AUTHZREUSE=0")
	var out bins.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("pebble's output:\n%s", out.String())
		}
	})

	minica, err := os.ReadFile(p.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(minica)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	t.Cleanup(client.CloseIdleConnections)
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := client.Get("https://" + acmeAddr + "/dir")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pebble not up after 15 s: %v\n%s", err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := client.Get("https://" + mgmtAddr + "/roots/0")
	if err != nil {
		t.Fatal(err)
	}
	rootPEM, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	p.Root = x509.NewCertPool()
	if !p.Root.AppendCertsFromPEM(rootPEM) {
		t.Fatalf("pebble's /roots/0 is not PEM: %q", rootPEM)
	}

	// The counting proxy, with the same certificate as pebble's listener.
	target, _ := url.Parse("https://" + acmeAddr)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host // pebble's URLs then point at the proxy
		},
		Transport: client.Transport,
	}
	counting := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/order-plz" {
			p.orders.Add(1)
		}
		proxy.ServeHTTP(w, r)
	})
	pair, err := tls.LoadX509KeyPair(listenerCert, listenerKey)
	if err != nil {
		t.Fatal(err)
	}
	proxyLn := listen(t)
	serve(t, tls.NewListener(proxyLn, &tls.Config{Certificates: []tls.Certificate{pair}}), counting)
	p.Directory = "https://" + proxyLn.Addr().String() + "/dir"
	return p
}

func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func port(a net.Addr) int { return a.(*net.TCPAddr).Port }

// serve serves h on ln until the test ends.
func serve(t testing.TB, ln net.Listener, h http.Handler) {
	t.Helper()
	// Failed handshakes (a challenge refused on purpose) are not news.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		srv.Close()
		<-done
	})
}

// startDNS is a DNS server over TCP (pebble's resolver speaks TCP) that
// answers every A question with 127.0.0.1 and every other with no
// record.
func startDNS(t testing.TB) string {
	t.Helper()
	ln := listen(t)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				for {
					c.SetDeadline(time.Now().Add(10 * time.Second))
					var n uint16
					if binary.Read(c, binary.BigEndian, &n) != nil {
						return
					}
					q := make([]byte, n)
					if _, err := io.ReadFull(c, q); err != nil {
						return
					}
					a := dnsAnswer(q)
					if a == nil {
						return
					}
					binary.Write(c, binary.BigEndian, uint16(len(a)))
					if _, err := c.Write(a); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// dnsAnswer answers a query of one question: A 127.0.0.1 for type A,
// nothing for the others; nil for what it cannot read.
func dnsAnswer(q []byte) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:]) != 1 {
		return nil
	}
	i := 12
	for i < len(q) && q[i] != 0 {
		i += int(q[i]) + 1
	}
	if i+5 > len(q) {
		return nil
	}
	end := i + 5 // the root label, type, class
	qtype := binary.BigEndian.Uint16(q[i+1:])
	var a bytes.Buffer
	a.Write(q[:2])                                          // id
	flags := binary.BigEndian.Uint16(q[2:])&0x7900 | 0x8480 // QR, opcode and RD kept, AA, RA
	binary.Write(&a, binary.BigEndian, flags)
	ancount := uint16(0)
	if qtype == 1 {
		ancount = 1
	}
	binary.Write(&a, binary.BigEndian, []uint16{1, ancount, 0, 0})
	a.Write(q[12:end])
	if qtype == 1 {
		a.Write([]byte{0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1})
	}
	return a.Bytes()
}
