package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/ingest/quarantine"
	"github.com/cdse-jetstream/receiver/internal/platform/cli"
)

// newQuarantineShow is `receiver quarantine show SEQ`.
func newQuarantineShow(qc *quarantineCmd) *cobra.Command {
	return &cobra.Command{Use: "show SEQ", Short: "Print one body exactly as stored (-o json|yaml: with its metadata)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			seq, err := cli.Seqs(args, "quarantine list")
			if err != nil {
				return err
			}
			_, topo, done, err := qc.open(false)
			if err != nil {
				return err
			}
			defer done()
			s, err := quarantineReader(topo).Get(cmd.Context(), seq[0])
			if err != nil {
				return cli.Interrupted(cmd.Context(), err)
			}
			// The table is the body itself, byte for byte.
			return qc.out.Print(cmd.OutOrStdout(), struct {
				quarantine.Stored
				Body string `json:"body"`
			}{s, string(s.Body)}, func(w io.Writer) error {
				_, err := w.Write(s.Body)
				return err
			})
		}}
}
