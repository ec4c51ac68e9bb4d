// Package auth is the inbound check of the receiver: the HTTP Basic
// verifier that guards the webhook (its credentials, an htpasswd file, and
// the limiter of failed logins). The outbound login to the catalogue is
// internal/cdse/cdselogin.
package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"strconv"
	"time"
)

// Credential is one user name and password the catalogue may present.
type Credential struct {
	User     string
	Password string
}

// Basic verifies HTTP Basic credentials against a fixed set and, optionally,
// an htpasswd file of bcrypt hashes. Several credentials may be valid at
// once, so a password can be rotated without downtime (add the new one,
// change the subscription, then remove the old).
type Basic struct {
	creds []digest
	file  *bcryptVerifier
}

type digest struct{ user, pass [sha256.Size]byte }

// ErrNoCredentials is returned when a verifier would accept nobody, or
// anybody: the receiver must not start without credentials.
var ErrNoCredentials = errors.New("no webhook credentials configured")

// NewBasic returns a verifier for creds and, when htpasswdPath is not
// empty, the users of that file. Every user and password must be non-empty,
// and there must be at least one credential.
func NewBasic(creds []Credential, htpasswdPath string) (*Basic, error) {
	b := &Basic{}
	for _, c := range creds {
		if c.User == "" || c.Password == "" {
			return nil, ErrNoCredentials
		}
		b.creds = append(b.creds, digest{sha256.Sum256([]byte(c.User)), sha256.Sum256([]byte(c.Password))})
	}
	if htpasswdPath != "" {
		f, err := newBcryptVerifier(htpasswdPath)
		if err != nil {
			return nil, err
		}
		b.file = f
	}
	if len(b.creds) == 0 && b.file == nil {
		return nil, ErrNoCredentials
	}
	return b, nil
}

// Reload re-reads the htpasswd file if it changed; it reports whether it did.
// On error the previous file stays in force.
func (b *Basic) Reload() (bool, error) {
	if b.file == nil {
		return false, nil
	}
	return b.file.reload()
}

// Known reports whether user and password match a static credential or an
// htpasswd password verified recently: the checks that cost no bcrypt, made
// before anything else (the failed-login limiter included), so that the
// catalogue is never slowed down. It compares fixed-size digests in
// constant time and always checks every credential, so neither the lengths
// nor which part was wrong leak through timing.
func (b *Basic) Known(user, password string) bool {
	u, p := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(password))
	ok := 0
	for _, c := range b.creds {
		ok |= subtle.ConstantTimeCompare(u[:], c.user[:]) & subtle.ConstantTimeCompare(p[:], c.pass[:])
	}
	return ok == 1 || b.file != nil && b.file.known(fileKey(user, password))
}

// Verify reports whether user and password match one of the credentials,
// running a bcrypt check of the htpasswd file when Known cannot tell. The
// check waits for its turn only as long as ctx lives; ErrBusy means too
// many are queued (answer "retry later", not "wrong password").
func (b *Basic) Verify(ctx context.Context, user, password string) (bool, error) {
	if b.Known(user, password) {
		return true, nil
	}
	if b.file == nil {
		return false, nil
	}
	return b.file.verify(ctx, user, password, fileKey(user, password))
}

// Checkable reports whether user has a line in the htpasswd file: whether
// Verify could accept a password that Known did not. For anyone else a
// bcrypt check can only fail, so an address over its failed-login limit is
// refused without one.
func (b *Basic) Checkable(user string) bool {
	return b.file != nil && b.file.present(user)
}

// SetClock replaces time.Now for the memory of verified passwords (tests
// move it past their 10 minutes). Call it before the first Verify.
func (b *Basic) SetClock(now func() time.Time) {
	if b.file != nil {
		b.file.now = now
	}
}

// BcryptChecks counts the bcrypt checks run (for a metric).
func (b *Basic) BcryptChecks() uint64 {
	if b.file == nil {
		return 0
	}
	return b.file.checks.Load()
}

// fileKey is the memory's key of a verified pair: length-prefixed, so no
// two user/password pairs share one.
func fileKey(user, password string) [sha256.Size]byte {
	return sha256.Sum256([]byte(strconv.Itoa(len(user)) + ":" + user + password))
}
