package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// TestCreateWaitsForTheEndpoint: register create against an endpoint
// that is not up yet fails at the preflight and registers nothing; with
// --preflight-wait it retries until the receiver comes up (as the chart's
// Job does while the release starts), then registers.
func TestCreateWaitsForTheEndpoint(t *testing.T) {
	w := newSim(t)
	port := natstest.FreePort(t)
	endpoint := fmt.Sprintf("http://127.0.0.1:%d/notifications", port)
	args := []string{"create", "--endpoint", endpoint, "--insecure-endpoint", "--filter", "Collection/Name eq 'SENTINEL-2'"}
	code, _, errOut := w.runRegister(t, args...)
	if code != 1 || !strings.Contains(errOut, "preflight: unreachable") || strings.Contains(w.register(t, "-o", "json", "list"), endpoint) {
		t.Fatalf("create before the receiver is up: exit %d\n%s", code, errOut)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.Register(t), append(args, "--preflight-wait", "60s")...)
	cmd.Env = os.Environ()
	for k, v := range w.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() { // until the first retry is announced
		log.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "again in 5s") {
			break
		}
	}
	w.startReceiver(t, func(c *config.Config) { c.Addr = fmt.Sprintf("127.0.0.1:%d", port) })
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
	}
	if err := cmd.Wait(); err != nil || !strings.Contains(log.String(), "again in 5s") || !strings.Contains(w.register(t, "-o", "json", "list"), endpoint) {
		t.Fatalf("create --preflight-wait: %v\n%s", err, log.String())
	}
}
