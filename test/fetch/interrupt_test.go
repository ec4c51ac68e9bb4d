package fetch

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/s3test"
)

// partialFile is the partial file a download holds under the directory
// target dir, and its size ("" and 0 when there is none).
func partialFile(dir string) (path string, size int64) {
	_ = filepath.WalkDir(filepath.Join(dir, ".partial"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".part") {
			if info, err := d.Info(); err == nil {
				path, size = p, info.Size()
			}
		}
		return nil
	})
	return path, size
}

// multipartUploads are the bucket's multipart uploads not completed nor
// aborted.
func multipartUploads(t *testing.T, store *s3test.Server) int {
	t.Helper()
	out, err := store.Client().ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(store.Bucket)})
	if err != nil {
		t.Fatalf("list multipart uploads: %v", err)
	}
	return len(out.Uploads)
}

// waitFor polls cond every 20 ms until it holds, failing the test with
// what after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
	}
}

// countdown is the fetcher's line while running downloads finish after
// a first Ctrl-C.
var countdown = regexp.MustCompile(`stopping: 1 downloads? running, cut in (\d+)s; Ctrl-C again to stop now`)

// TestCtrlCTwiceIntoDirectory: Ctrl-C (SIGINT) during a slow download
// says, every 5 s, how many downloads are running, when they are cut, and
// that a second Ctrl-C stops at once (it used to wait
// FETCH_SHUTDOWN_TIMEOUT in silence); the second one does (it used to be
// ignored): the fetcher exits within a few seconds, its partial file
// kept, and the log says the download resumes from it (issue 38 item 7).
func TestCtrlCTwiceIntoDirectory(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const size = 16 << 20
	w.sim.SetDownloadRate(512 << 10) // 32 s
	p := w.sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) { p.ContentLength = size })[0]
	dir := t.TempDir()
	f := w.startFetcher(t, map[string]string{"FETCH_TARGET": "file://" + dir, "FETCH_SHUTDOWN_TIMEOUT": "60s"})
	w.notify(t, p)
	waitFor(t, 20*time.Second, "a partial file with bytes", func() bool { _, n := partialFile(dir); return n > 0 })

	f.signal(syscall.SIGINT)
	waitLog(t, f.logs, "Ctrl-C again to stop now", 10*time.Second)
	first := countdown.FindStringSubmatch(f.logs.String())
	if first == nil {
		t.Fatalf("no countdown line %v:\n%s", countdown, f.logs)
	}
	// The next line, 5 s on, counts down.
	waitFor(t, 10*time.Second, "a second countdown line", func() bool { return len(countdown.FindAllString(f.logs.String(), -1)) >= 2 })
	all := countdown.FindAllStringSubmatch(f.logs.String(), -1)
	if a, _ := strconv.Atoi(first[1]); func() bool { b, _ := strconv.Atoi(all[1][1]); return b >= a }() {
		t.Errorf("the countdown does not count down: %ss, then %ss", first[1], all[1][1])
	}

	start := time.Now()
	f.signal(syscall.SIGINT)
	if code := f.exit(10 * time.Second); code != 0 {
		t.Errorf("exit code %d after the second Ctrl-C, want 0", code)
	}
	t.Logf("exited %s after the second Ctrl-C", time.Since(start).Round(time.Millisecond))
	if path, n := partialFile(dir); n == 0 || n >= size {
		t.Errorf("partial file %q of %d bytes after the second Ctrl-C, want it kept, short of %d", path, n, size)
	}
	if logs := f.logs.String(); !strings.Contains(logs, "partial files are kept") || !strings.Contains(logs, "resume") {
		t.Errorf("the log does not say the partial is kept to resume from:\n%s", logs)
	}
}

