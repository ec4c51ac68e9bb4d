package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newWhoami is `register whoami`: the login alone.
func newWhoami(d deps) *cobra.Command {
	return &cobra.Command{
		Use:   "whoami",
		Short: "Check the login only",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := d.session()
			if err != nil {
				return err
			}
			if err := s.Login(cmd.Context()); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "logged in as %s\n", s.User())
			return err
		},
	}
}
