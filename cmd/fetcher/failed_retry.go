package main

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/fetcher/failedstore"
	"github.com/cdse-jetstream/receiver/internal/platform/cli"
)

// newFailedRetry is `fetcher failed retry [SEQ...]`: the failed events put
// back on the product stream for the fetcher's consumer, exactly once
// (failedstore.Store.Retry).
func newFailedRetry(fc *failedCmd) *cobra.Command {
	var dryRun bool
	retry := &cobra.Command{Use: "retry [SEQ...]", Short: "Put the failed events (every one, or those named) back to the fetchers, exactly once",
		RunE: func(cmd *cobra.Command, args []string) error {
			only, err := cli.Seqs(args, "failed list")
			if err != nil {
				return err
			}
			cfg, store, done, err := fc.open(cmd)
			if err != nil {
				return err
			}
			defer done()
			sum, err := store.Retry(cmd.Context(), failedstore.RetryOptions{ProductStream: cfg.ProductStream.Stream, Consumer: cfg.FetchConsumer, DryRun: dryRun, Seqs: only})
			if err != nil && len(sum.Items) == 0 {
				return cli.Interrupted(cmd.Context(), err)
			}
			// What was done before an error is printed, then the error.
			perr := fc.out.Print(cmd.OutOrStdout(), sum, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SEQ\tPRODUCT\tRESULT\tDETAIL")
				for _, it := range sum.Items {
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", it.Seq, cli.OrDash(it.ProductID), it.Result, cli.Cut(it.Detail, 100))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				did := "retried"
				if dryRun {
					did = "would retry (dry run)"
				}
				_, err := fmt.Fprintf(w, "%d checked: %s %d (%d queued, %d already queued)\n", sum.Checked, did, sum.Retried, sum.Queued, sum.Duplicates)
				return err
			})
			if err != nil {
				return cli.Interrupted(cmd.Context(), err)
			}
			return errors.Join(perr, cli.NotFound(sum.NotFound, "not failed events (see failed list)"))
		}}
	retry.Flags().BoolVar(&dryRun, "dry-run", false, "check and say what would be queued again; queue and remove nothing")
	return retry
}
