// Command cdse-sim runs the local catalogue simulator (internal/cdsesim) on
// one port: the identity provider, the OData subscription API, the Products
// listing and an admin API to publish products. For demos, tests and
// developing downstream consumers offline.
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

	"github.com/cdse-jetstream/receiver/internal/buildinfo"
	"github.com/cdse-jetstream/receiver/internal/cdsesim"
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
	sim := cdsesim.New(cdsesim.Options{Users: users, MaxRunning: *maxRunning})
	defer sim.Close()
	sim.SetDuplicateSends(*duplicate)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cdse-sim:", err)
		return 1
	}
	base := "http://" + ln.Addr().String()
	fmt.Printf("cdse-sim listening on %s\n", ln.Addr())
	fmt.Printf("  CDSE_TOKEN_URL=%s%s\n", base, cdsesim.TokenPath)
	fmt.Printf("  CDSE_CATALOGUE_URL=%s/odata/v1\n", base)
	fmt.Printf("  publish products: curl -X POST %s/sim/products -d '{\"mission\":\"S2\",\"count\":3}'\n", base)
	srv := &http.Server{Handler: sim.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
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
