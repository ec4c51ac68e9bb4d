package receiver

import (
	"errors"
	"io/fs"
	"runtime/debug"
	"testing"
)

func files(m map[string]string) func(string) ([]byte, error) {
	return func(name string) ([]byte, error) {
		v, ok := m[name]
		if !ok {
			return nil, fs.ErrNotExist
		}
		if v == "EACCES" {
			return nil, errors.New("permission denied")
		}
		return []byte(v), nil
	}
}

func TestCgroupMemoryLimit(t *testing.T) {
	const v2, v1 = "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
		ok    bool
	}{
		{"cgroup v2 limit", map[string]string{v2: "268435456\n"}, 268435456, true},
		{"cgroup v2 without limit", map[string]string{v2: "max\n"}, 0, false},
		{"cgroup v1 limit", map[string]string{v1: "134217728\n"}, 134217728, true},
		{"cgroup v1 without limit", map[string]string{v1: "9223372036854771712\n"}, 0, false},
		{"v2 wins over v1", map[string]string{v2: "1048576", v1: "2097152"}, 1048576, true},
		{"no cgroup files", map[string]string{}, 0, false},
		{"unreadable", map[string]string{v2: "EACCES", v1: "2097152"}, 0, false},
		{"garbage", map[string]string{v2: "lots"}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := cgroupMemoryLimit(files(tc.files))
			if got != tc.want || ok != tc.ok {
				t.Errorf("got %d %v, want %d %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestSetMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })

	t.Setenv("GOMEMLIMIT", "")
	limited := files(map[string]string{"/sys/fs/cgroup/memory.max": "1000000000"})
	if got := setMemoryLimit(limited); got != 900_000_000 {
		t.Errorf("set %d, want 90 %% of 1e9", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 900_000_000 {
		t.Errorf("runtime limit %d", got)
	}
	debug.SetMemoryLimit(prev)
	if got := setMemoryLimit(files(nil)); got != 0 || debug.SetMemoryLimit(-1) != prev {
		t.Errorf("without a cgroup limit: set %d", got)
	}
	t.Setenv("GOMEMLIMIT", "64MiB")
	if got := setMemoryLimit(limited); got != 0 || debug.SetMemoryLimit(-1) != prev {
		t.Errorf("GOMEMLIMIT set by the operator was overridden: %d", got)
	}
}
