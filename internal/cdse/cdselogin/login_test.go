package cdselogin

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
)

// clock is a settable time shared by the simulator and the token source.

func newClock() *cdsesim.Clock {
	return cdsesim.NewClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
}
func tokenURL(srv *httptest.Server) string {
	return srv.URL + cdsesim.TokenPath
}

func startSim(t *testing.T, c *cdsesim.Clock, users map[string]cdsesim.User) (*cdsesim.Sim, *httptest.Server) {
	t.Helper()
	sim := cdsesim.New(cdsesim.Options{Users: users, Now: c.Now})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); sim.Close() })
	return sim, srv
}

func TestPasswordTokenSourceLifecycle(t *testing.T) {
	c := newClock()
	sim, srv := startSim(t, c, map[string]cdsesim.User{"alice": {Password: "alice-pw"}})
	ts := NewPasswordSource(PasswordConfig{TokenURL: tokenURL(srv), Username: "alice", Password: "alice-pw", Now: c.Now})

	first, err := ts.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Within the access token's life: the same token, no request.
	c.Add(5 * time.Minute)
	if tok, _ := ts.Token(context.Background()); tok.AccessToken != first.AccessToken {
		t.Error("token renewed while still valid")
	}
	// Access token about to expire (10 min): refreshed, not a new login.
	c.Add(5 * time.Minute)
	second, err := ts.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if second.AccessToken == first.AccessToken {
		t.Error("expired access token not renewed")
	}
	if got := sim.Stats().Logins; got != 1 {
		t.Errorf("%d logins, want 1 (refresh, not login)", got)
	}
	// Refresh token expired too (60 min): a new password login.
	c.Add(2 * time.Hour)
	if _, err := ts.Token(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := sim.Stats().Logins; got != 2 {
		t.Errorf("%d logins, want 2", got)
	}
}

func TestPasswordTokenSourceErrors(t *testing.T) {
	c := newClock()
	_, srv := startSim(t, c, map[string]cdsesim.User{
		"alice": {Password: "alice-pw"},
		"bob":   {Password: "bob-pw", TOTP: "123456"},
	})
	tests := []struct {
		name           string
		user, pw, totp string
		want           error
	}{
		{"wrong password", "alice", "nope-secret-pw", "", ErrBadCredentials},
		{"unknown user", "carol", "nope-secret-pw", "", ErrBadCredentials},
		{"totp missing", "bob", "bob-pw", "", ErrTOTP},
		{"totp wrong", "bob", "bob-pw", "654321", ErrTOTP},
		{"totp right", "bob", "bob-pw", "123456", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewPasswordSource(PasswordConfig{TokenURL: tokenURL(srv), Username: tt.user, Password: tt.pw, TOTP: tt.totp, Now: c.Now}).Token(context.Background())
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), tt.pw) {
				t.Errorf("the password is in the error: %v", err)
			}
		})
	}
	// The identity provider unreachable: a clear error, no password.
	srv.Close()
	_, err := NewPasswordSource(PasswordConfig{TokenURL: tokenURL(srv), Username: "alice", Password: "alice-pw", Now: c.Now}).Token(context.Background())
	if !errors.Is(err, ErrTokenEndpoint) || strings.Contains(err.Error(), "alice-pw") {
		t.Errorf("unreachable: %v", err)
	}
}

// TestPasswordSourceHonoursContext: with a token endpoint that accepts the
// connection and never answers, a login ends with its caller's context,
// and so does a second caller waiting for the first.
func TestPasswordSourceHonoursContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	ts := NewPasswordSource(PasswordConfig{TokenURL: "http://" + ln.Addr().String() + "/token", Username: "alice", Password: "alice-pw"})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	errs := make(chan error, 2)
	for range 2 {
		go func() { _, err := ts.Token(ctx); errs <- err }()
	}
	for range 2 {
		select {
		case err := <-errs:
			if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrTokenEndpoint) {
				t.Errorf("err = %v, want the identity provider error with the context's deadline", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Token did not return when its context ended")
		}
	}
}
