package main

import (
	"io"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/platform/cli"
	"github.com/cdse-jetstream/receiver/internal/register"
)

// newStatus is `register status`: the whole chain in one command.
func newStatus(d deps) *cobra.Command {
	var o register.StatusOptions
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Check the whole chain: subscription, endpoint, credentials, last notification, receiver, stream",
		Long: `status joins what the catalogue says about the subscription(s) feeding the
receiver with what the receiver says about itself (GET /status on its admin
port), and checks: the subscription is running; its endpoint is the
receiver's (--endpoint, or the receiver's webhook path); it sends the user
the receiver expects; the endpoint answers from here as the receiver (DNS,
TCP, the certificate and its expiry, the credentials when RECEIVER_PASSWORD
is set: "endpoint ..." checks); its last notification and the stream's
newest message are younger than --max-silence; the receiver is ready. It prints a check per
line (✔ ok, ✘ failed, ! warning, - not checked) and exits 1 when a check
failed: run it from a Kubernetes CronJob (the chart's statusCheck) or by hand.

` + register.SettingsHelp,
		Example: `  register status --receiver http://127.0.0.1:9090 --endpoint https://hooks.example.org/notifications
  kubectl exec deploy/cdse-receiver -- register status --receiver http://127.0.0.1:9090 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.MaxSilence <= 0 {
				return cli.Usagef("--max-silence must be positive")
			}
			s, err := d.session()
			if err != nil {
				return err
			}
			r, err := s.Status(cmd.Context(), o, &http.Client{Timeout: 10 * time.Second}, time.Now())
			if err != nil {
				return err
			}
			if err := d.out.Print(cmd.OutOrStdout(), r, func(w io.Writer) error { return register.PrintReport(w, r) }); err != nil {
				return err
			}
			if !r.OK {
				return register.ErrChecksFailed
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Receiver, "receiver", d.getenv("RECEIVER_ADMIN_URL"), "the receiver's admin URL, e.g. http://127.0.0.1:9090 (default $RECEIVER_ADMIN_URL)")
	f.StringVar(&o.Endpoint, "endpoint", "", "the receiver's public webhook URL, as registered")
	f.DurationVar(&o.MaxSilence, "max-silence", 6*time.Hour, "fail when the last notification is older than this")
	f.BoolVar(&o.SkipPreflight, "skip-preflight", false, "do not check the running subscription's endpoint from here (DNS, TCP, TLS, the receiver and, with RECEIVER_PASSWORD, the credentials)")
	return cmd
}
