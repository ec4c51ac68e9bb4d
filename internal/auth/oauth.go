package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
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
	// HTTPClient for the token requests (nil: http.DefaultClient).
	HTTPClient *http.Client
	// Now is the clock (nil: time.Now); tests inject one.
	Now func() time.Time
}

// PasswordTokenSource logs in once with the password grant, then refreshes
// the access token with the refresh token before it expires, and logs in
// again only when the refresh token has expired too: one session per
// process, not one per request (the provider caps active sessions).
// It is safe for concurrent use.
func PasswordTokenSource(c PasswordConfig) oauth2.TokenSource {
	if c.ClientID == "" {
		c.ClientID = DefaultClientID
	}
	if c.TokenURL == "" {
		c.TokenURL = DefaultTokenURL
	}
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return &passwordSource{c: c}
}

type passwordSource struct {
	c  PasswordConfig
	mu sync.Mutex

	access        *oauth2.Token
	refresh       string
	refreshExpiry time.Time
	// Logins counts password logins (sessions opened), for tests and logs.
	logins int
}

// early is how long before expiry a token is renewed.
const early = 30 * time.Second

func (s *passwordSource) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.c.Now()
	if s.access != nil && now.Add(early).Before(s.access.Expiry) {
		return s.access, nil
	}
	if s.refresh != "" && now.Add(early).Before(s.refreshExpiry) {
		err := s.request(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {s.refresh}})
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
	if err := s.request(form); err != nil {
		return nil, err
	}
	s.logins++
	return s.access, nil
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
func (s *passwordSource) request(form url.Values) error {
	grant := form.Get("grant_type")
	form.Set("client_id", s.c.ClientID)
	req, err := http.NewRequest(http.MethodPost, s.c.TokenURL, strings.NewReader(form.Encode()))
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
