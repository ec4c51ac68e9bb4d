package file

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/fetcher/target"
	"github.com/cdse-jetstream/receiver/internal/testkit/mountns"
	"github.com/cdse-jetstream/receiver/internal/testkit/targettest"
)

func TestSweepPartials(t *testing.T) {
	dir := t.TempDir()
	ft, _ := New(dir, 0)
	ctx := context.Background()
	old, err := ft.Open(ctx, "a/old.zip", 0, target.Stored{})
	if err != nil {
		t.Fatal(err)
	}
	old.Write([]byte("some"))
	old.Abort(true)
	past := time.Now().Add(-2 * time.Hour)
	os.Chtimes(ft.part("a/old.zip"), past, past)
	busy, err := ft.Open(ctx, "busy.zip", 0, target.Stored{})
	if err != nil {
		t.Fatal(err)
	}
	busy.Write([]byte("x"))
	os.Chtimes(ft.part("busy.zip"), past, past)
	// A second Open of a key being written is refused: ErrLocked.
	if _, err := ft.Open(ctx, "busy.zip", 0, target.Stored{}); !errors.Is(err, target.ErrLocked) {
		t.Errorf("second open: %v", err)
	}
	n, err := ft.SweepPartials(ctx, time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("swept %d: %v", n, err)
	}
	if _, err := os.Stat(ft.part("a/old.zip")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old partial: %v", err)
	}
	if _, err := os.Stat(ft.part("busy.zip")); err != nil {
		t.Errorf("the partial in use was swept: %v", err)
	}
	busy.Abort(false)
}

// TestProbeDirectory: a directory the fetcher cannot write to (a
// read-only file system: root passes permission bits) fails the probe;
// a missing directory is never created, and the error says how to.
func TestProbeDirectory(t *testing.T) {
	dir, here := mountns.Tmpfs(t, "1m")
	if !here {
		return
	}
	tgt, err := New(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := tgt.Probe(ctx); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	if err := tgt.Probe(ctx); err == nil || !strings.Contains(err.Error(), "cannot be written") {
		t.Errorf("probe of a read-only directory: %v", err)
	}
	gone := filepath.Join(t.TempDir(), "products")
	if _, err := New(gone, 0); err == nil || !strings.Contains(err.Error(), "install -d -o ") || !strings.Contains(err.Error(), gone) {
		t.Errorf("a missing directory: %v", err)
	}
}

// TestTargetMoved: a directory target whose volume is unmounted (the
// mount point left on the disk below) fails Check.
func TestTargetMoved(t *testing.T) {
	dir, here := mountns.Tmpfs(t, "4m")
	if !here {
		return
	}
	tgt, err := New(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	ck := tgt
	if err := ck.Check(); err != nil {
		t.Fatalf("at start: %v", err)
	}
	if err := syscall.Unmount(dir, 0); err != nil {
		t.Fatal(err)
	}
	if err := ck.Check(); err == nil || !strings.Contains(err.Error(), "not mounted") {
		t.Errorf("unmounted: %v", err)
	}
	// Mounted again: taken back (a tmpfs mounted anew may get the
	// same anonymous device number, so "another file system" is not
	// told from "the same one back": the device is the identity).
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=4m"); err != nil {
		t.Fatal(err)
	}
	if err := ck.Check(); err != nil {
		t.Logf("mounted anew on another device: %v", err)
	}
}

func TestContract(t *testing.T) {
	tg, err := New(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	targettest.Contract(t, tg)
}
