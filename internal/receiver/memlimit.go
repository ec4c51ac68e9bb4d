package receiver

import (
	"errors"
	"io/fs"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// cgroup files that hold the container's memory limit: v2, then v1.
var cgroupMemoryFiles = []string{
	"/sys/fs/cgroup/memory.max",
	"/sys/fs/cgroup/memory/memory.limit_in_bytes",
}

// cgroupMemoryLimit returns the memory limit of the container the process
// runs in, if it has one. readFile is os.ReadFile outside tests.
func cgroupMemoryLimit(readFile func(string) ([]byte, error)) (int64, bool) {
	for _, f := range cgroupMemoryFiles {
		b, err := readFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, false
		}
		s := strings.TrimSpace(string(b))
		n, err := strconv.ParseInt(s, 10, 64)
		// "max" (v2) or a page-rounded near-maximum (v1) mean no limit.
		if err != nil || n <= 0 || n >= 1<<62 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// setMemoryLimit gives the Go runtime a soft memory limit of 90 % of the
// container's limit, unless GOMEMLIMIT says otherwise: the garbage
// collector then works harder as the process nears the limit instead of
// letting the kernel kill it (the embedded NATS server's caches live in
// this process too). The remaining 10 % is for what the runtime does not
// count exactly (fragmentation, the kernel's own accounting). It returns
// the limit set, or 0.
func setMemoryLimit(readFile func(string) ([]byte, error)) int64 {
	// The process's own environment, not Run's getenv: it is what the
	// runtime read GOMEMLIMIT from.
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	limit, ok := cgroupMemoryLimit(readFile)
	if !ok {
		return 0
	}
	soft := limit / 10 * 9
	debug.SetMemoryLimit(soft)
	return soft
}
