package main

import "github.com/spf13/cobra"

// newResume is `register resume ID`.
func newResume(d deps) *cobra.Command {
	return newSetStatus(d, "resume ID", "Resume a paused subscription", "running")
}
