package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchstatus"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchview"
	"github.com/cdse-jetstream/receiver/internal/platform/cli"
)

// newStatus is `fetcher status`: a running fetcher's /status, as a table.
func newStatus(getenv func(string) string, configFile *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "What a running fetcher is doing: downloads, backlog, last stored, failures, readiness",
		Long: `Reads /status on the fetcher's admin port (FETCH_ADMIN_ADDR, or --admin-addr;
an address without a host is asked on 127.0.0.1) and prints it: readiness
and the checks that fail, the events waiting on the fetcher's consumer, the
downloads under way (bytes, rate, time left), the products stored last and
the failures by reason. -o json|yaml prints /status as it is.

Exit codes: 0 ok (ready or not), 1 the fetcher cannot be read, 2 usage.`,
		Args: cobra.NoArgs,
	}
	fetchconfig.BindFlags(cmd.Flags())
	out := cli.AddOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := out.Check(); err != nil {
			return err
		}
		// Only the admin address is read: the rest of the settings may be
		// the server's, absent here.
		cfg, err := loadWith(cmd, getenv, *configFile, func(fetchconfig.Config) error { return nil })
		if err != nil {
			return err
		}
		st, err := fetchstatus.Read(cmd.Context(), &http.Client{Timeout: 10 * time.Second}, "http://"+dialable(cfg.AdminAddr))
		if err != nil {
			return fmt.Errorf("%w (is the fetcher running, with FETCH_ADMIN_ADDR=%s?)", err, cfg.AdminAddr)
		}
		return out.Print(cmd.OutOrStdout(), st, func(w io.Writer) error { return fetchview.StatusTable(w, st) })
	}
	return cmd
}

// dialable is a listen address as one to connect to: no host, or every
// interface, is this machine.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
