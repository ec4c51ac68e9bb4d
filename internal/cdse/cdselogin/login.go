// Package cdselogin is the one login to the CDSE identity provider every
// binary uses (receiver, register, fetcher): a token manager that opens one
// session per process with the password grant, renews the access token
// with the refresh grant before it expires, and logs in again only when the
// refresh token has ended or is refused. The provider caps a user's active
// sessions (100) and every password login opens one, so a login per
// request or per replica restart loop would lock the account out.
package cdselogin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdselogin/loginsettings"
	"golang.org/x/oauth2"
)

// Defaults of the real identity provider.
const (
	DefaultTokenURL = cdse.TokenURL
	DefaultClientID = cdse.ClientID
)

// Sentinel errors of the token endpoint, in words an operator acts on.
var (
	ErrBadCredentials = errors.New("wrong username or password")
	ErrTOTP           = errors.New("two-factor code required or wrong")
	ErrRefreshExpired = errors.New("refresh token expired")
	ErrTokenEndpoint  = errors.New("identity provider error")
)

// FromSettings is the login the settings group gives, the one mapping from
// CDSE_* settings to a login (as natsconn.FromSettings is for NATS).
func FromSettings(l loginsettings.Login) PasswordConfig {
	return PasswordConfig{TokenURL: l.CDSETokenURL, ClientID: l.CDSEClientID,
		Username: l.CDSEUsername, Password: l.CDSEPassword, TOTP: l.CDSETOTP}
}

// PasswordConfig is a login to the catalogue (a Keycloak realm, public client).
type PasswordConfig struct {
	TokenURL string
	ClientID string
	Username string
	Password string
	// TOTP is the current two-factor code, when the account has 2FA. A code
	// is valid once and briefly, so it only serves the first login; later
	// logins (after the refresh token expires) need a fresh one.
	TOTP string
	// HTTPClient for the token requests (nil: a client with a 30 s
	// timeout). Every request also carries a context bounded by 30 s and
	// ended when every caller waiting for it has given up.
	HTTPClient *http.Client
	// Now is the clock (nil: time.Now); tests inject one.
	Now func() time.Time
}

// tokenTimeout bounds one token request when the caller's context does
// not bound it sooner: a provider that accepts the connection and never
// answers must not hold a pass, a probe or a shutdown.
const tokenTimeout = 30 * time.Second

// early is how long before its expiry a token is renewed, at most: a
// quarter of its life when that is shorter (a 20 s token is not renewed at
// every call).
const early = 30 * time.Second

// refusedFor is how long a refused login (wrong password, two-factor code)
// is every caller's answer without a new attempt: a process with many
// goroutines, or a caller retrying in a loop, must not hammer the
// provider with a wrong password, whose brute-force protection would lock
// the account.
const refusedFor = time.Minute

// NewPasswordSource returns the token manager of a login: the first Token
// logs in with the password grant; the access token is renewed with the
// refresh grant shortly before it expires; the password grant is used
// again only when the refresh token has ended or the provider refuses it.
// One session per process, not one per request (the provider caps active
// sessions). It is safe for concurrent use: callers asking at once share
// one renewal, and only one request to the provider is under way at a time.
func NewPasswordSource(c PasswordConfig) *PasswordSource {
	if c.ClientID == "" {
		c.ClientID = DefaultClientID
	}
	if c.TokenURL == "" {
		c.TokenURL = DefaultTokenURL
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: tokenTimeout}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return &PasswordSource{c: c, sem: make(chan struct{}, 1)}
}

// PasswordSource is the token manager of NewPasswordSource.
type PasswordSource struct {
	c PasswordConfig
	// sem is the one request to the provider at a time: a renewal that
	// every caller gave up on may still be ending when the next starts,
	// and two refresh grants with one refresh token would end the session
	// (a refresh token is used once).
	sem chan struct{}

	mu      sync.Mutex
	access  *oauth2.Token
	renewAt time.Time // the access token's expiry less the margin
	refresh string
	// refreshUntil is the refresh token's expiry less the margin; zero:
	// unknown (the provider did not say), tried until refused.
	refreshUntil time.Time
	// refused is the last refused login, the answer until refusedUntil.
	refused      error
	refusedUntil time.Time
	// flight is the renewal under way, nil without one.
	flight *flight
	// logins counts password logins (sessions opened).
	logins int
}

