package auth

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

func TestBasic(t *testing.T) {
	b, err := NewBasic([]Credential{{"cdse", "old-secret"}, {"cdse", "new-secret"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		user, pass string
		want       bool
	}{
		{"cdse", "old-secret", true},
		{"cdse", "new-secret", true},
		{"cdse", "wrong", false},
		{"other", "old-secret", false},
		{"", "", false},
		{"cdse", "old-secret ", false},
		{"CDSE", "old-secret", false},
	}
	for _, tt := range tests {
		if got := verify(t, b, tt.user, tt.pass); got != tt.want {
			t.Errorf("Verify(%q, %q) = %v, want %v", tt.user, tt.pass, got, tt.want)
		}
	}
}

func TestNewBasicRefusesEmpty(t *testing.T) {
	for _, creds := range [][]Credential{nil, {{"u", ""}}, {{"", "p"}}} {
		if _, err := NewBasic(creds, ""); !errors.Is(err, ErrNoCredentials) {
			t.Errorf("NewBasic(%v) = %v, want ErrNoCredentials", creds, err)
		}
	}
}

func writeHTPasswd(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func bcryptLine(t *testing.T, user, pass string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return user + ":" + string(h)
}

func TestHTPasswdRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "htpasswd")
	writeHTPasswd(t, path, "# receiver credentials", bcryptLine(t, "cdse", "old-password-1"))
	b, err := NewBasic(nil, path)
	if err != nil {
		t.Fatal(err)
	}
	if !verify(t, b, "cdse", "old-password-1") || verify(t, b, "cdse", "new-password-2") || verify(t, b, "nobody", "old-password-1") {
		t.Fatal("initial file not applied")
	}
	// Step 1: both passwords valid while the subscription is updated.
	writeHTPasswd(t, path, bcryptLine(t, "cdse", "old-password-1"), bcryptLine(t, "cdse", "new-password-2"))
	touch(t, path, time.Now().Add(time.Second))
	if changed, err := b.Reload(); !changed || err != nil {
		t.Fatalf("reload: %v %v", changed, err)
	}
	if !verify(t, b, "cdse", "old-password-1") || !verify(t, b, "cdse", "new-password-2") {
		t.Fatal("both passwords must work during the rotation")
	}
	// Step 2: the old one removed; its cached success must not survive.
	writeHTPasswd(t, path, bcryptLine(t, "cdse", "new-password-2"))
	touch(t, path, time.Now().Add(2*time.Second))
	if changed, err := b.Reload(); !changed || err != nil {
		t.Fatalf("reload: %v %v", changed, err)
	}
	if verify(t, b, "cdse", "old-password-1") || !verify(t, b, "cdse", "new-password-2") {
		t.Fatal("old password still accepted after removal")
	}
	// A broken file keeps the previous one in force.
	writeHTPasswd(t, path, "cdse:plaintext")
	touch(t, path, time.Now().Add(3*time.Second))
	if _, err := b.Reload(); err == nil || !strings.Contains(err.Error(), "only bcrypt") {
		t.Fatalf("broken file: %v", err)
	}
	if !verify(t, b, "cdse", "new-password-2") {
		t.Fatal("a broken file must not lock everyone out")
	}
	if changed, err := b.Reload(); changed || err == nil {
		t.Fatalf("the broken file is reported again: %v %v", changed, err)
	}
}

func touch(t *testing.T, path string, at time.Time) {
	t.Helper()
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

func TestHTPasswdRefusesWeakHashes(t *testing.T) {
	for name, line := range map[string]string{
		"plain": "cdse:secret",
		"md5":   "cdse:$apr1$r31.....$HqJZimcKQFAMYayBlzkrA/",
		"sha1":  "cdse:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=",
		"empty": "# nothing",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "htpasswd")
			writeHTPasswd(t, path, line)
			if _, err := NewBasic(nil, path); err == nil {
				t.Error("accepted")
			}
		})
	}
}

func TestFailureLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewFailureLimiter(3, time.Minute, 2)
	l.now = func() time.Time { return now }
	for i := 1; i <= 4; i++ {
		limited, retry := l.Fail("10.0.0.1")
		if limited != (i > 3) {
			t.Fatalf("failure %d: limited=%v", i, limited)
		}
		if retry != time.Minute {
			t.Errorf("retry %v", retry)
		}
	}
	if limited, _ := l.Fail("10.0.0.2"); limited {
		t.Error("another address is limited too")
	}
	now = now.Add(61 * time.Second)
	if limited, _ := l.Fail("10.0.0.1"); limited {
		t.Error("the window did not end")
	}
	// Bounded: a third address evicts, never grows past max.
	l.Fail("10.0.0.3")
	if len(l.clients) > 2 {
		t.Errorf("tracking %d addresses, max 2", len(l.clients))
	}
}

// heldCompare replaces the bcrypt check of v with one that waits, once
// entered, until release is closed; entered says a check has begun.
func heldCompare(v *bcryptVerifier) (entered chan struct{}, release chan struct{}) {
	entered, release = make(chan struct{}, 8), make(chan struct{})
	real := v.compare
	v.compare = func(hash, pw []byte) error {
		entered <- struct{}{}
		<-release
		return real(hash, pw)
	}
	return entered, release
}

// TestHTPasswdReloadDuringVerify: a check that was already running when a
// reload removed its password must not put that password back into the
// memory of verified ones (where it would stay valid for 10 minutes).
func TestHTPasswdReloadDuringVerify(t *testing.T) {
	path := filepath.Join(t.TempDir(), "htpasswd")
	writeHTPasswd(t, path, bcryptLine(t, "cdse", "old-password-1"), bcryptLine(t, "cdse", "new-password-2"))
	b, err := NewBasic(nil, path)
	if err != nil {
		t.Fatal(err)
	}
	entered, release := heldCompare(b.file)
	result := make(chan bool, 1)
	go func() { result <- verify(t, b, "cdse", "old-password-1") }()
	<-entered // the check has read the file as it was
	writeHTPasswd(t, path, bcryptLine(t, "cdse", "new-password-2"))
	touch(t, path, time.Now().Add(time.Second))
	if changed, err := b.Reload(); !changed || err != nil {
		t.Fatalf("reload: %v %v", changed, err)
	}
	close(release)
	<-result
	if verify(t, b, "cdse", "old-password-1") {
		t.Fatal("the removed password is accepted after the reload")
	}
	if !verify(t, b, "cdse", "new-password-2") {
		t.Fatal("the remaining password is refused")
	}
}

// verify is b.Verify for a request that lives as long as the test.
func verify(t *testing.T, b *Basic, user, pass string) bool {
	t.Helper()
	ok, err := b.Verify(context.Background(), user, pass)
	if err != nil {
		t.Fatalf("verify %s: %v", user, err)
	}
	return ok
}

