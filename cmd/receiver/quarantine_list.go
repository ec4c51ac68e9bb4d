package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/platform/cli"
)

// newQuarantineList is `receiver quarantine list`.
func newQuarantineList(qc *quarantineCmd) *cobra.Command {
	return &cobra.Command{Use: "list", Aliases: []string{"ls"}, Short: "List the quarantined bodies", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, topo, done, err := qc.open(false)
			if err != nil {
				return err
			}
			defer done()
			l, err := quarantineReader(topo).List(cmd.Context())
			if err != nil {
				return cli.Interrupted(cmd.Context(), err)
			}
			return qc.out.Print(cmd.OutOrStdout(), l, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SEQ\tTIME\tSOURCE\tREASON\tPRODUCT\tBYTES\tERROR")
				for _, s := range l {
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\n", s.Seq, s.Time.UTC().Format(time.RFC3339), s.Source, s.Reason, cli.OrDash(s.ProductID), s.Bytes, cli.Cut(s.Error, 80))
				}
				return tw.Flush()
			})
		}}
}