// flight is one renewal that every caller asking meanwhile waits for.
type flight struct {
	done chan struct{} // closed when tok or err is set
	tok  *oauth2.Token
	err  error
	// waiters are the callers waiting; when the last gives up, the
	// request is cancelled (nobody would use its token).
	waiters int
	cancel  context.CancelFunc
}

// margin is how long before the end of a lifetime a token is renewed.
func margin(life time.Duration) time.Duration { return min(early, life/4) }

// Token returns a valid access token (a copy: callers may keep it),
// logging in or renewing when needed. Callers asking at once share one
// renewal; ctx bounds the caller's wait, and the request ends when every
// caller waiting for it has given up (or after tokenTimeout).
func (s *PasswordSource) Token(ctx context.Context) (*oauth2.Token, error) {
	s.mu.Lock()
	now := s.c.Now()
	if s.access != nil && now.Before(s.renewAt) {
		tok := *s.access
		s.mu.Unlock()
		return &tok, nil
	}
	if s.refused != nil && now.Before(s.refusedUntil) {
		err := s.refused
		s.mu.Unlock()
		return nil, err
	}
	f := s.flight
	if f == nil {
		// The request outlives the caller that started it while others
		// wait for it: a login the provider completed opened a session,
		// and a second login for the next waiter would open another.
		// It keeps the context's values, not its cancellation.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tokenTimeout)
		f = &flight{done: make(chan struct{}), cancel: cancel}
		s.flight = f
		go s.fly(fctx, f)
	}
	f.waiters++
	s.mu.Unlock()
	select {
	case <-f.done:
		if f.err != nil {
			return nil, f.err
		}
		tok := *f.tok
		return &tok, nil
	case <-ctx.Done():
		s.mu.Lock()
		if f.waiters--; f.waiters == 0 {
			f.cancel()
			if s.flight == f {
				s.flight = nil // the next caller starts afresh
			}
		}
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %w", ErrTokenEndpoint, ctx.Err())
	}
}

// Invalidate drops stale, the token the API refused (401), so that the
// next Token renews it (refresh grant first). It is a no-op when the
// current token is already another: of many callers refused with the same
// token, only the first causes a renewal.
func (s *PasswordSource) Invalidate(stale *oauth2.Token) {
	if stale == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.access != nil && s.access.AccessToken == stale.AccessToken {
		s.access = nil
	}
}

// fly runs a renewal and hands its outcome to its waiters.
func (s *PasswordSource) fly(ctx context.Context, f *flight) {
	defer f.cancel()
	tok, err := s.renew(ctx)
	s.mu.Lock()
	f.tok, f.err = tok, err
	if s.flight == f {
		s.flight = nil
	}
	s.mu.Unlock()
	close(f.done)
}

// renew gets a new access token: with the refresh grant while the refresh
// token lives, else (or when it is refused) with the password grant.
func (s *PasswordSource) renew(ctx context.Context) (*oauth2.Token, error) {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", ErrTokenEndpoint, ctx.Err())
	}
	defer func() { <-s.sem }()
	s.mu.Lock()
	now := s.c.Now()
	if s.access != nil && now.Before(s.renewAt) {
		// Renewed by a flight that its callers had given up on.
		tok := s.access
		s.mu.Unlock()
		return tok, nil
	}
	refresh := ""
	if s.refreshUntil.IsZero() || now.Before(s.refreshUntil) {
		refresh = s.refresh
	}
	relogin := s.logins > 0
	s.mu.Unlock()
	if refresh != "" {
		tok, err := s.grant(ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}})
		if err == nil || !errors.Is(err, ErrRefreshExpired) {
			return tok, err
		}
		// The session ended early (logout, the provider's restart, its
		// idle limit): log in again.
	}
	form := url.Values{"grant_type": {"password"}, "username": {s.c.Username}, "password": {s.c.Password}}
	if s.c.TOTP != "" {
		form.Set("totp", s.c.TOTP)
	}
	tok, err := s.grant(ctx, form)
	if err != nil {
		if relogin && s.c.TOTP != "" && errors.Is(err, ErrTOTP) {
			err = fmt.Errorf("%w: a two-factor code serves one login, and the session it opened has ended: a new login needs a new code", err)
		}
		if errors.Is(err, ErrBadCredentials) || errors.Is(err, ErrTOTP) {
			s.mu.Lock()
			s.refused, s.refusedUntil = err, s.c.Now().Add(refusedFor)
			s.mu.Unlock()
		}
		return nil, err
	}
	return tok, nil
}

