package cdselogin

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
)

// provider is the simulator's identity provider behind a front that counts
// the grants asked for (refused ones included: a refused password grant is
// what a provider's brute-force protection counts), and can hold requests
// or refuse refresh grants as a provider whose session ended does.
type provider struct {
	sim   *cdsesim.Sim
	srv   *httptest.Server
	clock *cdsesim.Clock

	mu            sync.Mutex
	grants        map[string]int
	gate          chan struct{} // non-nil: token requests wait for it to close
	arrived       chan struct{} // a token request arrived (buffered)
	gone          chan struct{} // a held request's context ended (buffered)
	refuseRefresh bool
	// refusePassword, when set, is the description of a refusal of every
	// password grant (as a provider answers a used two-factor code).
	refusePassword string
}

func newProvider(t *testing.T, o cdsesim.Options) *provider {
	t.Helper()
	p := &provider{clock: newClock(), grants: map[string]int{}, arrived: make(chan struct{}, 100), gone: make(chan struct{}, 100)}
	if o.Users == nil {
		o.Users = map[string]cdsesim.User{"alice": {Password: "alice-pw"}}
	}
	o.Now = p.clock.Now
	p.sim = cdsesim.New(o)
	next := p.sim.Handler()
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == cdsesim.TokenPath {
			_ = r.ParseForm() // the simulator reads the parsed form
			grant := r.PostForm.Get("grant_type")
			p.mu.Lock()
			p.grants[grant]++
			gate, refuse := p.gate, p.refuseRefresh && grant == "refresh_token"
			refusePassword := p.refusePassword
			if grant != "password" {
				refusePassword = ""
			}
			p.mu.Unlock()
			p.arrived <- struct{}{}
			if gate != nil {
				select {
				case <-gate:
				case <-r.Context().Done():
					p.gone <- struct{}{}
					<-gate // answer anyway, as a provider that did the work does
				}
			}
			if refusePassword != "" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"error":"invalid_grant","error_description":"` + refusePassword + `"}`))
				return
			}
			if refuse {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"error":"invalid_grant","error_description":"Session not active"}`))
				return
			}
		}
		next.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { p.release(); p.srv.Close(); p.sim.Close() })
	return p
}

func (p *provider) source(user, pw string) *PasswordSource {
	return NewPasswordSource(PasswordConfig{TokenURL: p.srv.URL + cdsesim.TokenPath, Username: user, Password: pw, Now: p.clock.Now})
}

func (p *provider) count(grant string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.grants[grant]
}

func (p *provider) hold() {
	p.mu.Lock()
	p.gate = make(chan struct{})
	p.mu.Unlock()
}

func (p *provider) release() {
	p.mu.Lock()
	if p.gate != nil {
		close(p.gate)
		p.gate = nil
	}
	p.mu.Unlock()
}

// drain forgets the arrivals and departures seen so far.
func (p *provider) drain() {
	for {
		select {
		case <-p.arrived:
		case <-p.gone:
		default:
			return
		}
	}
}

// concurrently calls f from n goroutines released together, and returns
// their tokens and errors.
func concurrently(n int, f func() (*oauth2.Token, error)) ([]*oauth2.Token, []error) {
	toks, errs := make([]*oauth2.Token, n), make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			toks[i], errs[i] = f()
		}()
	}
	close(start)
	wg.Wait()
	return toks, errs
}

// TestConcurrentCallersShareOneRenewal: many goroutines asking at once
// get the same token from one login, and, once it is due, the same
// renewal from one refresh grant.
func TestConcurrentCallersShareOneRenewal(t *testing.T) {
	p := newProvider(t, cdsesim.Options{})
	s := p.source("alice", "alice-pw")
	same := func(phase string, toks []*oauth2.Token, errs []error) string {
		t.Helper()
		for i := range toks {
			if errs[i] != nil {
				t.Fatalf("%s: caller %d: %v", phase, i, errs[i])
			}
			if toks[i].AccessToken != toks[0].AccessToken {
				t.Fatalf("%s: callers got different tokens", phase)
			}
		}
		return toks[0].AccessToken
	}
	ask := func() (*oauth2.Token, error) { return s.Token(context.Background()) }
	toks, errs := concurrently(50, ask)
	first := same("login", toks, errs)
	if got := p.count("password"); got != 1 {
		t.Errorf("50 concurrent callers: %d password grants, want 1", got)
	}
	p.clock.Add(10 * time.Minute) // the access token's life
	toks, errs = concurrently(50, ask)
	second := same("renewal", toks, errs)
	if second == first {
		t.Error("an expired token was served")
	}
	if got, want := [2]int{p.count("password"), p.count("refresh_token")}, [2]int{1, 1}; got != want {
		t.Errorf("password, refresh grants = %v, want %v", got, want)
	}
}

