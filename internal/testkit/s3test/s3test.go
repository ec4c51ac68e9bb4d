// Package s3test runs the tests' S3 store: versitygw, built from the version
// tools/go.mod pins and run as a process of its own on a free loopback port,
// its posix backend serving a t.TempDir(), with the test's own root keys and
// one bucket made through the S3 API. A test can kill the store and start it
// again on the same address and data (a store that is down, then back).
package s3test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

const (
	// Region is the store's region (versitygw's default, said explicitly).
	Region = "us-east-1"
	// healthPath answers 200 once the store serves; a bucket can never be
	// named so (bucket names have no dash at their start), so the health
	// check cannot shadow one.
	healthPath = "/-health"
	// startLimit bounds a start: versitygw is up in well under a second,
	// the rest is room for a loaded two-core machine.
	startLimit = 30 * time.Second
)

// Server is one running S3 store.
type Server struct {
	Endpoint  string // http://127.0.0.1:port, for AWS_ENDPOINT_URL_S3
	AccessKey string
	SecretKey string
	Bucket    string // made at start, empty
	// Root is the directory the posix backend serves: bucket b's object
	// k is the file Root/b/k, written whole when its upload completes
	// (the parts of unfinished multipart uploads are under
	// Root/b/.sgwtmp/multipart, which no listing shows).
	Root string

	bin     string
	addr    string
	sidecar string          // a metadata directory, only where Root has no user xattrs
	out     bins.SyncBuffer // what every run printed

	mu   sync.Mutex
	proc *process
}

// process is one run of versitygw.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has ended
}

// versitygw builds versitygw as tools/go.mod pins it and returns the
// binary's path, once per test process. `go tool -n` keeps the linked
// binary in the Go build cache, where bins.Build would link it again in
// every test process (84 MB: 7 to 15 s on two loaded cores, against under
// a second from the cache).
var versitygw = sync.OnceValues(func() (string, error) {
	_, here, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", "tool", "-n", "github.com/versity/versitygw/cmd/versitygw")
	cmd.Dir = filepath.Join(filepath.Dir(here), "..", "..", "..", "tools")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building versitygw (go tool -n in tools/): %w\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
})

// Start builds versitygw (once per test process), runs it and makes the
// bucket; it stops when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := versitygw()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{
		AccessKey: "s3test-access",
		SecretKey: "s3test-secret-" + fmt.Sprint(time.Now().UnixNano()),
		Bucket:    "products",
		Root:      t.TempDir(),
		bin:       bin,
	}
	t.Cleanup(func() {
		s.Kill()
		if t.Failed() {
			t.Logf("versitygw's output:\n%s", s.Output())
		}
	})

	// The port is free a moment before versitygw binds it: another
	// process may take it in between, so a start that fails on a taken
	// port is tried again on another.
	for range 3 {
		s.addr = fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
		s.Endpoint = "http://" + s.addr
		if err = s.start(); err == nil || !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	if err != nil && strings.Contains(err.Error(), "xattr check failed") {
		// The posix backend keeps metadata in user xattrs; where the
		// temporary directory's file system has none (an old tmpfs), it
		// keeps them in a side directory instead.
		s.sidecar = t.TempDir()
		err = s.start()
	}
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(s.Bucket)}); err != nil {
		t.Fatalf("creating the bucket %s: %v\n%s", s.Bucket, err, s.Output())
	}
	return s
}

// start runs versitygw on s.addr and waits until it answers.
func (s *Server) start() error {
	args := []string{
		"--port", s.addr, // loopback only: the default is every interface
		"--region", Region,
		"--health", healthPath,
		"--quiet", // no line per request
		"posix",
	}
	if s.sidecar != "" {
		args = append(args, "--sidecar", s.sidecar)
	}
	args = append(args, s.Root)
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.Root
	// Only what it needs: versitygw also reads generic names (LOGFILE,
	// WEBHOOK) and many VGW_* from the environment, which the test's must
	// not change. The keys go there rather than on the command line.
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + s.Root,
		"ROOT_ACCESS_KEY_ID=" + s.AccessKey,
		"ROOT_SECRET_ACCESS_KEY=" + s.SecretKey,
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &s.out, &s.out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting versitygw: %w", err)
	}
	go func() { cmd.Wait(); close(p.exited) }()
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()

	// A transport of its own: closing its connections touches no one else's.
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.NewTimer(startLimit)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := client.Get(s.Endpoint + healthPath)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("versitygw ended at start (%v):\n%s", cmd.ProcessState, s.Output())
		case <-deadline.C:
			s.Kill()
			return fmt.Errorf("versitygw not answering on %s after %v: %v\n%s", s.Endpoint, startLimit, err, s.Output())
		case <-tick.C:
		}
	}
}

// Kill ends the store at once (SIGKILL: no chance to finish anything),
// keeping its data; requests then fail with connection refused. Killing
// a killed store does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return
	}
	p.cmd.Process.Kill()
	<-p.exited
}

// Restart kills the store if it runs and starts it again on the same
// address with the same data, waiting until it answers.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.StartAgain(); err != nil {
		t.Fatal(err)
	}
}

// StartAgain is Restart for a caller that is not the test's goroutine (a
// fault schedule): the error instead of t.Fatal.
func (s *Server) StartAgain() error {
	s.Kill()
	return s.start()
}

// Output is what the store printed so far, every run of it.
func (s *Server) Output() string { return s.out.String() }

// Env is the store's configuration the AWS way, for a binary under test
// (bins.Run's env): the S3 endpoint, the keys and the region.
func (s *Server) Env() map[string]string {
	return map[string]string{
		"AWS_ENDPOINT_URL_S3":   s.Endpoint,
		"AWS_ACCESS_KEY_ID":     s.AccessKey,
		"AWS_SECRET_ACCESS_KEY": s.SecretKey,
		"AWS_REGION":            Region,
	}
}

// Client is an S3 client of the store with its keys, path-style, set up
// without reading the environment or ~/.aws (a developer's profile must
// not change the tests).
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
}
