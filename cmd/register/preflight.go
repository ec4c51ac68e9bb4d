package main

import (
	"github.com/spf13/pflag"

	"github.com/cdse-jetstream/receiver/internal/register"
)

// addPreflightFlags adds the preflight's flags of create, apply and update;
// skipHelp says what --skip-preflight leaves unchecked for the command.
func addPreflightFlags(f *pflag.FlagSet, o *register.PreflightOptions, skipHelp string) {
	f.BoolVar(&o.Skip, "skip-preflight", false, skipHelp)
	f.DurationVar(&o.Wait, "preflight-wait", 0, "retry a failing preflight every 5 s for this long (an endpoint still coming up: a Helm hook, a new certificate)")
}
