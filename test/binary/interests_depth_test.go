package binary_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// deepInterests is an interests file whose one filter is nested in
// 1 000 000 parentheses: the parser overflowed its stack on it, a fatal
// error no recover catches.
func deepInterests() string {
	const n = 1000000
	return "interests:\n  - name: deep\n    filter: " + strings.Repeat("(", n) + "Collection/Name eq 'SENTINEL-3'" + strings.Repeat(")", n) + "\n"
}

const s2Interests = "interests:\n  - name: s2\n    filter: Collection/Name eq 'SENTINEL-2'\n"

// writeFile replaces path at once (rename), as a ConfigMap update does,
// so that the receiver's periodic check never reads half a file.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// tail is the end of a long log, for a failure message (a stack overflow
// prints a long trace).
func tail(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}

// TestReloadRefusesDeeplyNestedFilter: a running receiver whose interests
// file is replaced by one nested 1 000 000 deep and reloaded (SIGHUP)
// refuses it, naming the position, keeps running and routes with the last
// good interests. It used to die of a stack overflow.
func TestReloadRefusesDeeplyNestedFilter(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	file := filepath.Join(t.TempDir(), "interests.yaml")
	writeFile(t, file, s2Interests)
	p := startReceiver(t, t.TempDir(), "INTERESTS_FILE="+file)

	writeFile(t, file, deepInterests())
	// The receiver has taken SIGHUP since before its "receiver started"
	// line was written out (the log is batched after it).
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// The forced reload's refusal follows the SIGHUP line (the periodic
	// check may have refused the file before).
	refused := func(logs string) bool {
		_, after, ok := strings.Cut(logs, "SIGHUP: reloading")
		return ok && strings.Contains(after, "interests file refused")
	}
	deadline := time.After(60 * time.Second)
	for !refused(p.logs.String()) {
		select {
		case <-p.done:
			t.Fatalf("the receiver exited on reloading the interests (%v); logs:\n%s", p.err, tail(p.logs.String()))
		case <-deadline:
			t.Fatalf("no refusal within 60 s of SIGHUP; logs:\n%s", tail(p.logs.String()))
		case <-time.After(50 * time.Millisecond):
		}
	}
	_, after, _ := strings.Cut(p.logs.String(), "SIGHUP: reloading")
	for _, want := range []string{`interest \"deep\" (line 2)`, "at 100: nested deeper than 100 levels"} {
		if !strings.Contains(after, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, tail(after))
		}
	}

	// The last good interests route.
	js, closeNC := natstest.JetStream(t, p.natsURL)
	defer closeNC()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, "CDSE_PRODUCTS", jetstream.OrderedConsumerConfig{FilterSubjects: []string{"cdse.interest.>"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"created-s3.json", "created-s2.json"} {
		if code, resp := p.post(t, fixtures.Notification(t, f)); code != 200 {
			t.Fatalf("%s: %d %s", f, code, resp)
		}
	}
	batch, err := cons.Fetch(2, jetstream.FetchMaxWait(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for m := range batch.Messages() {
		got = append(got, m.Subject())
	}
	if want := "cdse.interest.s2.created.SENTINEL-2.S2MSI2A"; strings.Join(got, " ") != want {
		t.Errorf("interest copies %v, want %s", got, want)
	}
	p.stop(t)
}

// TestInterestsCheckRefusesDeeplyNestedFilter: interests check on the same
// file exits 2 naming the interest and the position, at once (it used to
// die of a stack overflow, which also exits 2).
func TestInterestsCheckRefusesDeeplyNestedFilter(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	file := filepath.Join(t.TempDir(), "interests.yaml")
	writeFile(t, file, deepInterests())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stdout, stderr bins.SyncBuffer
	cmd := exec.CommandContext(ctx, receiverBin(t), "interests", "check", "--file", file)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if code := exitCode(err); code != 2 {
		t.Errorf("exit %d (%v), want 2", code, err)
	}
	for _, want := range []string{`interest "deep" (line 2)`, "at 100: nested deeper than 100 levels"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, tail(stderr.String()))
		}
	}
	if len(stderr.String()) > 2000 {
		t.Errorf("an error of %d bytes:\n%s", len(stderr.String()), tail(stderr.String()))
	}
}

// TestInterestsCheckEndsOnSIGTERM: interests check ends on SIGTERM while
// it works, here reading a product from a standard input that does not
// end; it used to catch the signal and go on (for 30 minutes on a
// pathological filter).
func TestInterestsCheckEndsOnSIGTERM(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	file := filepath.Join(t.TempDir(), "interests.yaml")
	writeFile(t, file, s2Interests)
	var stderr bins.SyncBuffer
	cmd := exec.Command(receiverBin(t), "interests", "check", "--file", file, "--product", "-")
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}) // closed when the command has exited
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	// More than a pipe holds: written once the command reads its input,
	// by when it has its signal handler.
	wrote := make(chan error, 1)
	go func() {
		_, err := io.WriteString(stdin, strings.Repeat(" ", 1<<20))
		wrote <- err
	}()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-done:
		t.Fatalf("exited before reading its input (%v): %s", waitErr, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the command did not read its standard input")
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		t.Logf("exited %s after SIGTERM", time.Since(start).Round(time.Millisecond))
		if code := exitCode(waitErr); code != 1 || !strings.Contains(stderr.String(), "interrupted: terminated signal received") {
			t.Errorf("exit %d (%v), want 1; stderr:\n%s", code, waitErr, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("still running 10 s after SIGTERM; stderr:\n%s", stderr.String())
	}
}
