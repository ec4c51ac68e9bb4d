package receiver

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe to read while the flush timer writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLogWriter(t *testing.T) {
	t.Run("lines wait at most the interval", func(t *testing.T) {
		var out syncBuffer
		// Long enough that the check right after the writes cannot miss
		// on a loaded machine.
		lw := newLogWriter(&out, 300*time.Millisecond, 1<<10)
		start := time.Now()
		lw.Write([]byte("one\n"))
		lw.Write([]byte("two\n"))
		if got := out.String(); got != "" {
			t.Fatalf("written at once: %q", got)
		}
		for out.String() != "one\ntwo\n" {
			if time.Since(start) > 5*time.Second {
				t.Fatalf("not flushed: %q", out.String())
			}
			time.Sleep(time.Millisecond)
		}
		if waited := time.Since(start); waited < 300*time.Millisecond {
			t.Errorf("flushed after %s, before the interval", waited)
		}
		lw.Write([]byte("three\n")) // a new interval starts
		lw.Flush()
		if got := out.String(); got != "one\ntwo\nthree\n" {
			t.Errorf("after Flush: %q", got)
		}
	})
	t.Run("a full buffer is written out, long lines pass through in order", func(t *testing.T) {
		var out syncBuffer
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