// TestCtrlCTwiceIntoS3: into S3, the second Ctrl-C aborts the multipart
// upload (none is left in the bucket 5 s later) and the log says the
// product restarts from the start on redelivery: S3 keeps no partial
// across processes (it used to say they resume).
func TestCtrlCTwiceIntoS3(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	store := s3test.Start(t)
	w.sim.SetDownloadRate(1 << 20) // the first 5 MiB part in 5 s; 40 s in all
	p := w.sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) { p.ContentLength = 40 << 20 })[0]
	env := store.Env()
	env["FETCH_TARGET"], env["FETCH_SHUTDOWN_TIMEOUT"] = "s3://"+store.Bucket+"/products", "60s"
	f := w.startFetcher(t, env)
	w.notify(t, p)
	waitFor(t, 30*time.Second, "a multipart upload in the bucket", func() bool { return multipartUploads(t, store) > 0 })

	f.signal(syscall.SIGINT)
	waitLog(t, f.logs, "Ctrl-C again to stop now", 10*time.Second)
	start := time.Now()
	f.signal(syscall.SIGINT)
	waitFor(t, 5*time.Second, "no multipart upload left after the second Ctrl-C", func() bool { return multipartUploads(t, store) == 0 })
	if code := f.exit(10 * time.Second); code != 0 {
		t.Errorf("exit code %d after the second Ctrl-C, want 0", code)
	}
	t.Logf("exited %s after the second Ctrl-C", time.Since(start).Round(time.Millisecond))
	logs := f.logs.String()
	if !strings.Contains(logs, "restarts from the start on redelivery") {
		t.Errorf("the log does not say the product restarts from the start:\n%s", logs)
	}
	if strings.Contains(logs, "resume on redelivery") {
		t.Errorf("the log says an S3 download resumes:\n%s", logs)
	}
}

// TestGetInterrupted: `fetcher get` cut by Ctrl-C says whether a rerun
// resumes: into a directory, from which byte (the partial file's size);
// into S3, that it starts over, the multipart upload aborted. It used to
// say only "context canceled".
func TestGetInterrupted(t *testing.T) {
	t.Parallel()
	bin := bins.Build(t, "github.com/cdse-jetstream/receiver/cmd/fetcher")
	store := s3test.Start(t)
	for _, tc := range []struct {
		name string
		env  func(dir string) map[string]string
		// under is true once bytes are held where the target keeps them.
		under func(dir string) bool
		want  func(dir string) string
		// after checks the target after the exit.
		after func(t *testing.T, dir string)
	}{
		{
			name:  "directory",
			env:   func(dir string) map[string]string { return map[string]string{"FETCH_TARGET": "file://" + dir} },
			under: func(dir string) bool { _, n := partialFile(dir); return n > 0 },
			want: func(dir string) string {
				_, n := partialFile(dir)
				return fmt.Sprintf("rerun to resume from byte %d", n)
			},
		},
		{
			name: "s3",
			env: func(string) map[string]string {
				env := store.Env()
				env["FETCH_TARGET"] = "s3://" + store.Bucket + "/get"
				return env
			},
			under: func(string) bool { return multipartUploads(t, store) > 0 },
			want:  func(string) string { return "a rerun starts over" },
			after: func(t *testing.T, _ string) {
				waitFor(t, 5*time.Second, "no multipart upload left", func() bool { return multipartUploads(t, store) == 0 })
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.sim.SetDownloadRate(1 << 20)
			p := w.sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) { p.ContentLength = 40 << 20 })[0]
			dir := t.TempDir()
			env := tc.env(dir)
			for k, v := range map[string]string{"CDSE_USERNAME": user, "CDSE_PASSWORD": password,
				"CDSE_TOKEN_URL": w.simURL + cdsesim.TokenPath, "CDSE_CATALOGUE_URL": w.simURL + "/odata/v1",
				"CDSE_DOWNLOAD_URL": w.dlURL, "FETCH_TRUSTED_HOSTS": "127.0.0.1"} {
				env[k] = v
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "get", p.ID)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
			for k, v := range env {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			var stdout, stderr bins.SyncBuffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			waitFor(t, 30*time.Second, "bytes held in the target", func() bool { return tc.under(dir) })
			_ = cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("fetcher get still running 10s after Ctrl-C:\n%s", &stderr)
			}
			if code := cmd.ProcessState.ExitCode(); code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			if want := tc.want(dir); !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr does not say %q:\n%s", want, &stderr)
			}
			if tc.after != nil {
				tc.after(t, dir)
			}
		})
	}
}
