// Package benchkit holds what the benchmark commands (bench/cmd/bench,
// bench/cmd/grow) share: the webhook login of the receiver under test, the
// notification the load sends, building the binaries, free loopback ports,
// and reading a process's memory from /proc.
package benchkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// The webhook login of every server under test.
const (
	User     = "bench"
	Password = "bench-password-0123456789"
)

// FixtureID is the ProductId of Template, which the load generator
// replaces per request.
const FixtureID = "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f"

const fixture = "testdata/notifications/created-s2.json"

// Template is the Sentinel-2 created notification the load sends, compact
// as the catalogue sends it (about 6.8 KB). Run from the repository root.
func Template() ([]byte, error) {
	indented, err := os.ReadFile(fixture)
	if err != nil {
		return nil, fmt.Errorf("run from the repository root: %w", err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, indented); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Bin is a binary to build: its file name and package.
type Bin struct{ Out, Pkg string }

// Build builds bins into dir.
func Build(dir string, bins ...Bin) error {
	for _, b := range bins {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, b.Out), b.Pkg).CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v\n%s", b.Pkg, err, out)
		}
	}
	return nil
}

// ProcStatus reads a size field of /proc/<pid>/status ("VmRSS:",
// "VmHWM:") in bytes; 0 when it cannot.
func ProcStatus(pid int, field string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field) {
			f := strings.Fields(line)
			if len(f) >= 2 {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}

// FreePorts returns n distinct loopback ports that were free a moment ago
// (all held open together, so that none is handed out twice).
func FreePorts(n int) ([]string, error) {
	var out []string
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		out = append(out, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}
	return out, nil
}
