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
	"time"

	"golang.org/x/oauth2"
)

// Defaults of the real identity provider.
const (
	DefaultTokenURL = "https://identity.dataspace.copernicus.eu/auth/realms/CDSE/protocol/openid-connect/token"
	DefaultClientID = "cdse-public"
)

// Sentinel errors of the token endpoint, in words an operator acts on.
var (
	ErrBadCredentials = errors.New("wrong username or password")
	ErrTOTP           = errors.New("two-factor code required or wrong")
	ErrRefreshExpired = errors.New("refresh token expired")
	ErrTokenEndpoint  = errors.New("identity provider error")
)

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
	// timeout; every request also carries the caller's context).
	HTTPClient *http.Client
	// Now is the clock (nil: time.Now); tests inject one.
	Now func() time.Time
}

// tokenTimeout bounds one token request when the caller's context does
// not bound it sooner: a provider that accepts the connection and never
// answers must not hold a pass, a probe or a shutdown.
const tokenTimeout = 30 * time.Second

// NewPasswordSource logs in once with the password grant, then refreshes
// the access token with the refresh token before it expires, and logs in
// again only when the refresh token has expired too: one session per
// process, not one per request (the provider caps active sessions).
// It is safe for concurrent use.
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
	return &PasswordSource{c: c, turn: make(chan struct{}, 1)}
}

// PasswordSource is the catalogue login of NewPasswordSource.
type PasswordSource struct {
	c PasswordConfig
	// turn serialises logins (one request to the provider at a time, so
	// concurrent callers share one session); a caller waits for it only as
	// long as its context lives.
	turn chan struct{}

	access        *oauth2.Token
	refresh       string
	refreshExpiry time.Time
	// Logins counts password logins (sessions opened), for tests and logs.
	logins int
}

// early is how long before expiry a token is renewed.
const early = 30 * time.Second

// Token returns a valid access token, logging in or refreshing when
// needed; ctx bounds the wait and the request.
func (s *PasswordSource) Token(ctx context.Context) (*oauth2.Token, error) {
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", ErrTokenEndpoint, ctx.Err())
	}
	defer func() { <-s.turn }()
	now := s.c.Now()
	if s.access != nil && now.Add(early).Before(s.access.Expiry) {
		return s.access, nil
	}
	if s.refresh != "" && now.Add(early).Before(s.refreshExpiry) {
		err := s.request(ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {s.refresh}})
		if err == nil {
			return s.access, nil
		}
		if !errors.Is(err, ErrRefreshExpired) {
			return nil, err
		}
		// The session ended early (server restart, logout): log in again.
	}
	form := url.Values{"grant_type": {"password"}, "username": {s.c.Username}, "password": {s.c.Password}}
	if s.c.TOTP != "" {
		form.Set("totp", s.c.TOTP)
	}
	if err := s.request(ctx, form); err != nil {
		return nil, err
	}
	s.logins++
	return s.access, nil
}

// Refresh uses the refresh token now, whatever the access token's expiry:
// `register doctor` checks the refresh grant the receiver relies on.
func (s *PasswordSource) Refresh(ctx context.Context) error {
	if _, err := s.Token(ctx); err != nil {
		return err
	}
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrTokenEndpoint, ctx.Err())
	}
	defer func() { <-s.turn }()
	if s.refresh == "" {
		return fmt.Errorf("%w: the identity provider gave no refresh token", ErrTokenEndpoint)
	}
	return s.request(ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {s.refresh}})
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

// request posts form to the token endpoint and stores the tokens. Errors
// never contain the form (it holds the password).
func (s *PasswordSource) request(ctx context.Context, form url.Values) error {
	grant := form.Get("grant_type")
	form.Set("client_id", s.c.ClientID)
	ctx, cancel := context.WithTimeout(ctx, tokenTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.c.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("token request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := s.c.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s grant: %w", ErrTokenEndpoint, grant, redactURLError(err))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var tr tokenResponse
	_ = json.Unmarshal(body, &tr)
	if resp.StatusCode != http.StatusOK || tr.AccessToken == "" {
		return tokenError(grant, resp.StatusCode, tr)
	}
	now := s.c.Now()
	s.access = &oauth2.Token{AccessToken: tr.AccessToken, TokenType: "Bearer", Expiry: now.Add(time.Duration(tr.ExpiresIn) * time.Second)}
	if tr.RefreshToken != "" {
		s.refresh = tr.RefreshToken
		s.refreshExpiry = now.Add(time.Duration(tr.RefreshExpiresIn) * time.Second)
	}
	return nil
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
