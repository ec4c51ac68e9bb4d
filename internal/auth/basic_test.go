package auth

import (
	"errors"
	"testing"
)

func TestBasic(t *testing.T) {
	b, err := NewBasic(Credential{"cdse", "old-secret"}, Credential{"cdse", "new-secret"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		user, pass string
		want       bool
	}{
		{"cdse", "old-secret", true},
		{"cdse", "new-secret", true},
		{"cdse", "wrong", false},
		{"other", "old-secret", false},
		{"", "", false},
		{"cdse", "old-secret ", false},
		{"CDSE", "old-secret", false},
	}
	for _, tt := range tests {
		if got := b.Verify(tt.user, tt.pass); got != tt.want {
			t.Errorf("Verify(%q, %q) = %v, want %v", tt.user, tt.pass, got, tt.want)
		}
	}
}

func TestNewBasicRefusesEmpty(t *testing.T) {
	for _, creds := range [][]Credential{nil, {{"u", ""}}, {{"", "p"}}} {
		if _, err := NewBasic(creds...); !errors.Is(err, ErrNoCredentials) {
			t.Errorf("NewBasic(%v) = %v, want ErrNoCredentials", creds, err)
		}
	}
}