// Refresh uses the refresh token now, whatever the access token's expiry:
// `register doctor` checks the refresh grant the receiver relies on.
func (s *PasswordSource) Refresh(ctx context.Context) error {
	if _, err := s.Token(ctx); err != nil {
		return err
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrTokenEndpoint, ctx.Err())
	}
	defer func() { <-s.sem }()
	s.mu.Lock()
	refresh := s.refresh
	s.mu.Unlock()
	if refresh == "" {
		return fmt.Errorf("%w: the identity provider gave no refresh token", ErrTokenEndpoint)
	}
	_, err := s.grant(ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}})
	return err
}

type tokenResponse struct {
	AccessToken      string `json:"access_token"`
	ExpiresIn        int64  `json:"expires_in"`
	RefreshToken     string `json:"refresh_token"`
	RefreshExpiresIn int64  `json:"refresh_expires_in"`
	TokenType        string `json:"token_type"`
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

// grant posts form to the token endpoint, stores the tokens and returns
// the access token. Errors never contain the form (it holds the password
// or the refresh token).
func (s *PasswordSource) grant(ctx context.Context, form url.Values) (*oauth2.Token, error) {
	grant := form.Get("grant_type")
	form.Set("client_id", s.c.ClientID)
	ctx, cancel := context.WithTimeout(ctx, tokenTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.c.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("%w: %s grant: %w", ErrTokenEndpoint, grant, redactURLError(err))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// Lifetimes count from the request's start: the provider's clock
	// started them no earlier.
	sent := s.c.Now()
	resp, err := s.c.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s grant: %w", ErrTokenEndpoint, grant, redactURLError(err))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var tr tokenResponse
	_ = json.Unmarshal(body, &tr)
	if resp.StatusCode != http.StatusOK || tr.AccessToken == "" {
		err := tokenError(grant, resp.StatusCode, tr)
		if errors.Is(err, ErrRefreshExpired) {
			s.mu.Lock()
			if s.refresh == form.Get("refresh_token") {
				s.refresh = "" // not to be tried again
			}
			s.mu.Unlock()
		}
		return nil, err
	}
	life := time.Duration(tr.ExpiresIn) * time.Second
	tok := &oauth2.Token{AccessToken: tr.AccessToken, TokenType: "Bearer", Expiry: sent.Add(life)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.access, s.renewAt = tok, tok.Expiry.Add(-margin(life))
	if tr.RefreshToken != "" {
		s.refresh, s.refreshUntil = tr.RefreshToken, time.Time{}
		if tr.RefreshExpiresIn > 0 {
			rlife := time.Duration(tr.RefreshExpiresIn) * time.Second
			s.refreshUntil = sent.Add(rlife - margin(rlife))
		}
	}
	if grant == "password" {
		s.logins++
		s.refused = nil
	}
	cp := *tok
	return &cp, nil
}

func tokenError(grant string, status int, tr tokenResponse) error {
	desc := strings.ToLower(tr.ErrorDescription)
	if tr.Error == "invalid_grant" {
		switch {
		case grant == "refresh_token":
			return fmt.Errorf("%w (%s)", ErrRefreshExpired, tr.ErrorDescription)
		case strings.Contains(desc, "totp") || strings.Contains(desc, "otp") || strings.Contains(desc, "two-factor") || strings.Contains(desc, "not fully set up"):
			return fmt.Errorf("%w (%s)", ErrTOTP, tr.ErrorDescription)
		default:
			return fmt.Errorf("%w (%s)", ErrBadCredentials, tr.ErrorDescription)
		}
	}
	msg := tr.ErrorDescription
	if msg == "" {
		msg = tr.Error
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return fmt.Errorf("%w: %s grant: HTTP %d: %s", ErrTokenEndpoint, grant, status, msg)
}

// redactURLError drops the query of a *url.Error (none is sent here, but a
// configured token URL could carry one).
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			u.RawQuery = ""
			u.User = nil
			return &url.Error{Op: ue.Op, URL: u.String(), Err: ue.Err}
		}
	}
	return err
}
