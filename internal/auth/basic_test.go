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
	b.file.ok[fileKey("cdse", "the-password-1")] = time.Now().Add(time.Minute)
	if !b.Known("cdse", "the-password-1") {
		t.Error("a verified password is not known")
	}
}
