package binary_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
)

// TestBinaryHtpasswd: `receiver htpasswd USER` makes the line the rotation
// runbook needs (before, only Apache's htpasswd did, which the project does
// not install), from a file or standard input, and a receiver given that
// line accepts the password; a short password or a bad user is a usage
// error.
func TestBinaryHtpasswd(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const newPassword = "rotated password with spaces "
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "new-password")
	if err := os.WriteFile(pwFile, []byte(newPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	line, errOut, code := command(t, nil, "htpasswd", "rotator", "--password-file", pwFile)
	if code != 0 || !strings.HasPrefix(line, "rotator:$2") || strings.Contains(line, newPassword) {
		t.Fatalf("htpasswd --password-file: exit %d: %q %s", code, line, errOut)
	}
	// From standard input: its first line.
	cmd := exec.Command(receiverBin(t), "htpasswd", "stdin-user")
	cmd.Stdin = strings.NewReader(newPassword + "\nignored\n")
	stdinLine, err := cmd.Output()
	if err != nil || !strings.HasPrefix(string(stdinLine), "stdin-user:$2") {
		t.Fatalf("htpasswd from stdin: %v %q", err, stdinLine)
	}
	htpasswd := filepath.Join(dir, "htpasswd")
	if err := os.WriteFile(htpasswd, []byte(line+string(stdinLine)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startReceiver(t, t.TempDir(), "RECEIVER_HTPASSWD_FILE="+htpasswd)
	body := fixtures.Notification(t, "created-s2.json")
	for _, u := range []string{"rotator", "stdin-user"} {
		if code, answer := p.postAs(t, u, newPassword, body); code != 200 {
			t.Errorf("%s with the password of its line: %d %s", u, code, answer)
		}
	}
	if code, _ := p.postAs(t, "rotator", strings.TrimSpace(newPassword), body); code != 401 {
		t.Errorf("the password less its trailing space passed: %d (it must be used exactly as written)", code)
	}
	// Usage errors.
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("short\n"), 0o600)
	for _, args := range [][]string{{"htpasswd", "u", "--password-file", short}, {"htpasswd", "a:b", "--password-file", pwFile}, {"htpasswd"}} {
		if _, errOut, code := command(t, nil, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", args, code, errOut)
		}
	}
}
