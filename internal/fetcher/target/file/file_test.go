package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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

// TestNeighboursInOneFolder: keys of one folder opened, written and
// committed at once never fail for the folders under .partial/, which a
// neighbour's commit prunes the moment they are empty (a product and its
// STAC item, two products of one day: seen in make test as "mkdir
// .partial/…: no such file or directory").
func TestNeighboursInOneFolder(t *testing.T) {
	ft, err := New(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const workers, each = 4, 200
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range each {
				key := fmt.Sprintf("SENTINEL-1/IW_GRDH_1S/2023/12/07/p%d-%d.zip", w, i)
				up, err := ft.Open(ctx, key, 1, target.Stored{})
				if err == nil {
					_, err = up.Write([]byte("x"))
				}
				if err == nil {
					err = up.Commit(ctx, target.Stored{})
				}
				if err != nil {
					errs <- fmt.Errorf("%s: %w", key, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers { // every worker ends before the folder goes
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestDeleteFolderRemovesItsManifestLast: a folder's removal cut midway
// (a folder inside it that cannot be removed: a read-only mount) leaves
// the manifest named last, by which the folder is found again on
// redelivery, and its record; what is kept beside the files (their
// records, a partial) goes before the data tree.
func TestDeleteFolderRemovesItsManifestLast(t *testing.T) {
	dir, here := mountns.Tmpfs(t, "4m")
	if !here {
		return
	}
	tgt, err := New(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const folder = "S1/S1A_IW_GRDH_1SDV_20231207T064649_20231207T064714_051545_0638F1_95E7.SAFE"
	put := func(key string) {
		t.Helper()
		targettest.Put(t, tgt, key, []byte("x"), target.Stored{Size: 1, ProductID: "id"})
	}
	for _, k := range []string{"annotation/a.xml", "manifest.safe", "measurement/m.tiff", "preview/p.png"} {
		put(folder + "/" + k)
	}
	stuck := filepath.Join(dir, filepath.FromSlash(folder), "measurement")
	if err := syscall.Mount(stuck, stuck, "", syscall.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("", stuck, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	if err := tgt.DeleteFolder(ctx, folder, "manifest.safe"); err == nil {
		t.Fatal("DeleteFolder of a folder with a read-only part: no error")
	}
	if s, ok, err := tgt.Stat(ctx, folder+"/manifest.safe"); !ok || err != nil || s.ProductID != "id" {
		t.Errorf("the manifest after a removal cut midway: %+v there %v, %v; want it and its record kept", s, ok, err)
	}
	if err := syscall.Unmount(stuck, 0); err != nil {
		t.Fatal(err)
	}
	if err := tgt.DeleteFolder(ctx, folder, "manifest.safe"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{folder, ".sums/" + folder, ".partial/" + folder} {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after the removal ended: %v", p, err)
		}
	}
}
