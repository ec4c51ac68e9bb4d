// Package bins builds the project's binaries for the tests that run them
// as a user would (whole-binary, end-to-end and chaos tests): each binary
// once per test process, into a directory removed by Cleanup (call it from
// TestMain).
package bins

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex
	dir   string
	built = map[string]string{}
)

// Build compiles the main package pkg (an import path such as
// github.com/cdse-jetstream/receiver/cmd/register) with extra go build
// arguments (e.g. -ldflags) and returns the binary's path; a second call
// with the same arguments returns the first build.
func Build(t testing.TB, pkg string, args ...string) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	key := fmt.Sprint(pkg, args)
	if bin, ok := built[key]; ok {
		return bin
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "cdse-bins")
		if err != nil {
			t.Fatal(err)
		}
		dir = d
	}
	bin := filepath.Join(dir, fmt.Sprintf("%s-%d", path.Base(pkg), len(built)))
	cmd := exec.Command("go", append(append([]string{"build"}, args...), "-o", bin, pkg)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	built[key] = bin
	return bin
}

// Cleanup removes every binary built.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
	}
}

// Run runs bin with args and only the environment env (and PATH), and
// returns its exit code and output.
func Run(t testing.TB, bin string, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", bin, err)
	}
	return code, out.String(), errOut.String()
}

// Register is the register binary.
func Register(t testing.TB) string {
	t.Helper()
	return Build(t, "github.com/cdse-jetstream/receiver/cmd/register")
}

// SyncBuffer is a bytes.Buffer written by a process (its Stdout, Stderr)
// and read by the test while it runs.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
