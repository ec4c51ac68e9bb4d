// Package auth holds the credentials checks of the receiver: the HTTP Basic
// verifier that guards the webhook. (The OAuth2 token sources for the
// catalogue belong here too, with the register command.)
package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
)

// Credential is one user name and password the catalogue may present.
type Credential struct {
	User     string
	Password string
}

// Basic verifies HTTP Basic credentials against a fixed set. Several
// credentials may be valid at once, so a password can be rotated without
// downtime (register the new one with the catalogue, then drop the old).
type Basic struct {
	creds []digest
}

type digest struct{ user, pass [sha256.Size]byte }

// ErrNoCredentials is returned when a verifier would accept nobody, or
// anybody: the receiver must not start without credentials.
var ErrNoCredentials = errors.New("no webhook credentials configured")

// NewBasic returns a verifier for creds; every user and password must be
// non-empty.
func NewBasic(creds ...Credential) (*Basic, error) {
	b := &Basic{}
	for _, c := range creds {
		if c.User == "" || c.Password == "" {
			return nil, ErrNoCredentials
		}
		b.creds = append(b.creds, digest{sha256.Sum256([]byte(c.User)), sha256.Sum256([]byte(c.Password))})
	}
	if len(b.creds) == 0 {
		return nil, ErrNoCredentials
	}
	return b, nil
}

// Verify reports whether user and password match one of the credentials.
// It compares fixed-size digests in constant time and always checks every
// credential, so neither the lengths nor which part was wrong leak through
// timing.
func (b *Basic) Verify(user, password string) bool {
	u, p := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(password))
	ok := 0
	for _, c := range b.creds {
		ok |= subtle.ConstantTimeCompare(u[:], c.user[:]) & subtle.ConstantTimeCompare(p[:], c.pass[:])
	}
	return ok == 1
}
