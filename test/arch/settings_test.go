package arch

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
)

// settingsStructs are the module's settings structs, each read by
// internal/platform/settings in the package named: the receiver's (which
// register reads too) and the fetcher's.
var settingsStructs = map[string]reflect.Type{
	"internal/receiver/config":     reflect.TypeFor[config.Config](),
	"internal/fetcher/fetchconfig": reflect.TypeFor[fetchconfig.Config](),
}

// TestEverySettingIsDeclaredOnce: a setting's name (its koanf tag) is
// declared by one field of one struct in the whole module. A setting two
// binaries read is a group of settings both embed (issue 41), never two
// fields whose help, default and rules drift apart.
func TestEverySettingIsDeclaredOnce(t *testing.T) {
	for _, p := range packages(t) {
		if !production(p.ImportPath) || p.ImportPath == "internal/platform/settings" {
			continue
		}
		for _, f := range p.GoFiles {
			b, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if _, known := settingsStructs[p.ImportPath]; bytes.Contains(b, []byte("settings.New(")) && !known {
				t.Errorf("%s/%s reads a settings struct that settingsStructs does not list: add it there", p.ImportPath, f)
			}
		}
	}
	for _, twice := range declaredTwice(slices.Collect(maps.Values(settingsStructs))...) {
		t.Error(twice)
	}
}

// TestDeclaredTwiceIsFound: the check above finds a name declared by two
// fields, and not one group embedded twice.
func TestDeclaredTwiceIsFound(t *testing.T) {
	type group struct {
		A string `koanf:"A"`
	}
	type one struct {
		group
		B string `koanf:"B"`
	}
	type other struct {
		group
		B string `koanf:"B"`
	}
	got := declaredTwice(reflect.TypeFor[one](), reflect.TypeFor[other]())
	if len(got) != 1 || !strings.Contains(got[0], "B is declared by") {
		t.Errorf("got %q, want B declared twice and A once", got)
	}
}

// declaredTwice walks the settings structs (into the groups they embed)
// and names each setting declared by two fields.
func declaredTwice(roots ...reflect.Type) []string {
	declared := map[string]string{} // name → Type.Field of its declaration
	var out []string
	var walk func(typ reflect.Type)
	walk = func(typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			name := f.Tag.Get("koanf")
			if f.Anonymous && f.Type.Kind() == reflect.Struct && name == "" {
				walk(f.Type)
				continue
			}
			if name == "" {
				continue
			}
			at := typ.PkgPath() + "." + typ.Name() + "." + f.Name
			if first, ok := declared[name]; ok && first != at {
				out = append(out, name+" is declared by "+first+" and by "+at+": declare it once, in a group both embed")
				continue
			}
			declared[name] = at
		}
	}
	for _, r := range roots {
		walk(r)
	}
	return out
}
