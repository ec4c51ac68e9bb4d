package pullsettings

import (
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Pull
		bad  bool
	}{
		{"off", Pull{PullInterval: time.Millisecond}, false},
		{"default interval", Pull{PullSubscription: "sub", PullInterval: Default().PullInterval}, false},
		{"too short", Pull{PullSubscription: "sub", PullInterval: 99 * time.Millisecond}, true},
	} {
		if err := tc.p.Validate(); (err != nil) != tc.bad {
			t.Errorf("%s: %v, want a problem: %v", tc.name, err, tc.bad)
		}
	}
}
