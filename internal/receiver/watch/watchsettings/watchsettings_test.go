package watchsettings

import (
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		w     Watch
		login bool
		want  string // a substring of the one problem, "" for none
	}{
		{"default, no login", Default(), false, ""},
		{"default, login", Default(), true, ""},
		{"negative", Watch{WatchInterval: -time.Minute, WatchQuiet: time.Hour}, true, "must not be negative"},
		{"too often", Watch{WatchInterval: time.Second, WatchQuiet: time.Hour}, true, "shorter than 1m"},
		{"quiet past the pause", Watch{WatchQuiet: 60 * 24 * time.Hour}, true, "WATCH_QUIET"},
		{"id without login", Watch{WatchSubscription: "s", WatchInterval: time.Hour, WatchQuiet: time.Hour}, false, "need the catalogue login"},
		{"resume without interval", Watch{WatchResume: true, WatchQuiet: time.Hour}, true, "need WATCH_INTERVAL"},
	} {
		err := tc.w.Validate(tc.login)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: unexpected %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%s: %v, want the one problem %q", tc.name, err, tc.want)
		}
	}
}
