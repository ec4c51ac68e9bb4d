package auth

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
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
// when it changes (a rotated Kubernetes Secret), with guards for a public
// endpoint: successful checks are remembered for a while, so the catalogue's
// requests cost one hash lookup instead of one bcrypt (~50 ms of CPU) each;
// at most two bcrypt checks run at once and at most maxWaiting wait for
// their turn, each only as long as its request lives, so a flood of wrong
// passwords can take neither every core nor an unbounded pile of
// goroutines.
type bcryptVerifier struct {
	path string
	sem  chan struct{}
	// waiting counts the checks queued for sem.
	waiting atomic.Int32
	// checks counts bcrypt checks run (a metric).
	checks atomic.Uint64
	// compare is bcrypt.CompareHashAndPassword (tests hold it to order
	// a check against a reload).
	compare func(hash, password []byte) error
	// now is time.Now (tests move it past verifiedFor).
	now func() time.Time

	mu   sync.Mutex
	file *htpasswd
	// gen counts reloads: a check that began before one remembers its
	// success only if the hash it matched is still in the file in force.
	gen uint64
	ok  map[[sha256.Size]byte]verified // verified user+password → until
}

// verified is a remembered success: until when, and the user and hash line
// it matched. A reload keeps it only while that user still has that hash:
// a password removed from the file stops working at once, and one whose
// line did not change is not checked again (the catalogue would otherwise
// need a bcrypt check after every reload, and meet the failed-login limiter
// of a noisy address each time).
type verified struct {
	until time.Time
	user  string
	hash  string
}

const verifiedFor = 10 * time.Minute

// maxWaiting bounds the checks queued behind the two running ones; beyond
// it a check is refused at once with ErrBusy.
const maxWaiting = 16

// ErrBusy means too many bcrypt checks are running or waiting: the
// request should be answered "retry later", not "wrong password".
var ErrBusy = errors.New("too many password checks in progress")

func newBcryptVerifier(path string) (*bcryptVerifier, error) {
	f, err := parseHTPasswd(path)
	if err != nil {
		return nil, err
	}
	return &bcryptVerifier{path: path, sem: make(chan struct{}, 2), compare: bcrypt.CompareHashAndPassword, now: time.Now, file: f, ok: map[[sha256.Size]byte]verified{}}, nil
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
	v.gen++
	// A removed password must stop working now; the others stay known.
	for k, e := range v.ok {
		if !f.has(e.user, e.hash) {
			delete(v.ok, k)
		}
	}
	v.mu.Unlock()
	return true, nil
}

// has says whether user has the hash line hash.
func (h *htpasswd) has(user, hash string) bool {
	for _, x := range h.hashes[user] {
		if string(x) == hash {
			return true
		}
	}
	return false
}

// present says whether user has a line in the file in force: whether a
// bcrypt check could accept any password of theirs.
func (v *bcryptVerifier) present(user string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.file.hashes[user]) > 0
}

// known says whether key was verified recently: no bcrypt.
func (v *bcryptVerifier) known(key [sha256.Size]byte) bool {
	v.mu.Lock()
	e, ok := v.ok[key]
	v.mu.Unlock()
	return ok && v.now().Before(e.until)
}

// verify runs the bcrypt check, waiting for a turn at most as long as ctx.
func (v *bcryptVerifier) verify(ctx context.Context, user, password string, key [sha256.Size]byte) (bool, error) {
	if v.known(key) {
		return true, nil
	}
	if v.waiting.Add(1) > maxWaiting {
		v.waiting.Add(-1)
		return false, ErrBusy
	}
	select {
	case v.sem <- struct{}{}:
		v.waiting.Add(-1)
	case <-ctx.Done():
		v.waiting.Add(-1)
		return false, fmt.Errorf("password check: %w", ctx.Err())
	}
	defer func() { <-v.sem }()
	// The hashes are read once the turn has come (a reload may have come
	// first). A success is remembered only if the hash it matched is in
	// the file in force when the check ends; if a reload removed it, or a
	// failure may have met an old file, the check runs again on the new
	// one, so that a removed password is neither remembered nor, this
	// once, accepted.
	for range 3 {
		v.mu.Lock()
		gen, hashes := v.gen, v.file.hashes[user]
		v.mu.Unlock()
		v.checks.Add(1)
		var matched []byte
		if len(hashes) == 0 {
			_ = v.compare(dummyHash, []byte(password))
		}
		for _, h := range hashes {
			if v.compare(h, []byte(password)) == nil && matched == nil {
				matched = h
			}
		}
		v.mu.Lock()
		if v.gen != gen && (matched == nil || !v.file.has(user, string(matched))) {
			v.mu.Unlock()
			continue
		}
		if matched != nil {
			if len(v.ok) > 10000 {
				clear(v.ok)
			}
			v.ok[key] = verified{until: v.now().Add(verifiedFor), user: user, hash: string(matched)}
		}
		v.mu.Unlock()
		return matched != nil, nil
	}
	return false, ErrBusy // the file changed under every try: let the sender retry
}
