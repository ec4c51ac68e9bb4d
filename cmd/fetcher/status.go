package main

import (
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/cli"
	"github.com/cdse-jetstream/receiver/internal/fetch"
	"github.com/cdse-jetstream/receiver/internal/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/status"
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
		st, err := status.FetchFetcher(cmd.Context(), &http.Client{Timeout: 10 * time.Second}, "http://"+dialable(cfg.AdminAddr))
		if err != nil {
			return fmt.Errorf("%w (is the fetcher running, with FETCH_ADMIN_ADDR=%s?)", err, cfg.AdminAddr)
		}
		return out.Print(cmd.OutOrStdout(), st, func(w io.Writer) error { return statusTable(w, st) })
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

func statusTable(w io.Writer, st *status.Fetcher) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	ready := "yes"
	if !st.Ready {
		ready = "no"
	}
	fmt.Fprintf(tw, "READY\t%s\n", ready)
	for _, check := range slices.Sorted(maps.Keys(st.NotReady)) {
		fmt.Fprintf(tw, "  %s\t%s\n", check, st.NotReady[check])
	}
	if c := st.Consumer; c != nil {
		fmt.Fprintf(tw, "CONSUMER\t%s on %s: %d waiting, %d in flight\n", c.Name, c.Stream, c.Waiting, c.InFlight)
	} else {
		fmt.Fprintf(tw, "CONSUMER\tunknown: %s\n", st.ConsumerError)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "DOWNLOADING\tBYTES\tSIZE\tRATE\tLEFT\tKEY")
	for _, d := range st.Downloads {
		rate, left := fetch.HumanBytes(d.Rate)+"/s", orDash(d.ETA)
		if d.Waiting != "" {
			rate, left = d.Waiting, "-"
		}
		size := "unknown"
		if d.Size > 0 {
			size = fetch.HumanBytes(float64(d.Size))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", d.ProductID, fetch.HumanBytes(float64(d.Bytes)), size, rate, left, d.Key)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "STORED\tAT\tSIZE\tVERIFIED\tURL")
	for _, s := range st.LastStored {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%s\n", s.ProductID, s.At.UTC().Format(time.RFC3339), fetch.HumanBytes(float64(s.Size)), s.Verified, s.URL)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "FAILED\tCOUNT")
	for _, r := range slices.Sorted(maps.Keys(st.Failures)) {
		fmt.Fprintf(tw, "%s\t%d\n", r, st.Failures[r])
	}
	return tw.Flush()
}
