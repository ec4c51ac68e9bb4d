package cdsesim

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strings"
)

func newToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// keycloakError writes an error shaped like Keycloak's.
func keycloakError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

// handleToken is the token endpoint: password and refresh_token grants for
// the public client, with Keycloak's answers.
func (s *Sim) handleToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		keycloakError(w, http.StatusBadRequest, "invalid_request", "malformed form")
		return
	}
	if r.PostForm.Get("client_id") == "" {
		// x/oauth2 may send confidential clients' credentials as Basic auth.
		if id, secret, ok := r.BasicAuth(); ok {
			r.PostForm.Set("client_id", id)
			r.PostForm.Set("client_secret", secret)
		}
	}
	if r.PostForm.Get("client_id") == "" {
		keycloakError(w, http.StatusUnauthorized, "invalid_client", "Invalid client or Invalid client credentials")
		return
	}
	now := s.o.Now()
	var user string
	switch r.PostForm.Get("grant_type") {
	case "password":
		name, pass := r.PostForm.Get("username"), r.PostForm.Get("password")
		u, ok := s.o.Users[name]
		if !ok || u.Password != pass {
			keycloakError(w, http.StatusUnauthorized, "invalid_grant", "Invalid user credentials")
			return
		}
		if u.TOTP != "" && r.PostForm.Get("totp") != u.TOTP {
			keycloakError(w, http.StatusUnauthorized, "invalid_grant", "Invalid user credentials or invalid TOTP")
			return
		}
		user = name
		s.stats.logins.Add(1)
	case "client_credentials":
		id := r.PostForm.Get("client_id")
		secret, ok := s.o.Clients[id]
		if !ok || secret == "" || r.PostForm.Get("client_secret") != secret {
			keycloakError(w, http.StatusUnauthorized, "unauthorized_client", "Invalid client or Invalid client credentials")
			return
		}
		access := newToken()
		s.mu.Lock()
		s.tokens[access] = tokenEntry{user: "service-account-" + id, expiry: now.Add(s.o.AccessTTL)}
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"access_token": access, "expires_in": int(s.o.AccessTTL.Seconds()), "token_type": "Bearer", "scope": "SH"})
		return
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		s.mu.Lock()
		t, ok := s.tokens[rt]
		if ok {
			delete(s.tokens, rt) // refresh tokens are used once
		}
		s.mu.Unlock()
		if !ok || !t.refresh || !now.Before(t.expiry) {
			keycloakError(w, http.StatusBadRequest, "invalid_grant", "Token is not active")
			return
		}
		user = t.user
	default:
		keycloakError(w, http.StatusBadRequest, "unsupported_grant_type", "Unsupported grant_type")
		return
	}
	access, refresh := newToken(), newToken()
	s.mu.Lock()
	s.tokens[access] = tokenEntry{user: user, expiry: now.Add(s.o.AccessTTL)}
	s.tokens[refresh] = tokenEntry{user: user, expiry: now.Add(s.o.RefreshTTL), refresh: true}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": access, "expires_in": int(s.o.AccessTTL.Seconds()),
		"refresh_token": refresh, "refresh_expires_in": int(s.o.RefreshTTL.Seconds()),
		"token_type": "Bearer", "not-before-policy": 0, "session_state": newToken(), "scope": "AUDIENCE_PUBLIC openid email profile user-context",
	})
}

// authenticate returns the user of the request's bearer token, or "".
func (s *Sim) authenticate(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if !strings.HasPrefix(h, "Bearer ") {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[strings.TrimPrefix(h, "Bearer ")]
	if !ok || t.refresh || !s.o.Now().Before(t.expiry) {
		return ""
	}
	return t.user
}
