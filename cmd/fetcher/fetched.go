package main

import (
	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/platform/cli"
)

// fetchedHelp is the fetched command's long help.
const fetchedHelp = `The products the fetcher stored (or removed, FETCH_ON_DELETE=delete), as its
fetched events on FETCH_STREAM tell them, subjects
<FETCH_FETCHED_PREFIX>.<event>.<collection>.<productType>:

  list     what was fetched: sequence, time, event, product type, product,
           size, verified or not, where it is stored

The settings are the fetcher's (NATS_URL and its credentials, FETCH_STREAM,
FETCH_FETCHED_PREFIX), read as ` + "`fetcher failed`" + ` reads them.

Exit codes: 0 ok, 1 error, 2 usage.`

// newFetched is `fetcher fetched list`, a file per verb.
func newFetched(getenv func(string) string, configFile *string) *cobra.Command {
	// The failed verbs' settings and connection serve these too: the
	// same stream, read the same way.
	fc := &failedCmd{getenv: getenv, configFile: configFile}
	f := &cobra.Command{
		Use:   "fetched",
		Short: "List the products the fetcher stored, where, and whether verified",
		Long:  fetchedHelp,
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return cli.Usagef("want list")
		},
	}
	fc.out = cli.AddOutputFlag(f)
	f.PersistentPreRunE = func(*cobra.Command, []string) error { return fc.out.Check() }
	f.AddCommand(newFetchedList(fc))
	return f
}
