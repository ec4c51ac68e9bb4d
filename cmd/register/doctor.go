package main

import (
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/cdse"
	"github.com/cdse-jetstream/receiver/internal/platform/cli"
	"github.com/cdse-jetstream/receiver/internal/register"
	"github.com/cdse-jetstream/receiver/internal/register/doctor"
)

// newDoctor is `register doctor`: does the live catalogue still answer
// every request form the receiver relies on?
func newDoctor(d deps) *cobra.Command {
	var o doctor.DoctorOptions
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check that the catalogue answers every request the receiver relies on (read-only)",
		Long: `doctor logs in and sends every request form the receiver and register depend
on, through their own code: the login and a refresh, the list of
subscriptions, one subscription, a PULL read (never acknowledged) when the
account has a PULL subscription, and for created, modified and deleted the
listings the reconciler and the backfill send (their filter, order, $top,
$count, the next page, and the walk of a tie with $skip) over a narrow window
that ends now, so it costs little. It also asks, without failing on the
answer, what the documentation leaves open: whether the catalogue accepts
the filter forms users paste that the receiver accepts on an assumption
(lower-case names, a lambda's value without its cast, Footprint= in
Intersects), and whether the download service answers Range (one byte of a
listed product, with the token sent to that host only), and the Nodes API
the fetcher's FETCH_FILES relies on, which the formal API description
leaves out (for --product, or the first product listed): the listings'
shape, the manifest by its path, and whether a folder URL without /Nodes
is refused. It creates and changes nothing. It prints
a line per request: its status and what came back, or why it failed (-o
wide: also the request as sent and what was expected), and exits 1 when the catalogue refused something the receiver
relies on (see docs/sources.md for what to do then).

` + register.SettingsHelp,
		Example: `  register doctor
  register doctor -o wide
  register doctor --filter "Collection/Name eq 'SENTINEL-1'" --window 6h -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Window <= 0 || o.PageSize < 1 || o.PageSize > 1000 {
				return cli.Usagef("--window must be positive and --page-size between 1 and 1000")
			}
			r, err := doctor.Doctor(cmd.Context(), d.getenv, o, time.Now())
			if err != nil {
				return err
			}
			if err := d.out.Print(cmd.OutOrStdout(), r, func(w io.Writer) error { return doctor.PrintDoctor(w, r, d.out.Wide()) }); err != nil {
				return err
			}
			if !r.OK {
				return register.ErrChecksFailed
			}
			return nil
		},
	}
	filter := d.getenv("RECONCILE_FILTER")
	if filter == "" {
		filter = "Collection/Name eq 'SENTINEL-2'"
	}
	f := cmd.Flags()
	f.StringVar(&o.Filter, "filter", filter, "the OData filter to list with (default $RECONCILE_FILTER, else Sentinel-2)")
	f.DurationVar(&o.Window, "window", time.Hour, "list the products of this window, ending now")
	f.IntVar(&o.PageSize, "page-size", 20, "products per listing request")
	download := d.getenv("CDSE_DOWNLOAD_URL")
	if download == "" {
		download = cdse.DownloadURL
	}
	f.StringVar(&o.DownloadURL, "download-url", download, "the download service whose Range support is probed with one byte of a listed product, and its Nodes API (default $CDSE_DOWNLOAD_URL, the fetcher's; \"\" skips them)")
	f.StringVar(&o.Product, "product", "", "the id of the product the download probes ask for (default: the first one listed); a Sentinel-1, -2 or -3 product for the Nodes probes")
	return cmd
}
