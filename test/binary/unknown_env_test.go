package binary_test

import (
	"strings"
	"testing"
)

// TestBinaryWarnsOfUnknownVariables: a misspelt variable under our
// prefixes is warned about at start, naming it and what it resembles (the
// same key in the YAML file is refused); Kubernetes' service links and the
// variables other binaries of ours read are not.
func TestBinaryWarnsOfUnknownVariables(t *testing.T) {
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
