package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// demo is a binary's settings struct of its own: the library knows none.
type demo struct {
	Name     string        `koanf:"DEMO_NAME" flag:"name" help:"a name"`
	Count    int           `koanf:"DEMO_COUNT" flag:"count" help:"a count"`
	Wait     time.Duration `koanf:"DEMO_WAIT" flag:"wait" help:"a wait"`
	On       bool          `koanf:"DEMO_ON" flag:"on" help:"on or off"`
	Size     int64         `koanf:"DEMO_SIZE" flag:"size" help:"a size | with a bar"`
	Password string        `koanf:"DEMO_PASSWORD" secret:"true" help:"a secret"`
}

func demoDefaults() demo { return demo{Name: "default", Count: 4, Wait: time.Minute} }

func TestLoadLayersAndRules(t *testing.T) {
	s := New(demoDefaults)
	dir := t.TempDir()
	file := filepath.Join(dir, "settings.yaml")
	pw := filepath.Join(dir, "pw")
	os.WriteFile(pw, []byte("s3cret value\n"), 0o600)
	os.WriteFile(file, []byte("demo_name: from-file\nDEMO_COUNT: 010\nDEMO_SIZE: 2MiB\nDEMO_PASSWORD_FILE: "+pw+"\n"), 0o600)
	fs := pflag.NewFlagSet("demo", pflag.ContinueOnError)
	s.BindFlags(fs)
	if err := fs.Parse([]string{"--on", "--wait", "5s"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DEMO_COUNT": "7", "DEMO_WAIT": "1s"}
	got, err := s.Load(Sources{File: file, Getenv: func(k string) string { return env[k] }, Flags: fs})
	want := demo{Name: "from-file", Count: 7, Wait: 5 * time.Second, On: true, Size: 2 << 20, Password: "s3cret value"}
	if err != nil || got != want {
		t.Errorf("Load: %+v, %v; want %+v", got, err, want)
	}
	if !s.Known("DEMO_PASSWORD_FILE") || !s.Known("DEMO_NAME") || s.Known("DEMO_NAME_FILE") || s.Known("DEMO_OTHER") {
		t.Error("Known")
	}
	// Every problem at once, naming the setting and the source, never a
	// secret's value.
	env = map[string]string{"DEMO_COUNT": "lots", "DEMO_WAIT": "soon", "DEMO_PASSWORD": "x", "DEMO_PASSWORD_FILE": pw}
	_, err = s.Load(Sources{Getenv: func(k string) string { return env[k] }})
	for _, w := range []string{"DEMO_COUNT (environment)", "DEMO_WAIT (environment)", "DEMO_PASSWORD and DEMO_PASSWORD_FILE are both set"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("%q not reported: %v", w, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a secret in an error: %v", err)
	}
	os.WriteFile(file, []byte("DEMO_UNKNOWN: 1\n"), 0o600)
	if _, err := s.Load(Sources{File: file}); err == nil || !strings.Contains(err.Error(), `unknown setting "DEMO_UNKNOWN"`) {
		t.Errorf("unknown key in the file: %v", err)
	}
	if tab := s.Table(); !strings.Contains(tab, "| `DEMO_PASSWORD` / `_FILE` | — | — | a secret |") || !strings.Contains(tab, "| `DEMO_COUNT` | `--count` | `4` | a count |") || !strings.Contains(tab, `a size \| with a bar`) {
		t.Errorf("Table:\n%s", tab)
	}
}
