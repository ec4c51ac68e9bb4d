// Package natsproc runs nats-server as separate processes, for tests that
// must do to a server what an operating system and an operator do: kill it
// with SIGKILL, freeze it with SIGSTOP, restart it on its store, or run the
// release a user's platform team runs rather than the one the receiver
// embeds. Binaries are built from the nats-server Go module of the asked
// version (checked against the Go checksum database) and cached under the
// repository's bin/, so only the first run pays for the build.
package natsproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// Module is the Go module nats-server is built from.
const Module = "github.com/nats-io/nats-server/v2"

// EmbeddedVersion is the nats-server release the receiver embeds: the
// version go.mod requires.
func EmbeddedVersion(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", Module).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", Module, err)
	}
	return strings.TrimSpace(string(out))
}

var buildMu sync.Mutex

// Binary returns the path of the nats-server of version (e.g. "v2.10.27"),
// building it with `go install Module@version` into bin/nats-server/<version>/
// of the repository when it is not there yet. Builds of several test
// packages may race: each installs into its own directory and renames.
func Binary(t testing.TB, version string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "bin", "nats-server", version)
	bin := filepath.Join(dir, "nats-server")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".build-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", "-trimpath", Module+"@"+version)
	// Outside our module, so its go.mod decides the dependencies, as in the
	// release; GOFLAGS of the caller (e.g. -mod=vendor) would not apply.
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build nats-server %s: %v\n%s", version, err, out)
	}
	if err := os.Rename(tmp, dir); err != nil && !errorsIsExist(err) {
		t.Fatal(err)
	}
	return bin
}

func errorsIsExist(err error) bool {
	return errors.Is(err, os.ErrExist) || errors.Is(err, syscall.ENOTEMPTY)
}

// repoRoot is the directory of the receiver's go.mod, found upwards from
// the working directory (a test runs in its package's directory).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/cdse-jetstream/receiver\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("natsproc: the receiver's go.mod is not above the working directory")
		}
		dir = parent
	}
}

// Process is a child process that a test can kill, freeze and start
// again with the same command line, its output appended to a log file.
// The chaos run drives its receivers with it too.
type Process struct {
	Name string
	Path string
	Args []string
	// Env, when not nil, is the whole environment.
	Env []string
	Log string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start starts the process (again, after Kill).
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s is running", p.Name)
	}
	logf, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Env = p.Env
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) { cmd.Wait(); logf.Close(); close(exited) }(p.exited)
	return nil
}

// Kill sends SIGKILL (which ends a frozen process too) and waits until the
// process has exited.
func (p *Process) Kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// Terminate sends SIGTERM (and SIGCONT, so a frozen process gets it) and
// waits up to d for the exit; past d it kills the process and says so.
func (p *Process) Terminate(d time.Duration) error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Process.Signal(syscall.SIGCONT)
	select {
	case <-exited:
		return nil
	case <-time.After(d):
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		return fmt.Errorf("%s still running %v after SIGTERM: killed", p.Name, d)
	}
}

// Stop freezes the process with SIGSTOP; Continue resumes it.
func (p *Process) Stop() error { return p.signal(syscall.SIGSTOP) }

// Continue sends SIGCONT.
func (p *Process) Continue() error { return p.signal(syscall.SIGCONT) }

func (p *Process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("%s is not running", p.Name)
	}
	return p.cmd.Process.Signal(sig)
}

// Pid is the running process's id, 0 when it is not running.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Running reports whether the process was started and has not exited.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// LogTail is the last n lines of the process's log.
func (p *Process) LogTail(n int) string {
	b, _ := os.ReadFile(p.Log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Server is one nats-server process with JetStream, its configuration
// file and store in its own directory.
type Server struct {
	Process
	Port        int // client port on 127.0.0.1
	ClusterPort int // 0 outside a cluster
	Dir         string
}

// URL is the server's client URL.
func (s *Server) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(s.Port) }

// Start runs a single server of bin in dir on a free port and stops it
// when the test ends.
func Start(t testing.TB, bin, dir string) *Server {
	t.Helper()
	s := &Server{Process: Process{Name: "n1", Path: bin}, Port: natstest.FreePorts(t, 1)[0], Dir: dir}
	s.writeConf(t, "")
	s.mustStart(t)
	return s
}

// StartCluster runs n servers of bin as one JetStream cluster, each in a
// directory under dir, and waits until each accepts clients. Routes are
// not advertised to clients (no_advertise), so a client reaches exactly
// the servers (or proxies) it was given.
func StartCluster(t testing.TB, bin, dir string, n int) []*Server {
	t.Helper()
	ports := natstest.FreePorts(t, 2*n)
	var routes []string
	for i := range n {
		routes = append(routes, "nats-route://127.0.0.1:"+strconv.Itoa(ports[n+i]))
	}
	servers := make([]*Server, n)
	for i := range servers {
		s := &Server{Process: Process{Name: "n" + strconv.Itoa(i+1), Path: bin}, Port: ports[i], ClusterPort: ports[n+i], Dir: filepath.Join(dir, "n"+strconv.Itoa(i+1))}
		s.writeConf(t, fmt.Sprintf("cluster {\n  name: chaos\n  listen: 127.0.0.1:%d\n  no_advertise: true\n  routes: [%s]\n}\n", s.ClusterPort, strings.Join(routes, ", ")))
		servers[i] = s
	}
	for _, s := range servers {
		s.mustStart(t)
	}
	return servers
}

func (s *Server) writeConf(t testing.TB, cluster string) {
	t.Helper()
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf("server_name: %s\nlisten: 127.0.0.1:%d\njetstream {\n  store_dir: %q\n  max_memory_store: 256MB\n  max_file_store: 4GB\n}\n%s",
		s.Name, s.Port, filepath.Join(s.Dir, "store"), cluster)
	path := filepath.Join(s.Dir, "nats.conf")
	s.Args, s.Log = []string{"-c", path}, filepath.Join(s.Dir, "nats.log")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (s *Server) mustStart(t testing.TB) {
	t.Helper()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	if err := s.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// Restart starts the server again (after Kill), on the same store.
func (s *Server) Restart() error { return s.Start() }

// WaitReady waits until the server accepts TCP connections on its port.
func (s *Server) WaitReady(d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(s.Port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not accepting connections within %s; log:\n%s", s.Name, d, s.LogTail(20))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