// TestRenewal: within its life (less a margin) the token is served as it
// is; then the refresh grant renews it; the password grant logs in again
// only when the refresh token has ended or the provider refuses it. The
// margin fits lifetimes shorter than the usual one too.
func TestRenewal(t *testing.T) {
	tests := []struct {
		name           string
		access, rfresh time.Duration // the provider's lifetimes (0: CDSE's)
		refuseRefresh  bool
		steps          []time.Duration // clock moves, each followed by a Token call
		want           []string        // per step: "same", "refresh" or "login"
	}{
		{"CDSE lifetimes", 0, 0, false,
			[]time.Duration{9 * time.Minute, 50 * time.Second, 9*time.Minute + 40*time.Second, 90 * time.Minute},
			[]string{"same", "refresh", "refresh", "login"}},
		{"refresh token refused before its end", 0, 0, true,
			[]time.Duration{5 * time.Minute, 5 * time.Minute},
			[]string{"same", "login"}},
		{"short lifetimes", 20 * time.Second, 60 * time.Second, false,
			[]time.Duration{10 * time.Second, 9 * time.Second, 10 * time.Second, 70 * time.Second},
			[]string{"same", "refresh", "same", "login"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(t, cdsesim.Options{AccessTTL: tt.access, RefreshTTL: tt.rfresh})
			p.refuseRefresh = tt.refuseRefresh
			s := p.source("alice", "alice-pw")
			prev, err := s.Token(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			logins, refreshes := 1, 0
			for i, d := range tt.steps {
				p.clock.Add(d)
				tok, err := s.Token(context.Background())
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				switch tt.want[i] {
				case "refresh":
					refreshes++
				case "login":
					logins++
				}
				if (tok.AccessToken == prev.AccessToken) != (tt.want[i] == "same") {
					t.Errorf("step %d (+%s): token renewed = %v, want %s", i, d, tok.AccessToken != prev.AccessToken, tt.want[i])
				}
				if got := p.count("password"); got != logins {
					t.Errorf("step %d (+%s): %d password grants, want %d", i, d, got, logins)
				}
				if got := p.count("refresh_token"); got != refreshes && !tt.refuseRefresh {
					t.Errorf("step %d (+%s): %d refresh grants, want %d", i, d, got, refreshes)
				}
				prev = tok
			}
		})
	}
}

// TestInvalidate: a caller whose token the API refused (401) invalidates
// it and gets a new one, renewed with the refresh grant; callers that
// invalidate the same stale token after it was replaced cause no second
// renewal.
func TestInvalidate(t *testing.T) {
	p := newProvider(t, cdsesim.Options{})
	s := p.source("alice", "alice-pw")
	stale, err := s.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	toks, errs := concurrently(20, func() (*oauth2.Token, error) {
		s.Invalidate(stale)
		return s.Token(context.Background())
	})
	for i := range toks {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if toks[i].AccessToken == stale.AccessToken || toks[i].AccessToken != toks[0].AccessToken {
			t.Fatalf("caller %d: token %.6s…, stale %.6s…, first %.6s…", i, toks[i].AccessToken, stale.AccessToken, toks[0].AccessToken)
		}
	}
	if got, want := [2]int{p.count("password"), p.count("refresh_token")}, [2]int{1, 1}; got != want {
		t.Errorf("password, refresh grants = %v, want %v (one renewal for one stale token)", got, want)
	}
	// The new token is one the API takes.
	if !p.accepts(t, toks[0]) {
		t.Error("the renewed token is refused")
	}
	s.Invalidate(nil) // nothing to invalidate: no renewal
	if tok, err := s.Token(context.Background()); err != nil || tok.AccessToken != toks[0].AccessToken {
		t.Errorf("after Invalidate(nil): %v, renewed = %v", err, tok != nil && tok.AccessToken != toks[0].AccessToken)
	}
}

// accepts says whether the simulator's API takes tok.
func (p *provider) accepts(t *testing.T, tok *oauth2.Token) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.srv.URL+"/odata/v1/Subscriptions/Info", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// TestRefusedLoginShared: a refused password (or two-factor code) is
// every concurrent caller's answer from one attempt, and is the answer
// without a new attempt for a while: a process does not hammer the
// provider with a wrong password (its brute-force protection would lock
// the account).
func TestRefusedLoginShared(t *testing.T) {
	p := newProvider(t, cdsesim.Options{})
	s := p.source("alice", "wrong-secret-pw")
	_, errs := concurrently(50, func() (*oauth2.Token, error) { return s.Token(context.Background()) })
	for i, err := range errs {
		if !errors.Is(err, ErrBadCredentials) || strings.Contains(err.Error(), "wrong-secret-pw") {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	if got := p.count("password"); got != 1 {
		t.Errorf("50 concurrent callers, wrong password: %d password grants, want 1", got)
	}
	p.clock.Add(refusedFor / 2)
	if _, err := s.Token(context.Background()); !errors.Is(err, ErrBadCredentials) {
		t.Errorf("soon after: %v", err)
	}
	if got := p.count("password"); got != 1 {
		t.Errorf("soon after the refusal: %d password grants, want still 1", got)
	}
	p.clock.Add(refusedFor)
	if _, err := s.Token(context.Background()); !errors.Is(err, ErrBadCredentials) {
		t.Errorf("later: %v", err)
	}
	if got := p.count("password"); got != 2 {
		t.Errorf("after %s: %d password grants, want 2 (tried again)", refusedFor, got)
	}
}

// TestCallerGivingUp: a caller whose context ends returns at once, but
// the login it started goes on for the callers still waiting, so the
// session the provider opens is used, not orphaned by a second login; when
// the last waiter gives up, the request is cancelled.
func TestCallerGivingUp(t *testing.T) {
	p := newProvider(t, cdsesim.Options{})
	s := p.source("alice", "alice-pw")
	p.hold()
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	errA := make(chan error, 1)
	go func() { _, err := s.Token(short); errA <- err }()
	<-p.arrived
	type result struct {
		tok *oauth2.Token
		err error
	}
	resB := make(chan result, 1)
	go func() { tok, err := s.Token(context.Background()); resB <- result{tok, err} }()
	select {
	case err := <-errA:
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrTokenEndpoint) {
			t.Errorf("the caller that gave up: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Token did not return when its context ended")
	}
	p.release()
	select {
	case r := <-resB:
		if r.err != nil {
			t.Fatal(r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting caller got no token")
	}
	if got := p.count("password"); got != 1 {
		t.Errorf("%d password grants, want 1 (a caller giving up must not cost a second session)", got)
	}

	// Every waiter gives up: the held request is cancelled.
	p.drain()
	p.clock.Add(2 * time.Hour)
	p.hold()
	ctx, cancel2 := context.WithCancel(context.Background())
	done := make(chan error, 2)
	for range 2 {
		go func() { _, err := s.Token(ctx); done <- err }()
	}
	<-p.arrived
	cancel2()
	for range 2 {
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want the context's", err)
		}
	}
	select {
	case <-p.gone:
	case <-time.After(10 * time.Second):
		t.Error("the request went on after every caller gave up")
	}
}

// TestTOTPRelogin: the two-factor code serves the first login; when the
// session has ended and the provider refuses the code for a new login,
// the error says that a new code is needed, without the code or the
// password.
func TestTOTPRelogin(t *testing.T) {
	p := newProvider(t, cdsesim.Options{Users: map[string]cdsesim.User{"bob": {Password: "bob-secret-pw", TOTP: "918273"}}})
	s := NewPasswordSource(PasswordConfig{TokenURL: p.srv.URL + cdsesim.TokenPath, Username: "bob", Password: "bob-secret-pw", TOTP: "918273", Now: p.clock.Now})
	if _, err := s.Token(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.clock.Add(2 * time.Hour) // the refresh token has ended
	p.mu.Lock()
	p.refusePassword = "Invalid user credentials or invalid TOTP"
	p.mu.Unlock()
	_, err := s.Token(context.Background())
	if !errors.Is(err, ErrTOTP) || !strings.Contains(err.Error(), "new code") {
		t.Fatalf("err = %v, want the two-factor refusal saying a new code is needed", err)
	}
	for _, secret := range []string{"918273", "bob-secret-pw"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("a secret is in the error: %v", err)
		}
	}
}
