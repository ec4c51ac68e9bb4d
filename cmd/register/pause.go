package main

import (
	"github.com/spf13/cobra"
)

// newPause is `register pause ID`.
func newPause(d deps) *cobra.Command {
	return newSetStatus(d, "pause ID", "Pause a subscription (the catalogue keeps it, sends nothing)", "paused")
}

// newSetStatus is a command that sets one subscription's status: pause
// and resume.
func newSetStatus(d deps, use, short, status string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := d.session()
			if err != nil {
				return err
			}
			sub, err := s.SetStatus(cmd.Context(), args[0], status)
			if err != nil {
				return err
			}
			return d.printOne(cmd, sub)
		},
	}
}