// TestHTPasswdCheckWaitsOnlyAsLongAsItsRequest: with both bcrypt slots
// taken, a check gives up when its request ends, and beyond the queue's
// bound it is refused at once (ErrBusy): a flood of wrong passwords cannot
// pile up goroutines.
func TestHTPasswdCheckWaitsOnlyAsLongAsItsRequest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "htpasswd")
	writeHTPasswd(t, path, bcryptLine(t, "cdse", "the-password-1"))
	b, err := NewBasic(nil, path)
	if err != nil {
		t.Fatal(err)
	}
	entered, release := heldCompare(b.file)
	defer close(release)
	for range 2 { // both slots held
		go func() { _, _ = b.Verify(context.Background(), "cdse", "guess") }()
		<-entered
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := b.Verify(ctx, "cdse", "guess"); done <- err }()
	cancel() // the client went away
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("a check whose request ended: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a check kept waiting for a bcrypt slot after its request ended")
	}
	// Fill the queue; the next check is refused at once.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	for range maxWaiting {
		go func() { _, _ = b.Verify(ctx2, "cdse", "guess") }()
	}
	deadline := time.Now().Add(5 * time.Second)
	for b.file.waiting.Load() < maxWaiting {
		if time.Now().After(deadline) {
			t.Fatalf("queue holds %d", b.file.waiting.Load())
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := b.Verify(context.Background(), "cdse", "guess"); !errors.Is(err, ErrBusy) {
		t.Errorf("beyond the queue: %v, want ErrBusy", err)
	}
	// The correct password, once verified, never waits for a slot.
	b.file.ok[fileKey("cdse", "the-password-1")] = verified{until: time.Now().Add(time.Minute), user: "cdse"}
	if !b.Known("cdse", "the-password-1") {
		t.Error("a verified password is not known")
	}
}

// TestHTPasswdMemoryKeyedByHashLine: a reload forgets a verified password
// only if its user's hash line changed or went; an unchanged line stays
// known (no bcrypt check), and after verifiedFor it is checked again.
func TestHTPasswdMemoryKeyedByHashLine(t *testing.T) {
	line := bcryptLine(t, "cdse", "the-password-1")
	tests := []struct {
		name      string
		lines     []string
		wantKnown bool
	}{
		{"unchanged", []string{line}, true},
		{"another user added", []string{bcryptLine(t, "other", "other-password"), line}, true},
		{"a second password added", []string{line, bcryptLine(t, "cdse", "new-password-2")}, true},
		{"same password, new hash", []string{bcryptLine(t, "cdse", "the-password-1")}, false},
		{"the line removed", []string{bcryptLine(t, "cdse", "new-password-2")}, false},
		{"the line moved to another user", []string{"other:" + strings.TrimPrefix(line, "cdse:")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "htpasswd")
			writeHTPasswd(t, path, line)
			b, err := NewBasic(nil, path)
			if err != nil {
				t.Fatal(err)
			}
			if !verify(t, b, "cdse", "the-password-1") || !b.Known("cdse", "the-password-1") {
				t.Fatal("not verified and remembered")
			}
			writeHTPasswd(t, path, tt.lines...)
			touch(t, path, time.Now().Add(time.Second))
			if changed, err := b.Reload(); !changed || err != nil {
				t.Fatalf("reload: %v %v", changed, err)
			}
			if got := b.Known("cdse", "the-password-1"); got != tt.wantKnown {
				t.Errorf("known after the reload: %v, want %v", got, tt.wantKnown)
			}
		})
	}
}

