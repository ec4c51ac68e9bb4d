package auth

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// htpasswd is a parsed htpasswd file of bcrypt hashes. Several lines may
// name the same user (one password per line), for rotation.
type htpasswd struct {
	hashes map[string][][]byte
	mtime  time.Time
}

// dummyHash keeps the time of an unknown user's check close to a known one's.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("no such user"), bcrypt.MinCost)

func parseHTPasswd(path string) (*htpasswd, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("htpasswd: %w", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("htpasswd: %w", err)
	}
	h := &htpasswd{hashes: map[string][][]byte{}, mtime: st.ModTime()}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, hash, ok := strings.Cut(line, ":")
		if !ok || user == "" {
			return nil, fmt.Errorf("htpasswd %s line %d: want user:hash", path, n)
		}
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			// Only bcrypt: the other htpasswd formats (MD5, SHA1, plain) are
			// too cheap to brute-force from a leaked file.
			return nil, fmt.Errorf("htpasswd %s line %d: only bcrypt hashes ($2y$) are accepted (htpasswd -B)", path, n)
		}
		h.hashes[user] = append(h.hashes[user], []byte(hash))
	}
	if len(h.hashes) == 0 {
		return nil, fmt.Errorf("htpasswd %s: no users", path)
	}
	return h, nil
}

// bcryptVerifier checks credentials against an htpasswd file, reloading it
// when it changes (a rotated Kubernetes Secret), with two guards for a public
// endpoint: successful checks are remembered for a while, so the catalogue's
// requests cost one hash lookup instead of one bcrypt (~50 ms of CPU) each;
// and at most two bcrypt checks run at once, so a flood of wrong passwords
// cannot take every core.
type bcryptVerifier struct {
	path string
	sem  chan struct{}

	mu   sync.Mutex
	file *htpasswd
	ok   map[[sha256.Size]byte]time.Time // verified user+password → until
}

const verifiedFor = 10 * time.Minute

func newBcryptVerifier(path string) (*bcryptVerifier, error) {
	f, err := parseHTPasswd(path)
	if err != nil {
		return nil, err
	}
	return &bcryptVerifier{path: path, sem: make(chan struct{}, 2), file: f, ok: map[[sha256.Size]byte]time.Time{}}, nil
}

// reload re-reads the file when its modification time changed. A broken
// file keeps the previous one in force (and is reported).
func (v *bcryptVerifier) reload() (bool, error) {
	st, err := os.Stat(v.path)
	if err != nil {
		return false, fmt.Errorf("htpasswd: %w", err)
	}
	v.mu.Lock()
	same := st.ModTime().Equal(v.file.mtime)
	v.mu.Unlock()
	if same {
		return false, nil
	}
	f, err := parseHTPasswd(v.path)
	if err != nil {
		return false, err
	}
	v.mu.Lock()
	v.file = f
	clear(v.ok) // a removed password must stop working now
	v.mu.Unlock()
	return true, nil
}

func (v *bcryptVerifier) verify(user, password string, key [sha256.Size]byte) bool {
	now := time.Now()
	v.mu.Lock()
	until, cached := v.ok[key]
	hashes := v.file.hashes[user]
	v.mu.Unlock()
	if cached && now.Before(until) {
		return true
	}
	v.sem <- struct{}{}
	defer func() { <-v.sem }()
	match := false
	if len(hashes) == 0 {
		_ = bcrypt.CompareHashAndPassword(dummyHash, []byte(password))
	}
	for _, h := range hashes {
		if bcrypt.CompareHashAndPassword(h, []byte(password)) == nil {
			match = true
		}
	}
	if match {
		v.mu.Lock()
		if len(v.ok) > 10000 {
			clear(v.ok)
		}
		v.ok[key] = now.Add(verifiedFor)
		v.mu.Unlock()
	}
	return match
}
