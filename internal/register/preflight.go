package register

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/cdse-jetstream/receiver/internal/register/preflight"
)

// Preflight checks endpoint from where register runs, with the credentials
// about to be registered (internal/register/preflight), before a subscription
// points the catalogue at it: a wrong host, port, path, certificate or
// password would otherwise show only as notifications retried three times
// and dropped. It prints the checks to log and returns an error naming the
// problem when one failed.
//
// wait, when positive, retries a failing check every 5 s for that long:
// for a deployment that registers while it comes up (the chart's Job runs
// as the receiver, its Ingress and its certificate are being created).
func Preflight(ctx context.Context, endpoint, user, password string, insecure bool, wait time.Duration, log io.Writer) error {
	o := preflight.Options{Endpoint: endpoint, Username: user, Password: password, Insecure: insecure}
	deadline := time.Now().Add(wait)
	r := preflight.Check(ctx, o)
	for !r.OK() && r.Problem != preflight.InvalidEndpoint && time.Now().Add(preflightRetry).Before(deadline) {
		fmt.Fprintf(log, "preflight of %s: %s; again in %s (--preflight-wait, until %s)\n", redacted(endpoint), r.Problem, preflightRetry, deadline.Format(time.TimeOnly))
		select {
		case <-ctx.Done():
			return fmt.Errorf("preflight: %w", ctx.Err())
		case <-time.After(preflightRetry):
		}
		r = preflight.Check(ctx, o)
	}
	fmt.Fprintf(log, "preflight of %s:\n", redacted(endpoint))
	if err := preflight.PrintReport(log, r); err != nil {
		return err
	}
	if r.OK() {
		return nil
	}
	last := r.Checks[len(r.Checks)-1]
	return fmt.Errorf("preflight: %s: %s (nothing was registered; --skip-preflight registers anyway, for an endpoint reachable only from the catalogue's side)", r.Problem, last.Detail)
}

// PreflightOptions are the preflight's flags of create, apply and update.
type PreflightOptions struct {
	// Skip registers without checking (an endpoint reachable only from
	// the catalogue's side).
	Skip bool
	// Wait retries a failing check this long (Preflight).
	Wait time.Duration
}

// run is Preflight, unless o.Skip.
func (o PreflightOptions) run(ctx context.Context, endpoint, user, password string, insecure bool, log io.Writer) error {
	if o.Skip {
		return nil
	}
	return Preflight(ctx, endpoint, user, password, insecure, o.Wait, log)
}

// preflightCredentials are what a preflight sends for a subscription
// sending user ("": RECEIVER_USERNAME) with password ("": none given).
// RECEIVER_PASSWORD goes only with RECEIVER_USERNAME: another user's
// password is not known here. Without a password no user is sent either:
// the receiver's own 401 still says it is the receiver.
func (s *Session) preflightCredentials(user, password string) (string, string) {
	if user == "" {
		user = s.cfg.Username
	}
	if password == "" && user == s.cfg.Username {
		password = s.cfg.Password
	}
	if password == "" {
		user = ""
	}
	return user, password
}

// preflightRetry is the pause between the checks of --preflight-wait.
const preflightRetry = 5 * time.Second

// plainHTTP says whether endpoint is an http:// URL, which only
// --insecure-endpoint lets through to the catalogue.
func plainHTTP(endpoint string) bool { return strings.HasPrefix(endpoint, "http://") }

// statusPreflight adds the preflight's checks of the registered endpoint
// to a status report, as "endpoint <check>". Without the receiver's
// password (RECEIVER_PASSWORD[_FILE] where status runs) the credentials
// are not checked: the receiver's own 401 then says it is the receiver.
func (r *Report) statusPreflight(ctx context.Context, endpoint, user, password string) {
	p := preflight.Check(ctx, preflight.Options{Endpoint: endpoint, Username: user, Password: password, Insecure: plainHTTP(endpoint)})
	for _, c := range p.Checks {
		r.add("endpoint "+c.Name, c.Status, "%s", c.Detail)
	}
}

// redacted is endpoint without a password it may carry (one the catalogue
// returned, never checked by register).
func redacted(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "the endpoint"
	}
	return u.Redacted()
}
