package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newCancel is `register cancel ID`: the catalogue deletes it.
func newCancel(d deps) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel (delete) a subscription",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := d.session()
			if err != nil {
				return err
			}
			if err := s.API.DeleteSubscription(cmd.Context(), args[0]); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "cancelled %s\n", args[0])
			return err
		},
	}
}
