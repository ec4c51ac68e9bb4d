package main

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/platform/cli"
)

// newQuarantineDrop is `receiver quarantine drop SEQ...`: the bodies that
// will never be valid, removed for good, as kubectl delete names what it
// removes (no "drop everything": replay first, then drop what it still
// refuses, by name).
func newQuarantineDrop(qc *quarantineCmd) *cobra.Command {
	var dryRun bool
	drop := &cobra.Command{Use: "drop SEQ...", Short: "Remove the bodies named from the quarantine for good",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cli.Usagef("drop needs the sequences of the bodies to remove (see quarantine list)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			only, err := cli.Seqs(args, "quarantine list")
			if err != nil {
				return err
			}
			_, topo, done, err := qc.open(false)
			if err != nil {
				return err
			}
			defer done()
			sum, err := quarantineReader(topo).Drop(cmd.Context(), only, dryRun)
			if err != nil {
				return cli.Interrupted(cmd.Context(), err)
			}
			perr := qc.out.Print(cmd.OutOrStdout(), sum, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SEQ\tPRODUCT\tREASON\tRESULT")
				for _, it := range sum.Items {
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", it.Seq, cli.OrDash(it.ProductID), cli.OrDash(it.Reason), it.Result)
				}
				return tw.Flush()
			})
			return errors.Join(perr, cli.NotFound(sum.NotFound, "not in the quarantine (see quarantine list)"))
		}}
	drop.Flags().BoolVar(&dryRun, "dry-run", false, "say what would be removed; remove nothing")
	return drop
}
