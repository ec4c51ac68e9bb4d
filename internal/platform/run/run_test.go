package run

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/internal/platform/cli"
	"github.com/cdse-jetstream/receiver/internal/platform/settings"
)

func TestSettings(t *testing.T) {
	for _, tc := range []struct {
		name     string
		load     error
		validate error
		want     string // the usage error's text, "" for none
	}{
		{"valid", nil, nil, ""},
		{"load fails", errors.New("A: not a number"), nil, "usage: invalid configuration:\nA: not a number\nhint"},
		{"validate fails, every problem", nil, errors.Join(errors.New("A bad"), errors.New("B bad")), "usage: invalid configuration:\nA bad\nB bad\nhint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			validated := false
			cfg, err := Settings(func() (int, error) { return 7, tc.load },
				func(int) error { validated = true; return tc.validate }, func() string { return "\nhint" })
			if tc.want == "" {
				if err != nil || cfg != 7 {
					t.Fatalf("got %d, %v", cfg, err)
				}
				return
			}
			if err == nil || err.Error() != tc.want || !errors.Is(err, cli.ErrUsage) {
				t.Fatalf("got %v, want the usage error %q", err, tc.want)
			}
			if tc.load != nil && validated {
				t.Error("settings that did not load were validated")
			}
		})
	}
}

func TestServe(t *testing.T) {
	failed := errors.New("boom")
	for _, tc := range []struct {
		name     string
		unknown  []settings.Unknown
		build    error
		run      error
		wantLogs []string
		notLogs  []string
	}{
		{"runs", nil, nil, nil, []string{"ran"}, []string{"failed to start"}},
		{"build fails", nil, failed, nil, []string{`level=error msg="srv failed to start" error=boom`}, []string{"ran"}},
		{"run fails: its own lines", nil, nil, failed, []string{"ran"}, []string{"failed to start"}},
		{"unknown variables warned of", []settings.Unknown{{Name: "RECEIVER_MAX_BODDY", Suggest: "RECEIVER_MAX_BODY"}, {Name: "NATS_X"}},
			nil, nil, []string{"did_you_mean=RECEIVER_MAX_BODY", "variable=RECEIVER_MAX_BODDY", "variable=NATS_X"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			log := logrus.New()
			log.SetOutput(&out)
			log.SetFormatter(&logrus.TextFormatter{DisableTimestamp: true})
			o := Options{Name: "srv", Log: log, Unknown: tc.unknown, MemoryLimit: func() (uint64, error) { return 0, errors.New("no cgroup") }}
			err := Serve(context.Background(), o, func() (func(context.Context) error, error) {
				return func(context.Context) error { log.Info("ran"); return tc.run }, tc.build
			})
			if want := tc.build != nil || tc.run != nil; want != (err != nil) || want && !errors.Is(err, failed) {
				t.Errorf("Serve: %v, want an error: %v", err, want)
			}
			for _, w := range tc.wantLogs {
				if !strings.Contains(out.String(), w) {
					t.Errorf("log lacks %q:\n%s", w, out.String())
				}
			}
			for _, n := range tc.notLogs {
				if strings.Contains(out.String(), n) {
					t.Errorf("log has %q:\n%s", n, out.String())
				}
			}
		})
	}
}

// TestBounded: the shutdown gets a deadline of its own, even when the
// context that asked for it has ended.
func TestBounded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Bounded(ctx, time.Hour, func(sctx context.Context) error {
		if sctx.Err() != nil {
			return sctx.Err()
		}
		if d, ok := sctx.Deadline(); !ok || time.Until(d) > time.Hour {
			return errors.New("no deadline within the bound")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
