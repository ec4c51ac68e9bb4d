package docs

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/scrape"
)

// walkthroughBlocks are docs/fetching.md's sh blocks of "On your machine:
// three terminals", by their walkthrough marker.
func walkthroughBlocks(t *testing.T) map[string]string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "fetching.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string]string{}
	for _, m := range regexp.MustCompile("(?s)<!-- walkthrough:([a-z0-9-]+) -->\n```sh\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		blocks[m[1]] = m[2]
	}
	return blocks
}

// makeStandIns are what the walk-through's make targets run, as the
// Makefile's recipes (checked below) run them, over the binaries built
// here: make build has nothing left to do. A line that fails ends its
// terminal's script, as a person would stop there.
const makeStandIns = `set -e
make() {
  case "$1" in
    build) ;;
    run) bin/receiver --config "$REPO/configs/dev.yaml" ;;
    s3-local) "$REPO/scripts/s3-local.sh" ;;
    *) echo "make $1: not in the walk-through" >&2; return 2 ;;
  esac
}
`

// terminal is one of the walk-through's shells, running in the
// background.
type terminal struct {
	cmd  *exec.Cmd
	out  *bins.SyncBuffer
	done chan struct{}
}

// TestFetchingWalkthrough runs the three terminals of docs/fetching.md
// (and the S3 server's) as written, on free ports, in a directory of
// their own with bin/ holding the binaries built here: the simulator
// prints the lines terminal 3 exports, the fetcher stores a verified file
// into products/ and, after Ctrl-C and make s3-local, another into the
// bucket; fetched list says so.
func TestFetchingWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the receiver, the simulator, the fetcher and an S3 server")
	}
	blocks := walkthroughBlocks(t)
	for _, name := range []string{"receiver", "simulator", "fetcher", "fetched", "s3", "fetcher-s3", "fetched-s3"} {
		if blocks[name] == "" {
			t.Fatalf("docs/fetching.md has no walkthrough:%s sh block (has %d)", name, len(blocks))
		}
	}
	// The stand-ins are the Makefile's recipes.
	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, recipe := range []string{"run:.*\n\t\\$\\(GO\\) run [^\n]* \\./cmd/receiver --config configs/dev\\.yaml\n", "s3-local:.*\n\t\\./scripts/s3-local\\.sh\n", "build:.*\n\t\\$\\(GO\\) build [^\n]*-o bin/ \\./cmd/\\.\\.\\."} {
		if !regexp.MustCompile(recipe).Match(mk) {
			t.Fatalf("the Makefile's recipe is no longer %q: the stand-in must change with it", recipe)
		}
	}

	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	// make s3-local builds versitygw into the Go build cache: a cold build
	// takes minutes, built here first, without the waits' bounds.
	prebuild := exec.Command("go", "tool", "-modfile=tools/go.mod", "-n", "versitygw")
	prebuild.Dir = repo
	if out, err := prebuild.CombinedOutput(); err != nil {
		t.Fatalf("building versitygw: %v\n%s", err, out)
	}
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, pkg := range map[string]string{"receiver": "cmd/receiver", "register": "cmd/register", "cdse-sim": "cmd/cdse-sim", "fetcher": "cmd/fetcher"} {
		if err := os.Symlink(bins.Build(t, "github.com/cdse-jetstream/receiver/"+pkg), filepath.Join(work, "bin", name)); err != nil {
			t.Fatal(err)
		}
	}
	// The documented addresses, each on a free port here; the receiver's
	// own (configs/dev.yaml) by the environment, which its file yields to.
	ports := natstest.FreePorts(t, 6)
	addr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i]) }
	rcv, sim, fadmin, s3, admin, nats := addr(0), addr(1), addr(2), addr(3), addr(4), addr(5)
	ports4doc := strings.NewReplacer("127.0.0.1:8080", rcv, "127.0.0.1:8090", sim, "127.0.0.1:9091", fadmin, "127.0.0.1:7070", s3)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "REPO=" + repo, "NO_COLOR=1",
		"GOCACHE=" + goEnv(t, "GOCACHE"), "GOMODCACHE=" + goEnv(t, "GOMODCACHE"), "GOFLAGS=" + os.Getenv("GOFLAGS"), "GOPROXY=" + goEnv(t, "GOPROXY"),
		"RECEIVER_ADDR=" + rcv, "RECEIVER_ADMIN_ADDR=" + admin, "NATS_EMBEDDED_ADDR=" + nats,
		"S3_LOCAL_ADDR=" + s3, "S3_LOCAL_DIR=" + filepath.Join(work, "data", "s3")}

	var mu sync.Mutex
	var running []*terminal
	start := func(name, script string) *terminal {
		t.Helper()
		cmd := exec.Command("bash", "-c", makeStandIns+ports4doc.Replace(script))
		cmd.Dir, cmd.Env = work, env
		out := &bins.SyncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		// A group of its own: Ctrl-C (SIGINT) goes to the whole of it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		term := &terminal{cmd: cmd, out: out, done: make(chan struct{})}
		go func() { _ = cmd.Wait(); close(term.done) }()
		mu.Lock()
		running = append(running, term)
		mu.Unlock()
		t.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-term.done
			if t.Failed() {
				t.Logf("terminal %s:\n%s", name, out)
			}
		})
		return term
	}
	ctrlC := func(term *terminal) {
		t.Helper()
		_ = syscall.Kill(-term.cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-term.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("still running 30 s after Ctrl-C:\n%s", term.out)
		}
	}
	// exports are a block's export lines: terminal 3's settings, for its
	// later blocks. The fetcher's NATS_URL is its default, the embedded
	// server's documented address, moved here as the receiver's was (an
	// environment of the receiver's with NATS_URL would not run it).
	exports := func(block string) string {
		l := []string{"export NATS_URL=nats://" + nats}
		for _, line := range strings.Split(block, "\n") {
			if strings.HasPrefix(line, "export ") {
				l = append(l, line)
			}
		}
		return strings.Join(l, "\n") + "\n"
	}
	run := func(name, script string) string {
		t.Helper()
		term := start(name, script)
		select {
		case <-term.done:
		case <-time.After(60 * time.Second):
			t.Fatalf("%s still running after 60 s:\n%s", name, term.out)
		}
		if !term.cmd.ProcessState.Success() {
			t.Fatalf("%s: %v\n%s", name, term.cmd.ProcessState, term.out)
		}
		return term.out.String()
	}
	waitFor := func(what string, term *terminal, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(90 * time.Second); !ok(); time.Sleep(100 * time.Millisecond) {
			select {
			case <-term.done:
				t.Fatalf("waiting for %s: the terminal's command ended:\n%s", what, term.out)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s after 90 s", what)
			}
		}
	}
	zips := func(dir string) []string {
		var out []string
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".zip") && !strings.Contains(p, "/.") {
				out = append(out, p)
			}
			return nil
		})
		return out
	}

	// Terminal 1 and 2.
	receiver := start("1 (receiver)", blocks["receiver"])
	if err := scrape.Status("http://"+admin+"/readyz", 200, 60*time.Second); err != nil {
		t.Fatalf("the receiver: %v\n%s", err, receiver.out)
	}
	simulator := start("2 (simulator)", blocks["simulator"])
	waitFor("the simulator's lines", simulator, func() bool { return strings.Contains(simulator.out.String(), "publish products:") })
	// Terminal 3 exports what the simulator printed.
	printed := simulator.out.String()
	for _, line := range strings.Split(ports4doc.Replace(blocks["fetcher"]), "\n") {
		for _, v := range []string{"CDSE_TOKEN_URL", "CDSE_CATALOGUE_URL"} {
			if value, ok := strings.CutPrefix(line, "export "+v+"="); ok && !strings.Contains(printed, v+"="+value+"\n") {
				t.Errorf("terminal 3 exports %s=%s; the simulator printed:\n%s", v, value, printed)
			}
		}
		if value, ok := strings.CutPrefix(line, "export CDSE_DOWNLOAD_URL="); ok && !strings.Contains(printed, value) {
			t.Errorf("terminal 3 exports CDSE_DOWNLOAD_URL=%s; the simulator printed:\n%s", value, printed)
		}
	}

	// Terminal 3: into the directory, then Ctrl-C.
	fetcher := start("3 (fetcher)", exports("")+blocks["fetcher"])
	waitFor("a file in products/", fetcher, func() bool { return len(zips(filepath.Join(work, "products"))) == 1 })
	waitFor("the fetched event", fetcher, func() bool { return strings.Contains(fetcher.out.String(), "product stored") })
	ctrlC(fetcher)
	out := run("3 (fetched list)", exports(blocks["fetcher"])+blocks["fetched"])
	file := strings.TrimPrefix(zips(filepath.Join(work, "products"))[0], work+"/")
	if !regexp.MustCompile(`(?m)^1\s+\S+\s+created\s+S2\S+\s+\S+\s+[\d.]+ KiB\s+true\s+file://`+regexp.QuoteMeta(filepath.Join(work, file))+`$`).MatchString(out) ||
		!strings.Contains(out, "\n"+file+"\n") {
		t.Errorf("fetched list and find do not show %s verified:\n%s", file, out)
	}

	// Terminal 4: the S3 server; terminal 3 again, into the bucket.
	s3term := start("4 (s3)", blocks["s3"])
	waitFor("the S3 server's settings", s3term, func() bool { return strings.Contains(s3term.out.String(), "FETCH_TARGET=") })
	printed = s3term.out.String()
	for _, line := range strings.Split(ports4doc.Replace(blocks["fetcher-s3"]), "\n") {
		for _, kv := range strings.Fields(strings.TrimPrefix(line, "export ")) {
			if strings.HasPrefix(line, "export ") && !strings.Contains(printed, "export "+kv+"\n") {
				t.Errorf("terminal 3 exports %s; make s3-local printed:\n%s", kv, printed)
			}
		}
		if target, ok := strings.CutPrefix(line, "FETCH_TARGET="); ok && !strings.Contains(printed, "FETCH_TARGET="+strings.Fields(target)[0]+"\n") {
			t.Errorf("terminal 3's %s; make s3-local printed:\n%s", line, printed)
		}
	}
	fetcherS3 := start("3 (fetcher into S3)", exports(blocks["fetcher"])+blocks["fetcher-s3"])
	waitFor("the product stored in the bucket", fetcherS3, func() bool { return strings.Contains(fetcherS3.out.String(), "product stored") })
	ctrlC(fetcherS3)
	out = run("3 (fetched list, S3)", exports(blocks["fetcher"])+exports(blocks["fetcher-s3"])+blocks["fetched-s3"])
	objects := zips(filepath.Join(work, "data", "s3", "products", "cdse"))
	if len(objects) != 1 || !regexp.MustCompile(`(?m)\s+true\s+s3://products/cdse/SENTINEL-2/\S+\.zip$`).MatchString(out) ||
		!strings.Contains(out, strings.TrimPrefix(objects[0], work+"/")+"\n") {
		t.Errorf("fetched list and find do not show the object verified (%v):\n%s", objects, out)
	}
	if len(zips(filepath.Join(work, "products"))) != 1 {
		t.Errorf("the second product went to the directory too")
	}
}

// goEnv is `go env name`: the walk-through's go tool uses this machine's
// caches.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSpace(out))
}
