package fetch

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/simhosts"
)

// TestGetShowsProgress: `fetcher get` shows a download's progress on
// stderr: a bar under a terminal (a pseudo-terminal here), plain lines
// (bytes of the size, rate, time left) elsewhere; stdout keeps the
// result alone.
func TestGetShowsProgress(t *testing.T) {
	t.Parallel()
	const size = 6 << 20
	tests := []struct {
		name     string
		terminal bool
		want     *regexp.Regexp
		// notWant is what the other mode shows.
		notWant string
	}{
		// progressbar's "NN% |███   | (3.0/6.0 MB, 2.0 MB/s) [1s:1s]",
		// redrawn with carriage returns.
		{name: "terminal", terminal: true, want: regexp.MustCompile(`\r.*\d+% \|.*\| \(`), notWant: " left"},
		{name: "pipe", want: regexp.MustCompile(`(?m)^\S+\.zip: [\d.]+ MiB of 6\.0 MiB \(\d+%\), [\d.]+ MiB/s, \d+s left$`), notWant: "\r"},
	}
	bin := bins.Build(t, "github.com/cdse-jetstream/receiver/cmd/fetcher")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// 2 MiB/s: a download of 3 s, long enough for a line.
			h := simhosts.Start(t, cdsesim.Options{Users: map[string]cdsesim.User{user: {Password: password}},
				DownloadRate: 2 << 20, MaxDownloads: -1, Seed: 7}, "127.0.0.1")
			p := h.Sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) { p.ContentLength = size })[0]
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "get", p.ID, "-o", "json")
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "FETCH_TARGET=file://" + t.TempDir(),
				"CDSE_USERNAME=" + user, "CDSE_PASSWORD=" + password, "CDSE_TOKEN_URL=" + h.Catalogue + cdsesim.TokenPath,
				"CDSE_CATALOGUE_URL=" + h.Catalogue + "/odata/v1", "CDSE_DOWNLOAD_URL=" + h.Download, "FETCH_TRUSTED_HOSTS=127.0.0.1"}
			var stdout, stderr bytes.Buffer
			cmd.Stdout = &stdout
			var err error
			if tt.terminal {
				ptmx, tty, perr := pty.Open()
				if perr != nil {
					t.Fatal(perr)
				}
				defer ptmx.Close()
				cmd.Stderr = tty
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				tty.Close()
				// Read until the child's end closes the terminal (EIO).
				_, _ = io.Copy(&stderr, ptmx)
				err = cmd.Wait()
			} else {
				cmd.Stderr = &stderr
				err = cmd.Run()
			}
			if err != nil {
				t.Fatalf("fetcher get: %v\n%s%s", err, stdout.String(), stderr.String())
			}
			if !strings.HasPrefix(strings.TrimSpace(stdout.String()), "{") {
				t.Errorf("stdout is not the result alone: %q", stdout.String())
			}
			if !tt.want.MatchString(stderr.String()) || strings.Contains(stderr.String(), tt.notWant) {
				t.Errorf("stderr has no %s progress (want %v, not %q):\n%q", tt.name, tt.want, tt.notWant, stderr.String())
			}
		})
	}
}
