package auth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSecretFromEnv(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(file, []byte("from-file\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string
		want string
		err  string
	}{
		{"variable", map[string]string{"PW": "from-var"}, "from-var", ""},
		{"file, newline trimmed", map[string]string{"PW_FILE": file}, "from-file", ""},
		{"variable wins over file", map[string]string{"PW": "from-var", "PW_FILE": file}, "from-var", ""},
		{"neither", nil, "", ""},
		{"missing file", map[string]string{"PW_FILE": "/nonexistent/pw"}, "", "PW_FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SecretFromEnv(func(k string) string { return tt.env[k] }, "PW")
			if got != tt.want || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("got %q, %v; want %q, error with %q", got, err, tt.want, tt.err)
			}
		})
	}
}
