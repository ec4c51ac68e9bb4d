package main

import (
	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/register"
)

// newResume is `register resume ID`.
func newResume(d deps) *cobra.Command {
	return &cobra.Command{
		Use:   "resume ID",
		Short: "Resume a paused subscription",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := d.session()
			if err != nil {
				return err
			}
			sub, err := s.SetStatus(cmd.Context(), args[0], "running")
			if err != nil {
				return err
			}
			return register.PrintSubscriptions(cmd.OutOrStdout(), d.out, []catalogclient.Subscription{*sub})
		},
	}
}