// TestHTPasswdMemoryExpires: a verified password is remembered for
// verifiedFor, then checked (and remembered) again.
func TestHTPasswdMemoryExpires(t *testing.T) {
	path := filepath.Join(t.TempDir(), "htpasswd")
	writeHTPasswd(t, path, bcryptLine(t, "cdse", "the-password-1"))
	b, err := NewBasic(nil, path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	b.SetClock(func() time.Time { return now })
	if !verify(t, b, "cdse", "the-password-1") || !b.Known("cdse", "the-password-1") {
		t.Fatal("not verified and remembered")
	}
	now = now.Add(verifiedFor + time.Second)
	if b.Known("cdse", "the-password-1") {
		t.Fatal("still known after verifiedFor")
	}
	if !verify(t, b, "cdse", "the-password-1") || b.BcryptChecks() != 2 {
		t.Fatalf("not verified again (%d checks)", b.BcryptChecks())
	}
}

// TestHTPasswdReloadOfTheMatchedLineDuringVerify: a check that matched a
// line still in force after a reload that came during it is accepted and
// remembered, not checked again.
func TestHTPasswdReloadOfTheMatchedLineDuringVerify(t *testing.T) {
	path := filepath.Join(t.TempDir(), "htpasswd")
	line := bcryptLine(t, "cdse", "the-password-1")
	writeHTPasswd(t, path, line)
	b, err := NewBasic(nil, path)
	if err != nil {
		t.Fatal(err)
	}
	entered, release := heldCompare(b.file)
	result := make(chan bool, 1)
	go func() { result <- verify(t, b, "cdse", "the-password-1") }()
	<-entered
	writeHTPasswd(t, path, line, bcryptLine(t, "other", "other-password"))
	touch(t, path, time.Now().Add(time.Second))
	if changed, err := b.Reload(); !changed || err != nil {
		t.Fatalf("reload: %v %v", changed, err)
	}
	close(release)
	if !<-result || !b.Known("cdse", "the-password-1") {
		t.Fatal("the password is refused or not remembered")
	}
	if n := b.BcryptChecks(); n != 1 {
		t.Errorf("%d bcrypt checks, want 1", n)
	}
}

func TestCheckable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "htpasswd")
	writeHTPasswd(t, path, bcryptLine(t, "cdse", "the-password-1"))
	withFile, err := NewBasic([]Credential{{"static", "static-password"}}, path)
	if err != nil {
		t.Fatal(err)
	}
	static, err := NewBasic([]Credential{{"cdse", "static-password"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		b    *Basic
		user string
		want bool
	}{
		{"a user of the file", withFile, "cdse", true},
		{"a static user", withFile, "static", false},
		{"nobody", withFile, "nobody", false},
		{"no file", static, "cdse", false},
	}
	for _, tt := range tests {
		if got := tt.b.Checkable(tt.user); got != tt.want {
			t.Errorf("%s: Checkable(%q) = %v, want %v", tt.name, tt.user, got, tt.want)
		}
	}
}

// TestFailureLimiterAdmit: an address's checks run one at a time, with at
// most maxAddrWaiting waiting (beyond: ErrBusy at once), each waiting only
// as long as its request; other addresses are not held up, and nothing is
// left behind.
func TestFailureLimiterAdmit(t *testing.T) {
	l := NewFailureLimiter(3, time.Minute, 100)
	ctx := context.Background()
	release, err := l.Admit(ctx, "10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	other, err := l.Admit(ctx, "10.0.0.2")
	if err != nil {
		t.Fatalf("another address is held up: %v", err)
	}
	other()

	type admitted struct {
		release func()
		err     error
	}
	waiting := make(chan admitted, maxAddrWaiting)
	for range maxAddrWaiting {
		go func() {
			r, err := l.Admit(ctx, "10.0.0.1")
			waiting <- admitted{r, err}
		}()
	}
	waitFor(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.gates["10.0.0.1"].users == 1+maxAddrWaiting
	})
	if _, err := l.Admit(ctx, "10.0.0.1"); !errors.Is(err, ErrBusy) {
		t.Fatalf("beyond the queue: %v, want ErrBusy", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	select {
	case a := <-waiting:
		t.Fatalf("a second check admitted while the first runs (%v)", a.err)
	default:
	}
	// One at a time: each release lets exactly one waiter in.
	for i := range maxAddrWaiting {
		release()
		select {
		case a := <-waiting:
			if a.err != nil {
				t.Fatal(a.err)
			}
			release = a.release
		case <-time.After(5 * time.Second):
			t.Fatalf("waiter %d not admitted after a release", i)
		}
		select {
		case a := <-waiting:
			t.Fatalf("two checks admitted at once (%v)", a.err)
		default:
		}
		if i == 0 {
			// A full queue again: the next one waits until its request ends.
			go func() {
				_, err := l.Admit(cancelled, "10.0.0.1")
				waiting <- admitted{nil, err}
			}()
			select {
			case a := <-waiting:
				if !errors.Is(a.err, context.Canceled) {
					t.Fatalf("a waiter whose request ended: %v", a.err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("a waiter whose request ended still waits")
			}
		}
	}
	release()
	release() // twice is harmless
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.gates) != 0 {
		t.Errorf("%d gates left behind", len(l.gates))
	}
}

// waitFor polls cond for at most 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
