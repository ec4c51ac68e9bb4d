package main

import (
	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/register"
)

// newUpdate is `register update ID`: move a PUSH subscription's endpoint or
// rotate the credentials it sends, without a new subscription (the
// catalogue's PATCH).
func newUpdate(d deps) *cobra.Command {
	var o register.UpdateOptions
	cmd := &cobra.Command{
		Use:   "update ID",
		Short: "Change a push subscription's endpoint or the credentials it sends (PATCH)",
		Long: `update changes what the catalogue allows to change on a PUSH subscription:
its endpoint and the Basic-auth credentials it sends (never its filter or
events). The password is read from a file, never from the command line. Run
again with the same options, it changes nothing it can see. For a rotation
that loses nothing, make the receiver accept the new password first (a
second line in RECEIVER_HTPASSWD_FILE): docs/registering.md, "Rotating the
webhook credentials".

` + register.SettingsHelp,
		Example: `  register update 0b4f6b1e-... --receiver-password-file /run/secrets/new-webhook-password
  register update 0b4f6b1e-... --endpoint https://hooks2.example.org/notifications`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := d.session()
			if err != nil {
				return err
			}
			sub, err := s.Update(cmd.Context(), args[0], o, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return d.printOne(cmd, sub)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Endpoint, "endpoint", "", "the receiver's new public URL (https://.../notifications)")
	f.StringVar(&o.Username, "receiver-username", "", "the user the catalogue sends from now on")
	f.StringVar(&o.PasswordFile, "receiver-password-file", "", "a file holding the password the catalogue sends from now on")
	f.BoolVar(&o.Insecure, "insecure-endpoint", false, "allow an http:// endpoint (local testing only)")
	addPreflightFlags(f, &o.Preflight, "do not check the endpoint first with the credentials it will receive (DNS, TCP, TLS, the receiver): for an endpoint reachable only from the catalogue's side")
	return cmd
}
