package binary_test

import (
	"bufio"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
)

// TestSimPrintsEveryURLToExport: cdse-sim prints each address a fetcher
// needs as a NAME=value line to paste (issue 38 item 4), the download
// host's too, whether it serves downloads itself or on --download-addr.
func TestSimPrintsEveryURLToExport(t *testing.T) {
	t.Parallel()
	bin := bins.Build(t, "github.com/cdse-jetstream/receiver/cmd/cdse-sim")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"downloads on the catalogue's host", nil},
		{"a download host of its own", []string{"-download-addr", "127.0.0.1:0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0"}, tc.args...)...)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			// The banner ends with the publish line; the pipe's reads are
			// bounded by the kill below if it never comes.
			timer := time.AfterFunc(20*time.Second, func() { _ = cmd.Process.Kill() })
			defer timer.Stop()
			vars := map[string]string{}
			for sc := bufio.NewScanner(out); sc.Scan(); {
				line := strings.TrimSpace(sc.Text())
				// Each line pasted into a shell: NAME=value, then a
				// comment at most.
				if k, v, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "CDSE_") {
					v, comment, _ := strings.Cut(v, " ")
					if c := strings.TrimSpace(comment); c != "" && !strings.HasPrefix(c, "#") {
						t.Errorf("%q: not a line a shell takes", line)
					}
					vars[k] = v
				}
				if strings.HasPrefix(line, "publish products") {
					break
				}
			}
			for _, k := range []string{"CDSE_TOKEN_URL", "CDSE_CATALOGUE_URL", "CDSE_DOWNLOAD_URL"} {
				if !strings.HasPrefix(vars[k], "http://127.0.0.1:") {
					t.Errorf("%s=%q; printed %v", k, vars[k], vars)
				}
			}
			if !strings.HasSuffix(vars["CDSE_DOWNLOAD_URL"], "/odata/v1") {
				t.Errorf("CDSE_DOWNLOAD_URL=%q: not the OData root", vars["CDSE_DOWNLOAD_URL"])
			}
		})
	}
}
