package binary_test

import (
	"strings"
	"testing"

	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
)

// TestBinaryWarnsOfUnknownVariables: a misspelt variable under our
// prefixes is warned about at start, naming it and what it resembles (the
// same key in the YAML file is refused); Kubernetes' service links and the
// variables other binaries of ours read are not.
func TestBinaryWarnsOfUnknownVariables(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	p := startReceiver(t, t.TempDir(), "RECEIVER_MAX_BODDY=5MiB", "NATS_SERVICE_HOST=10.0.0.1", "NATS_PORT_4222_TCP=tcp://10.0.0.1:4222", "INTEREST=s5p-no2", "RECEIVER_ADMIN_URL=http://127.0.0.1:9090")
	logs := p.logs.String()
	var warned []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "none of our binaries reads") {
			warned = append(warned, l)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], `"variable":"RECEIVER_MAX_BODDY"`) || !strings.Contains(warned[0], `"did_you_mean":"RECEIVER_MAX_BODY"`) {
		t.Errorf("warnings: %q\n%s", warned, logs)
	}
}

// TestRequiredVariableMisspelt: a required variable written with a typo
// is missing, and the error that says so names the typo and what it
// resembles (issue 38 item 8), in each binary that requires settings; the
// warning at start came only once everything else was valid.
func TestRequiredVariableMisspelt(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	for _, tc := range []struct {
		name, pkg string
		args      []string
		env       map[string]string
		wants     []string
	}{
		{"receiver", "cmd/receiver", nil,
			map[string]string{"RECEIVER_USERNAME": "cdse", "RECEIVER_PASWORD": "a-long-password-1", "RECEIVER_DATA_DIR": t.TempDir()},
			[]string{"RECEIVER_PASSWORD", "RECEIVER_PASWORD", "did you mean RECEIVER_PASSWORD"}},
		{"fetcher", "cmd/fetcher", nil,
			map[string]string{"FETCH_TARGT": "file:///srv/products", "CDSE_USERNAME": "u", "CDSE_PASSWORD": "p"},
			[]string{"FETCH_TARGET is required", "FETCH_TARGT", "did you mean FETCH_TARGET"}},
		{"register", "cmd/register", []string{"list"},
			map[string]string{"CDSE_USERNAME": "u", "CDSE_PASSWROD": "p"},
			[]string{"CDSE_PASSWORD", "CDSE_PASSWROD", "did you mean CDSE_PASSWORD"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := bins.Build(t, "github.com/cdse-jetstream/receiver/"+tc.pkg)
			code, stdout, stderr := bins.Run(t, bin, tc.env, tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (usage)", code)
			}
			for _, want := range tc.wants {
				if !strings.Contains(stderr, want) {
					t.Errorf("no %q in the error:\n%s\n%s", want, stderr, stdout)
				}
			}
		})
	}
}
