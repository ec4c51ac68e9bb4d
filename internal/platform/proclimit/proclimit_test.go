package proclimit

import (
	"errors"
	"os"
	"runtime/debug"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

func TestSetMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })

	t.Setenv("GOMEMLIMIT", "") // restored when the test ends
	os.Unsetenv("GOMEMLIMIT")
	if got := SetMemoryLimit(memlimit.Limit(1_000_000_000)); got != 900_000_000 {
		t.Errorf("set %d, want 90 %% of 1e9", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 900_000_000 {
		t.Errorf("runtime limit %d", got)
	}
	debug.SetMemoryLimit(prev)
	noLimit := func() (uint64, error) { return 0, memlimit.ErrNoLimit }
	if got := SetMemoryLimit(noLimit); got != 0 {
		t.Errorf("without a cgroup limit: set %d", got)
	}
	broken := func() (uint64, error) { return 0, errors.New("permission denied") }
	if got := SetMemoryLimit(broken); got != 0 || debug.SetMemoryLimit(-1) != prev {
		t.Errorf("unreadable cgroup: set %d", got)
	}
	// Set but empty is the runtime's "no limit given", not the operator's
	// choice: automemlimit would take its presence as one and set nothing.
	t.Setenv("GOMEMLIMIT", "")
	if got := SetMemoryLimit(memlimit.Limit(1_000_000_000)); got != 900_000_000 {
		t.Errorf("GOMEMLIMIT set to the empty string: set %d, want 90 %% of 1e9", got)
	}
	debug.SetMemoryLimit(prev)
	t.Setenv("GOMEMLIMIT", "64MiB")
	if got := SetMemoryLimit(memlimit.Limit(1_000_000_000)); got != 0 || debug.SetMemoryLimit(-1) != prev {
		t.Errorf("GOMEMLIMIT set by the operator was overridden: %d", got)
	}
}
