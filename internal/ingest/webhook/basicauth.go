package webhook

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/sirupsen/logrus"
)

// The Basic-auth middleware: internal/receiver/auth's inbound check of the
// credentials, applied to the webhook's requests before their bodies are
// read, with the webhook's failure metric and its refusals (errors.go).

// Verifier checks Basic credentials (internal/receiver/auth). Known is the check
// that costs nothing (static credentials, passwords verified recently);
// Verify may run a bcrypt check, waiting for its turn at most as long as
// ctx, and fails with an error when it cannot check now. Checkable says
// whether Verify could accept any password of user that Known did not
// (whether user has a bcrypt hash).
type Verifier interface {
	Known(user, password string) bool
	Verify(ctx context.Context, user, password string) (bool, error)
	Checkable(user string) bool
}

// FailureLimiter counts failed logins per client address and says when an
// address is over its limit. Limited is asked before a costly check, Fail
// after a failed one; Admit gives an address over its limit its one costly
// check at a time.
type FailureLimiter interface {
	Limited(addr string) (limited bool, retryAfter time.Duration)
	Fail(addr string) (limited bool, retryAfter time.Duration)
	Admit(ctx context.Context, addr string) (release func(), err error)
}

// basicAuth checks the catalogue's credentials before anything is read.
// The order matters on a public endpoint: the free checks first (so the
// catalogue, whose password is static or verified recently, is never
// held up), then the failed-login limiter, then the bcrypt check, bounded in
// time and number (busy: 503, retry later, never 401 for a password not
// checked). From an address over its failure limit, a user without a bcrypt
// hash is answered 429 at once (no password of theirs can pass), and the
// others are checked one at a time per address: a password is refused only
// once it is known to be wrong, because the catalogue may share the address
// with whoever is guessing, and its password is not remembered after an
// expiry of the memory of verified ones or a change of its line.
func basicAuth(v Verifier, lim FailureLimiter, realm string, m *metrics, log logrus.FieldLogger) echo.MiddlewareFunc {
	challenge := `Basic realm="` + realm + `", charset="UTF-8"`
	limited := func(c echo.Context, retry time.Duration) error {
		m.authFailures.WithLabelValues("limited").Inc()
		log.WithField("remote", c.RealIP()).Warn("too many failed logins from this address")
		return &retryIn{err: errTooManyAuthFailures, after: retry}
	}
	unchecked := func(err error) error {
		m.authFailures.WithLabelValues("unchecked").Inc()
		return fmt.Errorf("%w: %w", errAuthUnchecked, err)
	}
	// verify runs the costly check; over the limit, in addr's turn.
	verify := func(c echo.Context, user, pass string, over bool) (bool, error) {
		if over {
			release, err := lim.Admit(c.Request().Context(), c.RealIP())
			if err != nil {
				return false, err
			}
			defer release()
		}
		return v.Verify(c.Request().Context(), user, pass)
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			user, pass, reason := basicCredentials(c.Request())
			if reason == "" {
				if v.Known(user, pass) {
					return next(c)
				}
				over, retry := false, time.Duration(0)
				if lim != nil {
					if over, retry = lim.Limited(c.RealIP()); over && !v.Checkable(user) {
						return limited(c, retry)
					}
				}
				ok, err := verify(c, user, pass, over)
				if err != nil {
					return unchecked(err)
				}
				if ok {
					return next(c)
				}
				reason = "invalid"
			}
			m.authFailures.WithLabelValues(reason).Inc()
			// No credentials at all guesses nothing and costs nothing: it
			// is the challenge's request (register's preflight asks so
			// before it sends a password), answered 401 with the realm,
			// never counted against the address nor refused 429.
			if lim != nil && reason != "missing" {
				if over, retry := lim.Fail(c.RealIP()); over {
					return limited(c, retry)
				}
			}
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, challenge)
			return errUnauthorized
		}
	}
}

// basicCredentials returns the request's Basic credentials (parsed by
// net/http), or a reason ("missing", "malformed") why there are none, for
// the metric.
func basicCredentials(r *http.Request) (user, pass, reason string) {
	h := r.Header.Get(echo.HeaderAuthorization)
	if h == "" {
		return "", "", "missing"
	}
	if len(h) > 4096 {
		return "", "", "malformed"
	}
	user, pass, ok := r.BasicAuth()
	if !ok {
		return "", "", "malformed"
	}
	return user, pass, ""
}
