package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/platform/cli"
)

// newFailedList is `fetcher failed list`.
func newFailedList(fc *failedCmd) *cobra.Command {
	return &cobra.Command{Use: "list", Aliases: []string{"ls"}, Short: "List the product events the fetcher gave up", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, store, done, err := fc.open(cmd)
			if err != nil {
				return err
			}
			defer done()
			l, err := store.List(cmd.Context())
			if err != nil {
				return cli.Interrupted(cmd.Context(), err)
			}
			return fc.out.Print(cmd.OutOrStdout(), l, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SEQ\tTIME\tCOLLECTION\tTYPE\tEVENT\tPRODUCT\tNAME\tREASON")
				for _, f := range l {
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.Seq, f.Time.UTC().Format(time.RFC3339), cli.OrDash(f.Collection), cli.OrDash(f.ProductType),
						cli.OrDash(f.Event), cli.OrDash(f.ProductID), cli.OrDash(f.ProductName), cli.Cut(f.Reason, 80))
				}
				return tw.Flush()
			})
		}}
}
