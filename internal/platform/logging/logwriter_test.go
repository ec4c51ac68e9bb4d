package logging

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// writes hands over each Write, so the test can wait for the timer's flush
// instead of polling a buffer the timer goroutine writes to.
type writes chan string

func (w writes) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}

func TestLogWriter(t *testing.T) {
	t.Run("lines wait at most the interval", func(t *testing.T) {
		out := make(writes, 4)
		// Long enough that the check right after the writes cannot miss
		// on a loaded machine.
		lw := newLogWriter(out, 300*time.Millisecond, 1<<10)
		start := time.Now()
		lw.Write([]byte("one\n"))
		lw.Write([]byte("two\n"))
		select {
		case got := <-out:
			t.Fatalf("written at once: %q", got)
		default:
		}
		var got string
		select {
		case got = <-out:
		case <-time.After(5 * time.Second):
			t.Fatal("not flushed")
		}
		if got != "one\ntwo\n" {
			t.Fatalf("flushed %q", got)
		}
		if waited := time.Since(start); waited < 300*time.Millisecond {
			t.Errorf("flushed after %s, before the interval", waited)
		}
		lw.Write([]byte("three\n")) // a new interval starts
		lw.Flush()
		select {
		case more := <-out:
			got += more
		default:
		}
		if got != "one\ntwo\nthree\n" {
			t.Errorf("after Flush: %q", got)
		}
	})
	t.Run("a full buffer is written out, long lines pass through in order", func(t *testing.T) {
		var out bytes.Buffer // no timer fires within the test: one goroutine
		lw := newLogWriter(&out, time.Hour, 10)
		lw.Write([]byte("aaaa\n"))
		lw.Write([]byte("bbbb\n"))
		lw.Write([]byte("cccc\n")) // would overflow: the first two go out
		if got := out.String(); got != "aaaa\nbbbb\n" {
			t.Errorf("after overflow: %q", got)
		}
		long := strings.Repeat("x", 20) + "\n"
		lw.Write([]byte(long))
		if got := out.String(); got != "aaaa\nbbbb\ncccc\n"+long {
			t.Errorf("after a long line: %q", got)
		}
		lw.Flush()
		if got := out.String(); got != "aaaa\nbbbb\ncccc\n"+long {
			t.Errorf("Flush wrote again: %q", got)
		}
	})
}
