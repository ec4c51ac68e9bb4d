package docs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/stream/complete"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// completeDayBlock is docs/consumers.md's sh block of "Waiting for a
// complete day" (the nats CLI in a cron job).
func completeDayBlock(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "consumers.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "With the `nats` CLI, in a cron job")
	_, rest, ok2 := strings.Cut(rest, "```sh\n")
	block, _, ok3 := strings.Cut(rest, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal(`docs/consumers.md has no sh block after "With the nats CLI, in a cron job"`)
	}
	return block
}

// TestConsumersCompleteDayCLILines runs the block as written against a
// range the receiver's own code (internal/stream/complete) stored and announced:
// the wait ends at once for yesterday when the range holds it, the
// user's job runs, and the announcements are read. run-mosaic, the user's
// own job, is a shell function that says it ran.
func TestConsumersCompleteDayCLILines(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the nats CLI")
	}
	block := completeDayBlock(t)
	lines := strings.Split(strings.TrimSpace(block), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "nats sub ") {
		t.Fatalf("the block no longer ends with its nats sub line: %q", last)
	}
	script := strings.Join(lines[:len(lines)-1], "\n")

	srv := natstest.RunJetStream(t)
	js, closeNC := natstest.JetStream(t, srv.ClientURL())
	defer closeNC()
	ctx := context.Background()
	topo := topology.New(js, topology.Options{Stream: "CDSE_PRODUCTS", SubjectPrefix: "cdse.product", Duplicates: time.Hour})
	log, _ := test.NewNullLogger()
	tr, err := complete.New(topo, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	scope := []complete.Scope{{Name: "l2a-alps", Filter: "Collection/Name eq 'SENTINEL-2'", Events: []event.Kind{event.Created}}}
	midnight := time.Now().UTC().Truncate(24 * time.Hour)
	// A range that ends before midnight: the job must wait.
	if err := tr.Advance(ctx, complete.Listed{Event: event.Created, From: midnight.AddDate(0, 0, -3), Until: midnight.Add(-time.Hour)}, scope); err != nil {
		t.Fatal(err)
	}
	bin := buildNATS(t)
	if out, err := runScript(t, bin, srv.ClientURL(), script, 3*time.Second); err == nil || strings.Contains(out, "mosaic ran") {
		t.Fatalf("the job ran before the range held yesterday whole: %v\n%s", err, out)
	}
	// The next pass passes midnight: the wait ends, the job runs.
	if err := tr.Advance(ctx, complete.Listed{Event: event.Created, From: midnight.Add(-2 * time.Hour), Until: midnight.Add(time.Minute)}, scope); err != nil {
		t.Fatal(err)
	}
	out, err := runScript(t, bin, srv.ClientURL(), script, 30*time.Second)
	yesterday := midnight.AddDate(0, 0, -1).Format("2006-01-02")
	if err != nil || !strings.Contains(out, `"until":"`+midnight.Add(time.Minute).Format(time.RFC3339)) || !strings.Contains(out, "mosaic ran "+yesterday) {
		t.Fatalf("the block: %v\n%s", err, out)
	}
	// The announcements: the last one of each subject, then it waits for
	// more (a cron job would not run this line; a person watching would).
	out, _ = runScript(t, bin, srv.ClientURL(), last, 3*time.Second)
	if !strings.Contains(out, "cdse.complete.l2a-alps.created") || !strings.Contains(out, midnight.Add(time.Minute).Format(time.RFC3339)) {
		t.Errorf("%s:\n%s", last, out)
	}
}

// runScript runs script in bash as a user or a cron job would, with the
// nats at bin first on the PATH, a home of its own (the CLI keeps its
// contexts there), NATS_URL set and run-mosaic (the consumers.md job) a
// function that says it ran, for at most limit; an error when it failed or
// was still running.
func runScript(t *testing.T, bin, natsURL, script string, limit time.Duration) (string, error) {
	t.Helper()
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", `run-mosaic() { echo "mosaic ran $1"; }`+"\n"+script)
	cmd.Env = []string{"PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "NATS_URL=" + natsURL, "NO_COLOR=1"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// The whole group: the script's sleep must not outlive the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("still running after %s", limit)
	}
	return out.String(), err
}
