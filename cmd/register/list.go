package main

import (
	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/register"
)

// newList is `register list`.
func newList(d deps) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the account's subscriptions",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := d.session()
			if err != nil {
				return err
			}
			subs, err := s.API.ListSubscriptions(cmd.Context())
			if err != nil {
				return err
			}
			return register.PrintSubscriptions(cmd.OutOrStdout(), d.out, subs)
		},
	}
}
