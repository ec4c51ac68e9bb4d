package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/fetcher/failedstore"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetch"
	"github.com/cdse-jetstream/receiver/internal/platform/cli"
)

// newFetchedList is `fetcher fetched list`.
func newFetchedList(fc *failedCmd) *cobra.Command {
	var since, productType, interest string
	cmd := &cobra.Command{Use: "list", Aliases: []string{"ls"}, Short: "List the products the fetcher stored", Args: cobra.NoArgs,
		Long: `Lists the fetched events, oldest first, reading their headers only.

  --since          a time (2026-05-01, 2026-05-01T12:00:00Z) or an age (24h, 90m)
  --product-type   one product type (S2MSI2A): read on the subjects' token
  --interest       the interest the product event came by (its Cdse-Interest
                   header: a fetcher consuming an interest's subjects)`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			from, err := sinceTime(since, time.Now())
			if err != nil {
				return err
			}
			_, store, done, err := fc.open(cmd)
			if err != nil {
				return err
			}
			defer done()
			ctx := cmd.Context()
			l, err := store.Fetched(ctx, failedstore.FetchedFilter{Since: from, ProductType: productType, Interest: interest})
			if err != nil {
				return cli.Interrupted(ctx, err)
			}
			return fc.out.Print(cmd.OutOrStdout(), l, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SEQ\tTIME\tEVENT\tTYPE\tPRODUCT\tSIZE\tVERIFIED\tURL")
				for _, f := range l {
					verified := fmt.Sprint(f.Verified)
					if f.Mode == event.FetchModeFiles {
						verified += fmt.Sprintf(" (manifest, %d files)", f.Files)
					}
					if f.Unchanged {
						verified += " (unchanged)"
					}
					switch {
					case f.Skipped != "":
						verified = "skipped: " + f.Skipped
					case f.SupersededBy != "":
						verified = "removed: superseded by " + f.SupersededBy
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.Seq, f.Time.UTC().Format(time.RFC3339), f.Event, f.ProductType,
						cli.OrDash(f.ProductName), fetch.HumanBytes(float64(f.Size)), verified, f.URL)
				}
				return tw.Flush()
			})
		}}
	cmd.Flags().StringVar(&since, "since", "", "only events stored since this time or for this long (24h)")
	cmd.Flags().StringVar(&productType, "product-type", "", "only this product type")
	cmd.Flags().StringVar(&interest, "interest", "", "only the products that came by this interest")
	return cmd
}

// sinceTime reads --since: an age back from now, or a time (RFC 3339, or
// a date, midnight UTC); "" is the beginning.
func sinceTime(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, cli.Usagef("--since %q: want a time (2026-05-01, 2026-05-01T12:00:00Z) or an age (24h)", s)
}
