package natsconn

import "testing"

func TestVersionAtLeast(t *testing.T) {
	for _, c := range []struct {
		v, min string
		want   bool
	}{
		{"2.10.0", "2.10.0", true},
		{"v2.10.27", "2.10.0", true},
		{"2.9.25", "2.10.0", false},
		{"2.11.0-RC.1", "2.10.0", true},
		{"3.0.0", "2.10.0", true},
		{"2.10", "2.10.0", false},
		{"", "2.10.0", false},
		{"2.x.0", "2.10.0", false},
	} {
		if got := VersionAtLeast(c.v, c.min); got != c.want {
			t.Errorf("VersionAtLeast(%q, %q) = %v, want %v", c.v, c.min, got, c.want)
		}
	}
}
