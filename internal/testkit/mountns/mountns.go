// Package mountns runs a test in a private mount namespace with a tmpfs
// of its own, so that disk cases (a full file system, a volume unmounted)
// use a real file system and a crashed test leaves no mount behind: the
// namespace, and its mounts, end with the process.
package mountns

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

const (
	envDir  = "MOUNTNS_TEST_DIR"
	envName = "MOUNTNS_TEST_NAME"
)

// Tmpfs gives a directory with a tmpfs of size (as mount's size=, "16m")
// mounted on it, in a private mount namespace. The calling top-level test
// runs again in a child process (unshare -m) where here is true and dir
// is the mount; in the parent here is false, the child's result is the
// test's, and the caller returns. Without root it skips, unless CI is set:
// under CI a mount that fails fails the test.
func Tmpfs(t *testing.T, size string) (dir string, here bool) {
	t.Helper()
	if os.Getenv(envName) == t.Name() && os.Getenv(envDir) != "" {
		return os.Getenv(envDir), true
	}
	if strings.Contains(t.Name(), "/") {
		t.Fatal("mountns.Tmpfs runs top-level tests only")
	}
	if os.Geteuid() != 0 && os.Getenv("CI") == "" {
		t.Skip("a mount namespace needs root (under CI this fails instead)")
	}
	dir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "-m", "--propagation", "private", "sh", "-c",
		`mount -t tmpfs -o size="$1" tmpfs "$2" && exec "$3" -test.run "$4" -test.count=1 -test.v`,
		"sh", size, dir, os.Args[0], "^"+regexp.QuoteMeta(t.Name())+"$")
	cmd.Env = append(os.Environ(), envDir+"="+dir, envName+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s in a mount namespace: %v\n%s", t.Name(), err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s did not pass in its mount namespace:\n%s", t.Name(), out)
	}
	return "", false
}
