package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/register"
)

// newApply is `register apply`: the one subscription that covers every
// named interest, as kubectl apply makes an object what its file says.
func newApply(d deps) *cobra.Command {
	var o register.ApplyOptions
	cmd := &cobra.Command{
		Use:   "apply --interests FILE --endpoint URL",
		Short: "Make the one subscription cover the named interests (idempotent; swaps within the running limit)",
		Long: `apply compiles the receiver's named interests (the INTERESTS_FILE the
receiver reads) into the one PUSH subscription the catalogue allows: its
filter the interests' filters joined with or, its events their union
(created and/or modified; deletions reach interests through the receiver's
reconciler, as one subscription cannot carry deleted with them).

Run again unchanged, it changes nothing. When the file changed, the
catalogue's subscription cannot be edited (its filter and events are fixed),
so apply replaces it within the limit of one running subscription: it
creates the new one paused, pauses the old one, resumes the new one, then
cancels the old one (--keep-old keeps it paused). It prints what it did and
the window in which PUSH may have missed products: the receiver's
reconciler, whose filter is the same union with INTERESTS_FILE set, brings
them. --dry-run prints the compiled filter and the plan and changes nothing.
The endpoint is checked first, as create checks it (--skip-preflight).

` + register.SettingsHelp,
		Example: `  register apply --interests interests.yaml --endpoint https://hooks.example.org/notifications --dry-run
  register apply --interests interests.yaml --endpoint https://hooks.example.org/notifications`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := d.session()
			if err != nil {
				return err
			}
			r, err := s.Apply(cmd.Context(), o, cmd.ErrOrStderr())
			show := func() error {
				return d.out.Print(cmd.OutOrStdout(), r, func(w io.Writer) error { return register.PrintApply(w, r) })
			}
			if err != nil {
				// A dry run shows the compiled filter even when the
				// plan stops (at the running limit, the account's total,
				// the catalogue unreachable): it is what was asked.
				if o.DryRun && r.Filter != "" {
					_ = show()
				}
				return err
			}
			return show()
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Interests, "interests", d.getenv("INTERESTS_FILE"), "the interests file (default $INTERESTS_FILE)")
	f.StringVar(&o.Endpoint, "endpoint", "", "the receiver's public URL (https://.../notifications)")
	f.IntVar(&o.MaxRunning, "max-running", register.DocumentedMaxRunning, "the account's limit of running subscriptions (the live documentation says 1)")
	f.BoolVar(&o.KeepOld, "keep-old", false, "keep the replaced subscription paused instead of cancelling it")
	f.BoolVar(&o.DryRun, "dry-run", false, "print the compiled filter and the plan; change nothing")
	f.BoolVar(&o.Insecure, "insecure-endpoint", false, "allow an http:// endpoint (local testing only)")
	addPreflightFlags(f, &o.Preflight, "do not check the endpoint first (DNS, TCP, TLS, the receiver and the credentials): for an endpoint reachable only from the catalogue's side")
	return cmd
}
