package main

import (
	"github.com/spf13/cobra"
)

// newGet is `register get ID`.
func newGet(d deps) *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show one subscription",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := d.session()
			if err != nil {
				return err
			}
			sub, err := s.API.GetSubscription(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return d.printOne(cmd, sub)
		},
	}
}
