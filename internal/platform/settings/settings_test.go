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

// group is a group of settings several binaries share: declared once,
// embedded in each binary's struct.
type group struct {
	URL   string `koanf:"GROUP_URL" flag:"group-url" help:"a shared address"`
	Token string `koanf:"GROUP_TOKEN" secret:"true" help:"a shared secret"`
	Name  string `koanf:"GROUP_NAME" flag:"group-name" help:"a shared name"`
}

// withGroup embeds group between settings of its own, and has a field of
// the group's name (the outer one is its own setting).
type withGroup struct {
	First string `koanf:"OWN_FIRST" flag:"first" help:"before the group"`
	group
	Name string `koanf:"OWN_NAME" flag:"name" help:"its own name"`
}

// TestEmbeddedGroups: the settings of an embedded struct are the binary's,
// at the place of the embedding, in every layer (file, environment, _FILE,
// flags), in the table and in Value; a binary may rename a group's flag.
func TestEmbeddedGroups(t *testing.T) {
	s := New(func() withGroup { return withGroup{group: group{URL: "http://default"}} }, Flag("GROUP_NAME", "other-name"))
	var names []string
	for _, set := range s.Settings() {
		names = append(names, set.Name)
	}
	if got := strings.Join(names, " "); got != "OWN_FIRST GROUP_URL GROUP_TOKEN GROUP_NAME OWN_NAME" {
		t.Errorf("settings in the order %s", got)
	}
	dir := t.TempDir()
	file, tok := filepath.Join(dir, "settings.yaml"), filepath.Join(dir, "tok")
	os.WriteFile(tok, []byte("t0ken\n"), 0o600)
	os.WriteFile(file, []byte("group_url: http://from-file\nGROUP_TOKEN_FILE: "+tok+"\n"), 0o600)
	fs := pflag.NewFlagSet("demo", pflag.ContinueOnError)
	s.BindFlags(fs)
	if err := fs.Parse([]string{"--other-name", "from-flag", "--name", "own"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OWN_FIRST": "env"}
	got, err := s.Load(Sources{File: file, Getenv: func(k string) string { return env[k] }, Flags: fs})
	want := withGroup{First: "env", group: group{URL: "http://from-file", Token: "t0ken", Name: "from-flag"}, Name: "own"}
	if err != nil || got != want {
		t.Errorf("Load: %+v, %v; want %+v", got, err, want)
	}
	if fs.Lookup("group-name") != nil || !s.Known("GROUP_TOKEN_FILE") {
		t.Error("the renamed flag, or the group's secret's _FILE")
	}
	if set, _ := s.Lookup("GROUP_NAME"); set.Value(got) != "from-flag" {
		t.Errorf("Value of a group's setting: %q", set.Value(got))
	}
	if tab := s.Table(); !strings.Contains(tab, "| `GROUP_URL` | `--group-url` | `http://default` | a shared address |\n| `GROUP_TOKEN` / `_FILE` |") {
		t.Errorf("Table:\n%s", tab)
	}
}

// TestDeclaredTwice: a name or a flag given twice, in the struct or
// through a group, is the program's mistake, found at start.
func TestDeclaredTwice(t *testing.T) {
	type twiceName struct {
		group
		URL string `koanf:"GROUP_URL" flag:"url" help:"again"`
	}
	type twiceFlag struct {
		group
		Other string `koanf:"OTHER" flag:"group-url" help:"another"`
	}
	for name, f := range map[string]func(){
		"name":            func() { New(func() twiceName { return twiceName{} }) },
		"flag":            func() { New(func() twiceFlag { return twiceFlag{} }) },
		"renamed unknown": func() { New(demoDefaults, Flag("NOPE", "nope")) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
