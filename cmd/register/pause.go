package main

import (
	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/register"
)

// newPause is `register pause ID`.
func newPause(d deps) *cobra.Command {
	return &cobra.Command{
		Use:   "pause ID",
		Short: "Pause a subscription (the catalogue keeps it, sends nothing)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := d.session()
			if err != nil {
				return err
			}
			sub, err := s.SetStatus(cmd.Context(), args[0], "paused")
			if err != nil {
				return err
			}
			return register.PrintSubscriptions(cmd.OutOrStdout(), d.out, []catalogclient.Subscription{*sub})
		},
	}
}
