package main

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/platform/cli"
)

// newFailedDrop is `fetcher failed drop SEQ...`: the failed events that
// will never be fetched (a product withdrawn, one fetched by hand with
// fetcher get), removed for good, by name (no "drop everything": retry
// first, then drop what fails again, by name).
func newFailedDrop(fc *failedCmd) *cobra.Command {
	var dryRun bool
	drop := &cobra.Command{Use: "drop SEQ...", Short: "Remove the failed events named for good",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cli.Usagef("drop needs the sequences of the failed events to remove (see failed list)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			only, err := cli.Seqs(args, "failed list")
			if err != nil {
				return err
			}
			_, store, done, err := fc.open(cmd)
			if err != nil {
				return err
			}
			defer done()
			sum, err := store.Drop(cmd.Context(), only, dryRun)
			if err != nil {
				return cli.Interrupted(cmd.Context(), err)
			}
			perr := fc.out.Print(cmd.OutOrStdout(), sum, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SEQ\tPRODUCT\tREASON\tRESULT")
				for _, it := range sum.Items {
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", it.Seq, cli.OrDash(it.ProductID), cli.Cut(cli.OrDash(it.Reason), 80), it.Result)
				}
				return tw.Flush()
			})
			return errors.Join(perr, cli.NotFound(sum.NotFound, "not failed events (see failed list)"))
		}}
	drop.Flags().BoolVar(&dryRun, "dry-run", false, "say what would be removed; remove nothing")
	return drop
}
