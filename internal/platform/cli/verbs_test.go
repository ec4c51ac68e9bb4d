package cli

import (
	"context"
	"errors"
	"slices"
	"testing"
)

func TestSeqs(t *testing.T) {
	for _, c := range []struct {
		args    []string
		want    []uint64
		wantErr string
	}{
		{args: nil, want: []uint64{}},
		{args: []string{"12", "15"}, want: []uint64{12, 15}},
		{args: []string{"18446744073709551615"}, want: []uint64{18446744073709551615}},
		{args: []string{"12", "0"}, wantErr: `SEQ "0" is not a sequence number (see failed list)`},
		{args: []string{"-1"}, wantErr: `SEQ "-1" is not a sequence number (see failed list)`},
		{args: []string{"x"}, wantErr: `SEQ "x" is not a sequence number (see failed list)`},
		{args: []string{"18446744073709551616"}, wantErr: `SEQ "18446744073709551616" is not a sequence number (see failed list)`},
	} {
		got, err := Seqs(c.args, "failed list")
		if c.wantErr != "" {
			if !errors.Is(err, ErrUsage) || err.Error() != "usage: "+c.wantErr {
				t.Errorf("Seqs(%q) = %v, want the usage error %q", c.args, err, c.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Seqs(%q) = %v, %v; want %v", c.args, got, err, c.want)
		}
	}
}

func TestNotFound(t *testing.T) {
	if err := NotFound(0, "not in the quarantine"); err != nil {
		t.Errorf("NotFound(0) = %v", err)
	}
	err := NotFound(2, "not in the quarantine (see quarantine list)")
	if err == nil || err.Error() != "2 of the sequences given are not in the quarantine (see quarantine list)" || errors.Is(err, ErrUsage) {
		t.Errorf("NotFound(2) = %v", err)
	}
}

func TestInterrupted(t *testing.T) {
	cause := errors.New("read: connection closed")
	if err := Interrupted(context.Background(), cause); err != cause {
		t.Errorf("a run not cancelled: %v, want its error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Interrupted(ctx, cause); !errors.Is(err, context.Canceled) || err.Error() != "interrupted: context canceled" {
		t.Errorf("a cancelled run: %v", err)
	}
}

func TestCells(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{OrDash(""), "-"},
		{OrDash("S2MSI2A"), "S2MSI2A"},
		{Cut("", 3), ""},
		{Cut("abc", 3), "abc"},
		{Cut("abcd", 3), "abc…"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
}
