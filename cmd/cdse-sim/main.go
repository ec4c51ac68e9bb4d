// Command cdse-sim runs the local catalogue simulator (internal/cdse/cdsesim) on
// one port: the identity provider, the OData subscription API, the Products
// listing, the products' downloads ($value) and an admin API to publish
// products and turn the download faults on. With --download-addr a second
// port is the download host, which the first redirects $value to, as the
// live catalogue host does. For demos, tests and developing downstream
// consumers offline.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/platform/buildinfo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Getenv)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, getenv func(string) string) int {
	fs := flag.NewFlagSet("cdse-sim", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8090", "listen address (keep it on loopback: the admin API has no authentication)")
	user := fs.String("user", "demo@example.org", "the account's user name")
	password := fs.String("password", "", "the account's password (a simulator's, not a real secret; SIM_PASSWORD keeps it out of ps; default demo-password)")
	usersFile := fs.String("users", "", "file of user:password lines (instead of --user and --password)")
	maxRunning := fs.Int("max-running", 1, "running subscriptions per user (the live documentation says 1; the interface description 2)")
	rate := fs.Duration("every", 0, "publish a random product at this interval (0: only on demand)")
	duplicate := fs.Bool("duplicate-sends", false, "deliver every PUSH notification twice")
	downloadAddr := fs.String("download-addr", "", "listen address of the download host: $value on --addr is then redirected there (empty: --addr serves $value itself)")
	redirectStatus := fs.Int("redirect-status", http.StatusTemporaryRedirect, "the status of that redirect (301, 302, 307 or 308)")
	downloadRate := fs.Int64("download-rate", 20_000_000, "each download's rate in bytes/s, the live general account's per connection (0: unthrottled)")
	ranges := fs.Bool("ranges", true, "serve Range requests (206); --ranges=false answers 200 with the whole product")
	maxDownloads := fs.Int("max-downloads", 4, "concurrent downloads per user; the next gets 429 (0: no cap)")
	contentLength := fs.Int64("content-length", 0, "size in bytes of every generated product (0: 64 to 256 KiB each)")
	version := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *version {
		fmt.Println(buildinfo.Get().String("cdse-sim"))
		return 0
	}
	users := map[string]cdsesim.User{}
	if *usersFile != "" {
		b, err := os.ReadFile(*usersFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "cdse-sim:", err)
			return 1
		}
		for _, line := range strings.Split(string(b), "\n") {
			if u, p, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && u != "" {
				users[u] = cdsesim.User{Password: p}
			}
		}
	} else {
		pw := *password
		if pw == "" {
			pw = getenv("SIM_PASSWORD")
		}
		if pw == "" {
			pw = "demo-password"
		}
		users[*user] = cdsesim.User{Password: pw, TOTP: getenv("SIM_TOTP")}
	}
	switch *redirectStatus {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
	default:
		fmt.Fprintln(os.Stderr, "cdse-sim: --redirect-status is 301, 302, 307 or 308")
		return 2
	}
	if *contentLength < 0 {
		fmt.Fprintln(os.Stderr, "cdse-sim: --content-length must be at least 0")
		return 2
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cdse-sim:", err)
		return 1
	}
	o := cdsesim.Options{Users: users, MaxRunning: *maxRunning, RedirectStatus: *redirectStatus,
		DownloadRate: *downloadRate, NoRange: !*ranges, MaxDownloads: *maxDownloads}
	// The flags' 0 is "none"; the Options' 0 is the live default.
	if *downloadRate <= 0 {
		o.DownloadRate = cdsesim.Unthrottled
	}
	if *maxDownloads <= 0 {
		o.MaxDownloads = -1
	}
	var dln net.Listener
	if *downloadAddr != "" {
		if dln, err = net.Listen("tcp", *downloadAddr); err != nil {
			ln.Close()
			fmt.Fprintln(os.Stderr, "cdse-sim:", err)
			return 1
		}
		o.DownloadURL = "http://" + dln.Addr().String() + "/odata/v1"
	}
	sim := cdsesim.New(o)
	defer sim.Close()
	sim.SetDuplicateSends(*duplicate)
	sim.SetContentLength(*contentLength)

	base := "http://" + ln.Addr().String()
	fmt.Printf("cdse-sim listening on %s\n", ln.Addr())
	fmt.Printf("  CDSE_TOKEN_URL=%s%s\n", base, cdsesim.TokenPath)
	fmt.Printf("  CDSE_CATALOGUE_URL=%s/odata/v1\n", base)
	// A NAME=value line like the others: a download address missed sends
	// the fetcher to the live host.
	if o.DownloadURL != "" {
		fmt.Printf("  CDSE_DOWNLOAD_URL=%s   # Products(<Id>)/$value; the catalogue's redirects there\n", o.DownloadURL)
	} else {
		fmt.Printf("  CDSE_DOWNLOAD_URL=%s/odata/v1\n", base)
	}
	fmt.Printf("  publish products: curl -X POST %s/sim/products -d '{\"mission\":\"S2\",\"count\":3}'\n", base)
	srv := &http.Server{Handler: sim.Handler(), ReadHeaderTimeout: 5 * time.Second}
	dsrv := &http.Server{Handler: sim.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		_ = dsrv.Shutdown(sctx)
	}()
	if dln != nil {
		go func() {
			if err := dsrv.Serve(dln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				fmt.Fprintln(os.Stderr, "cdse-sim: download host:", err)
			}
		}()
	}
	if *rate > 0 {
		go func() {
			t := time.NewTicker(*rate)
			defer t.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					sim.Generate(cdsesim.Missions[i%len(cdsesim.Missions)], 1)
				}
			}
		}()
	}
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "cdse-sim:", err)
		return 1
	}
	return 0
}
