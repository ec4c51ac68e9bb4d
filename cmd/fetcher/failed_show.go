package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/fetcher/failedstore"
	"github.com/cdse-jetstream/receiver/internal/platform/cli"
)

// newFailedShow is `fetcher failed show SEQ`.
func newFailedShow(fc *failedCmd) *cobra.Command {
	return &cobra.Command{Use: "show SEQ", Short: "Print one failed event's notification exactly as stored (-o json|yaml: with its headers and metadata)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			seq, err := cli.Seqs(args, "failed list")
			if err != nil {
				return err
			}
			_, store, done, err := fc.open(cmd)
			if err != nil {
				return err
			}
			defer done()
			f, err := store.Get(cmd.Context(), seq[0])
			if err != nil {
				return cli.Interrupted(cmd.Context(), err)
			}
			// The table is the body itself, byte for byte.
			return fc.out.Print(cmd.OutOrStdout(), struct {
				failedstore.Event
				Headers map[string][]string `json:"headers"`
				Body    string              `json:"body"`
			}{f, f.Header, string(f.Body)}, func(w io.Writer) error {
				_, err := w.Write(f.Body)
				return err
			})
		}}
}
