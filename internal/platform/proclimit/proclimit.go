// Package proclimit sets what the Go runtime should know of the process's
// container, for every long-running binary (the receiver, the fetcher).
package proclimit

import (
	"math"
	"os"
	"strings"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// SetMemoryLimit gives the Go runtime a soft memory limit of 90 % of the
// container's limit (cgroup v1 or v2, read by automemlimit, as alertmanager
// does), unless GOMEMLIMIT is set: the garbage collector then works harder
// as the process nears the limit instead of letting the kernel kill it (the
// receiver's embedded NATS server's caches, the fetcher's S3 parts). The remaining
// 10 % is for what the runtime does not count exactly (fragmentation, the
// kernel's own accounting). It returns the limit set, or 0. provider is
// memlimit.FromCgroup outside tests.
func SetMemoryLimit(provider memlimit.Provider) int64 {
	// The process's own environment, not Run's getenv: it is what the
	// runtime read GOMEMLIMIT from. Set but empty is no limit to the runtime,
	// but automemlimit takes any GOMEMLIMIT present as the operator's and
	// would set nothing: an empty one is dropped first.
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok && strings.TrimSpace(v) != "" {
		return 0
	} else if ok {
		os.Unsetenv("GOMEMLIMIT")
	}
	limit, err := memlimit.Set(memlimit.WithRatio(0.9), memlimit.WithProvider(provider))
	if err != nil || limit <= 0 || limit == math.MaxInt64 {
		return 0
	}
	return limit
}
