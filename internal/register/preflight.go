package register

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/cdse-jetstream/receiver/internal/preflight"
)

// Preflight checks endpoint from where register runs, with the credentials
// about to be registered (internal/preflight), before a subscription
// points the catalogue at it: a wrong host, port, path, certificate or
// password would otherwise show only as notifications retried three times
// and dropped. It prints the checks to log and returns an error naming the
// problem when one failed.
func Preflight(ctx context.Context, endpoint, user, password string, insecure bool, log io.Writer) error {
	r := preflight.Check(ctx, preflight.Options{Endpoint: endpoint, Username: user, Password: password, Insecure: insecure})
	fmt.Fprintf(log, "preflight of %s:\n", endpoint)
	if err := preflight.PrintReport(log, r); err != nil {
		return err
	}
	if r.OK() {
		return nil
	}
	last := r.Checks[len(r.Checks)-1]
	return fmt.Errorf("preflight: %s: %s (nothing was registered; --skip-preflight registers anyway, for an endpoint reachable only from the catalogue's side)", r.Problem, last.Detail)
}

// plainHTTP says whether endpoint is an http:// URL, which only
// --insecure-endpoint lets through to the catalogue.
func plainHTTP(endpoint string) bool { return strings.HasPrefix(endpoint, "http://") }

// statusPreflight adds the preflight's checks of the registered endpoint
// to a status report, as "endpoint <check>". Without the receiver's
// password (RECEIVER_PASSWORD[_FILE] where status runs) the credentials
// are not checked: the receiver's own 401 then says it is the receiver.
func (r *Report) statusPreflight(ctx context.Context, endpoint, user, password string) {
	if password == "" {
		user = ""
	}
	p := preflight.Check(ctx, preflight.Options{Endpoint: endpoint, Username: user, Password: password, Insecure: plainHTTP(endpoint)})
	for _, c := range p.Checks {
		r.add("endpoint "+c.Name, string(c.Status), "%s", c.Detail)
	}
}
