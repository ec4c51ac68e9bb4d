package main

import (
	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/register"
)

// newCreate is `register create`.
func newCreate(d deps) *cobra.Command {
	var o register.CreateOptions
	create := &cobra.Command{
		Use:   "create",
		Short: "Create the receiver's subscription (idempotent)",
		Long: `create makes the receiver's subscription. Running it again with the same
type, endpoint, filter and events changes nothing (--resume resumes it when
paused). At the account's limit of running subscriptions it refuses and lists
them, unless --replace says which one to pause (or cancel) first.

A PUSH subscription's endpoint is checked first, from here, with the
credentials being registered (a preflight: DNS, TCP, the certificate and its
expiry, the receiver's answer); a failure stops create with the reason
(unreachable, bad certificate, wrong credentials, not the receiver).
--skip-preflight registers anyway, for an endpoint reachable only from the
catalogue's side.

` + register.SettingsHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := d.session()
			if err != nil {
				return err
			}
			sub, err := s.Create(cmd.Context(), o, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return d.printOne(cmd, sub)
		},
	}
	f := create.Flags()
	f.StringVar(&o.Endpoint, "endpoint", "", "the receiver's public URL (https://.../notifications); push only")
	f.StringVar(&o.Filter, "filter", "", "OData filter, e.g. \"Collection/Name eq 'SENTINEL-2'\" (empty: every product)")
	f.StringVar(&o.Events, "events", "created", "created, modified, created,modified or deleted")
	f.StringVar(&o.Type, "type", "push", "push or pull")
	f.IntVar(&o.MaxRunning, "max-running", register.DocumentedMaxRunning, "the account's limit of running subscriptions (the live documentation says 1; the interface description said 2)")
	f.StringVar(&o.Replace, "replace", "", "at the running limit, pause (or cancel) this subscription first")
	f.StringVar(&o.ReplaceAction, "replace-action", "pause", "what --replace does: pause or cancel")
	f.BoolVar(&o.Resume, "resume", false, "resume the matching subscription if it is paused")
	f.BoolVar(&o.Insecure, "insecure-endpoint", false, "allow an http:// endpoint (local testing only)")
	addPreflightFlags(f, &o.Preflight, "do not check the endpoint first (DNS, TCP, TLS, the receiver and the credentials): for an endpoint reachable only from the catalogue's side")
	_ = create.RegisterFlagCompletionFunc("events", cobra.FixedCompletions([]string{"created", "modified", "created,modified", "deleted"}, cobra.ShellCompDirectiveNoFileComp))
	_ = create.RegisterFlagCompletionFunc("type", cobra.FixedCompletions([]string{"push", "pull"}, cobra.ShellCompDirectiveNoFileComp))
	_ = create.RegisterFlagCompletionFunc("replace-action", cobra.FixedCompletions([]string{"pause", "cancel"}, cobra.ShellCompDirectiveNoFileComp))
	return create
}
