package config

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestUnknownEnv(t *testing.T) {
	env := []string{
		"RECEIVER_MAX_BODDY=5MiB", // a typo
		"RECEIVER_MAX_BODY=5MiB",
		"RECEIVER_PASSWORD_FILE=/run/secrets/p", // a secret's file
		"RECEIVER_USERNAME_FILE=/x",             // not a secret: no _FILE
		"CDSE_PASSWORD=x",
		"NATS_URL=nats://x",
		"NATS_SERVICE_HOST=10.0.0.1", // Kubernetes' service links
		"NATS_PORT=tcp://10.0.0.1:4222",
		"NATS_PORT_4222_TCP_ADDR=10.0.0.1",
		"CDSE_RECEIVER_SERVICE_PORT_HTTP=8080",
		"INTEREST=s5p-no2", // the Node example's
		"RECEIVER_CONFIG=/etc/r.yaml",
		"HOME=/root", // not ours
		"FETCH_THINGS=1",
		"WATCH_SUBSCRIPTON_ID=x",
		"COMPLETE_STREAM=STAGING_COMPLETE",
		"COMPLETE_SUBJECT_PREFX=staging.complete",
		"RECEIVER_VERSION_MAX_AGE=720h", // the versions consumer's, under RECEIVER_
		"NOEQUALS",
	}
	got := UnknownEnv(env)
	want := []UnknownVar{{Name: "RECEIVER_MAX_BODDY", Suggest: "RECEIVER_MAX_BODY"}, {Name: "RECEIVER_USERNAME_FILE", Suggest: ""}, {Name: "FETCH_THINGS", Suggest: ""}, {Name: "WATCH_SUBSCRIPTON_ID", Suggest: "WATCH_SUBSCRIPTION_ID"}, {Name: "COMPLETE_SUBJECT_PREFX", Suggest: "COMPLETE_SUBJECT_PREFIX"}, {Name: "RECEIVER_VERSION_MAX_AGE", Suggest: "RECEIVER_VERSIONS_MAX_AGE"}}
	if !slices.Equal(got, want) {
		t.Errorf("UnknownEnv:\n got %v\nwant %v", got, want)
	}
}

// TestKnownEnvCoversTheCode: every variable under our prefixes that the
// binaries, the examples or the scripts read is known, so one environment
// file serves them all without a warning.
func TestKnownEnvCoversTheCode(t *testing.T) {
	read := regexp.MustCompile(`(?:[Gg]etenv\("|env\.|env\["|\$\{?)([A-Z][A-Z0-9_]+)`)
	root := filepath.Join("..", "..", "..")
	var checked int
	for _, dir := range []string{"cmd", "internal", "examples", "scripts"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			if d.IsDir() || strings.HasSuffix(path, "_test.go") || !slices.Contains([]string{".go", ".mjs", ".sh"}, filepath.Ext(path)) {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range read.FindAllStringSubmatch(string(b), -1) {
				name := m[1]
				if !ours(name) || strings.HasPrefix(name, "DEMO_") {
					continue
				}
				checked++
				if !KnownEnv(name) {
					t.Errorf("%s reads %s, which config.KnownEnv does not know: add it to otherNames (or make it a setting)", path, name)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 10 {
		t.Fatalf("only %d variables found in the code: the pattern no longer matches how it reads them", checked)
	}
}
