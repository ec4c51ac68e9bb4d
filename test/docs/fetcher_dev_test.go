package docs

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/scrape"
)

// start runs bin in dir with args and env over PATH, stopped at the end
// of the test; its output is in the returned buffer.
func start(t *testing.T, dir, bin string, env []string, args ...string) *bins.SyncBuffer {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	out := &bins.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s:\n%s", filepath.Base(bin), out)
		}
	})
	return out
}

// TestMakeRunFetcher is `make run`, then `make run-fetcher` (issue 38
// item 1): the fetcher of configs/fetcher-dev.yaml logs in to the
// receiver of configs/dev.yaml and becomes ready, storing into ./products.
// Only the addresses are moved to free ports (the environment wins over
// the files), beside whatever runs on the machine.
func TestMakeRunFetcher(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	receiver := bins.Build(t, "github.com/cdse-jetstream/receiver/cmd/receiver")
	fetcher := bins.Build(t, "github.com/cdse-jetstream/receiver/cmd/fetcher")
	ports := natstest.FreePorts(t, 4)
	dir := t.TempDir()
	start(t, dir, receiver, []string{fmt.Sprintf("RECEIVER_ADDR=127.0.0.1:%d", ports[0]), fmt.Sprintf("RECEIVER_ADMIN_ADDR=127.0.0.1:%d", ports[1]),
		fmt.Sprintf("NATS_EMBEDDED_ADDR=127.0.0.1:%d", ports[2])}, "--config", filepath.Join(root, "configs", "dev.yaml"))
	if err := scrape.Status(fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1]), http.StatusOK, 30*time.Second); err != nil {
		t.Fatalf("receiver not ready: %v", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "products"), 0o755); err != nil { // what make run-fetcher does
		t.Fatal(err)
	}
	logs := start(t, dir, fetcher, []string{fmt.Sprintf("NATS_URL=nats://127.0.0.1:%d", ports[2]), fmt.Sprintf("FETCH_ADMIN_ADDR=127.0.0.1:%d", ports[3]),
		"CDSE_USERNAME=someone@example.org", "CDSE_PASSWORD=pw"}, "--config", filepath.Join(root, "configs", "fetcher-dev.yaml"))
	if err := scrape.Status(fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[3]), http.StatusOK, 30*time.Second); err != nil {
		t.Fatalf("fetcher not ready: %v\n%s", err, logs)
	}
}
