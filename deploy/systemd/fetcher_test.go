package systemd_test

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
	s3target "github.com/cdse-jetstream/receiver/internal/fetcher/target/s3"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
)

const (
	fetcherUnitFile = "cdse-fetcher.service"
	fetcherEnvFile  = "fetcher.env.example"
	// fetcherDropIn gives the receiver's embedded NATS the fetcher's login.
	fetcherDropIn = "cdse-receiver.service.d/fetcher.conf"
	// fetcherCredentials is where systemd puts the fetcher's LoadCredential= files.
	fetcherCredentials = "/run/credentials/" + fetcherUnitFile + "/"
)

// awsNames are the variables of the S3 target (s3target.OptionsFromEnv),
// which are not the fetcher's settings; true: a secret, from its _FILE.
var awsNames = map[string]bool{
	"AWS_ENDPOINT_URL_S3": false, "AWS_ENDPOINT_URL": false, "AWS_REGION": false,
	"AWS_ACCESS_KEY_ID": false, "AWS_SECRET_ACCESS_KEY": true, "AWS_SESSION_TOKEN": true,
}

// hardening are the receiver unit's settings the fetcher's keeps as they
// are (its capabilities and address families are its own).
var hardening = []string{"NoNewPrivileges", "ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices",
	"ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups", "ProtectClock",
	"ProtectHostname", "ProtectProc", "RestrictNamespaces", "RestrictRealtime", "RestrictSUIDSGID", "LockPersonality",
	"MemoryDenyWriteExecute", "RemoveIPC", "SystemCallArchitectures", "SystemCallFilter", "SystemCallErrorNumber",
	"Restart", "RestartPreventExitStatus"}

// commentedCredentials are the ids of the "#LoadCredential=id:..." lines
// of a unit: credentials to uncomment with their settings.
func commentedCredentials(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#\s*LoadCredential=([^:\s]+):`).FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = true
	}
	return out
}

// loadedCredentials are the unit's LoadCredential= lines, id to source.
func loadedCredentials(t *testing.T, u unit, file string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, lc := range u["Service"]["LoadCredential"] {
		id, src, ok := strings.Cut(lc, ":")
		if !ok || !strings.HasPrefix(src, "/etc/cdse-receiver/") {
			t.Errorf("%s: LoadCredential=%s: want id:/etc/cdse-receiver/file", file, lc)
		}
		out[id] = src
	}
	return out
}

// fetcherSecrets are the fetcher's variables that never appear in clear.
func fetcherSecrets() map[string]bool {
	secret := map[string]bool{}
	for _, s := range fetchconfig.Settings() {
		if s.Secret {
			secret[s.Name] = true
		}
	}
	for name, s := range awsNames {
		if s {
			secret[name] = true
		}
	}
	return secret
}

// The fetcher's unit: hardened as the receiver's, after it, with a stop
// timeout above the fetcher's shutdown bound and the credentials its
// settings name.
func TestFetcherUnit(t *testing.T) {
	u := parseUnit(t, fetcherUnitFile)
	recv := parseUnit(t, unitFile)
	env := parseEnv(t, fetcherEnvFile)
	for k, v := range map[string]string{
		"ExecStart":       "/usr/local/bin/fetcher",
		"EnvironmentFile": "/etc/cdse-receiver/fetcher.env",
		"StateDirectory":  "cdse-fetcher",
	} {
		if got := u.one(t, "Service", k); got != v {
			t.Errorf("[Service] %s=%q, want %q", k, got, v)
		}
	}
	for _, k := range hardening {
		if got, want := u.one(t, "Service", k), recv.one(t, "Service", k); got != want || want == "" {
			t.Errorf("[Service] %s=%q, the receiver's unit has %q", k, got, want)
		}
	}
	for _, f := range strings.Fields(u.one(t, "Service", "RestrictAddressFamilies")) {
		if !slices.Contains(strings.Fields(recv.one(t, "Service", "RestrictAddressFamilies")), f) {
			t.Errorf("RestrictAddressFamilies: %s, which not even the receiver has", f)
		}
	}
	if u.one(t, "Service", "RestrictAddressFamilies") == "" {
		t.Error("no RestrictAddressFamilies")
	}
	if v, ok := u["Service"]["CapabilityBoundingSet"]; !ok || v[len(v)-1] != "" {
		t.Errorf("CapabilityBoundingSet=%v: the fetcher needs no capability (an empty CapabilityBoundingSet=)", v)
	}
	if v := u.one(t, "Service", "AmbientCapabilities"); v != "" {
		t.Errorf("AmbientCapabilities=%s", v)
	}
	if user := u.one(t, "Service", "User"); u.one(t, "Service", "DynamicUser") != "yes" && (user == "" || user == "root" || user == "0") {
		t.Error("the fetcher runs as root: DynamicUser=yes or User= of its own")
	}
	for _, k := range []string{"After", "Wants"} {
		if !slices.Contains(strings.Fields(strings.Join(u["Unit"][k], " ")), "cdse-receiver.service") {
			t.Errorf("[Unit] %s= lacks cdse-receiver.service", k)
		}
	}
	if u.one(t, "Install", "WantedBy") != "multi-user.target" {
		t.Error("[Install] WantedBy=multi-user.target is missing")
	}

	// systemd waits longer than the fetcher takes to stop: it hands the
	// cut downloads back to NATS after FETCH_SHUTDOWN_TIMEOUT.
	stop := timespan(t, u.one(t, "Service", "TimeoutStopSec"))
	bound := fetchconfig.Default().ShutdownTimeout
	if v, ok := active(env)["FETCH_SHUTDOWN_TIMEOUT"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("FETCH_SHUTDOWN_TIMEOUT=%s: %v", v, err)
		}
		bound = max(bound, d)
	}
	if stop <= bound {
		t.Errorf("TimeoutStopSec %s is not above the fetcher's shutdown bound %s: systemd would kill it before it hands its downloads back", stop, bound)
	}

	// A directory target is where the unit may write: its StateDirectory.
	if target := active(env)["FETCH_TARGET"]; strings.HasPrefix(target, "file://") {
		dir := strings.TrimPrefix(target, "file://")
		state := "/var/lib/" + u.one(t, "Service", "StateDirectory")
		if dir != state && !strings.HasPrefix(dir, state+"/") {
			t.Errorf("FETCH_TARGET=%s is outside the StateDirectory %s: ProtectSystem=strict makes it read-only", target, state)
		}
	}

	// Every credential loaded is a _FILE of the settings, every _FILE under
	// the credentials directory is loaded (or, commented out, has its
	// LoadCredential= line to uncomment).
	loaded := loadedCredentials(t, u, fetcherUnitFile)
	toUncomment := commentedCredentials(t, fetcherUnitFile)
	used := map[string]bool{}
	for _, a := range env {
		id, ok := strings.CutPrefix(a.value, fetcherCredentials)
		if !ok {
			if strings.HasSuffix(a.name, "_FILE") || a.name == "NATS_CREDS" {
				t.Errorf("%s:%d: %s=%s is not a credential of the unit (%s...): the fetcher cannot read /etc/cdse-receiver", fetcherEnvFile, a.line, a.name, a.value, fetcherCredentials)
			}
			continue
		}
		switch {
		case !a.commented && loaded[id] == "":
			t.Errorf("%s:%d: %s names the credential %q, which the unit does not load", fetcherEnvFile, a.line, a.name, id)
		case a.commented && loaded[id] == "" && !toUncomment[id]:
			t.Errorf("%s:%d: %s names the credential %q, which has no LoadCredential= line, even commented out", fetcherEnvFile, a.line, a.name, id)
		}
		if !a.commented {
			used[id] = true
		}
	}
	for id := range loaded {
		if !used[id] {
			t.Errorf("the unit loads the credential %q, which no setting uses", id)
		}
	}
	// The receiver's and the fetcher's CDSE account are one password file.
	if loaded["cdse-password"] != loadedCredentials(t, recv, unitFile)["cdse-password"] {
		t.Errorf("cdse-password from %q, the receiver's from %q", loaded["cdse-password"], loadedCredentials(t, recv, unitFile)["cdse-password"])
	}
}

// Every variable of the example is the fetcher's (its settings, the S3
// target's AWS_*), secrets only from files; the values are those the
// set-up needs.
func TestFetcherEnvironmentFile(t *testing.T) {
	known := map[string]bool{}
	for _, n := range fetchconfig.Names() {
		known[n] = true
	}
	for n, secret := range awsNames {
		known[n] = true
		if secret || n == "AWS_ACCESS_KEY_ID" {
			known[n+"_FILE"] = true
		}
	}
	secret := fetcherSecrets()
	env := parseEnv(t, fetcherEnvFile)
	seen := map[string]int{}
	for _, a := range env {
		if !known[a.name] {
			t.Errorf("%s:%d: %s is not a setting of the fetcher", fetcherEnvFile, a.line, a.name)
		}
		if secret[a.name] {
			t.Errorf("%s:%d: %s in clear: give %s_FILE, a credential of the unit", fetcherEnvFile, a.line, a.name, a.name)
		}
		if !a.commented {
			if prev, ok := seen[a.name]; ok {
				t.Errorf("%s:%d: %s again (line %d)", fetcherEnvFile, a.line, a.name, prev)
			}
			seen[a.name] = a.line
		}
	}
	vars := active(env)
	for _, name := range []string{"FETCH_TARGET", "CDSE_USERNAME", "CDSE_PASSWORD_FILE", "NATS_USER", "NATS_PASSWORD_FILE"} {
		if vars[name] == "" {
			t.Errorf("%s is not set", name)
		}
	}
	if host, _, err := net.SplitHostPort(vars["FETCH_ADMIN_ADDR"]); err != nil || !net.ParseIP(host).IsLoopback() {
		t.Errorf("FETCH_ADMIN_ADDR=%q: the admin endpoints belong on loopback", vars["FETCH_ADMIN_ADDR"])
	}
	// The general account's documented limit: 4 concurrent downloads.
	if n, err := strconv.Atoi(vars["FETCH_CONCURRENCY"]); err != nil || n < 1 || n > 4 {
		t.Errorf("FETCH_CONCURRENCY=%q, want 1 to 4 (the account's concurrent downloads)", vars["FETCH_CONCURRENCY"])
	}
}

// credentialFiles replaces each value under dir by a file holding a
// password, as systemd would provide it.
func credentialFiles(t *testing.T, vars map[string]string, dir string) {
	t.Helper()
	creds := t.TempDir()
	for k, v := range vars {
		if id, ok := strings.CutPrefix(v, dir); ok {
			f := filepath.Join(creds, id)
			if err := os.WriteFile(f, []byte("a-long-password-for-"+id+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			vars[k] = f
		}
	}
}

// The fetcher accepts the example as it is, and with its S3 lines
// uncommented, with a password in each credential.
func TestTheFetcherLoadsTheExample(t *testing.T) {
	u := parseUnit(t, fetcherUnitFile)
	env := parseEnv(t, fetcherEnvFile)
	load := func(t *testing.T, vars map[string]string) fetchconfig.Config {
		t.Helper()
		for k, v := range u.environment(t) {
			vars[k] = v
		}
		credentialFiles(t, vars, fetcherCredentials)
		getenv := func(name string) string { return vars[name] }
		c, err := fetchconfig.Load(fetchconfig.Sources{Getenv: getenv})
		if err != nil {
			t.Fatalf("the fetcher does not load the example: %v", err)
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("the fetcher refuses the example: %v", err)
		}
		if _, err := s3target.OptionsFromEnv(getenv); err != nil {
			t.Fatalf("the S3 settings: %v", err)
		}
		return c
	}
	c := load(t, active(env))
	if c.Target != "file:///var/lib/cdse-fetcher/products" || c.NATSUser != "fetcher" || c.NATSPassword == "" || c.CDSEPassword == "" {
		t.Errorf("loaded: target %q, NATS user %q (password set: %v), CDSE password set: %v", c.Target, c.NATSUser, c.NATSPassword != "", c.CDSEPassword != "")
	}

	// The S3 lines uncommented (they come after the directory's).
	s3 := map[string]string{}
	for _, a := range env {
		if !a.commented || strings.HasPrefix(a.name, "AWS_") || a.name == "FETCH_TARGET" || a.name == "FETCH_S3_PATH_STYLE" {
			s3[a.name] = a.value
		}
	}
	c = load(t, s3)
	if !strings.HasPrefix(c.Target, "s3://") {
		t.Errorf("the S3 lines: target %q", c.Target)
	}
	o, err := s3target.OptionsFromEnv(func(name string) string { return s3[name] })
	if err != nil || o.AccessKeyID == "" || !strings.HasPrefix(o.SecretAccessKey, "a-long-password-for-") || o.Endpoint == "" || c.S3PathStyleOption() == nil {
		t.Errorf("the S3 lines: %+v, path style %q, %v", o, c.S3PathStyle, err)
	}
}

// The receiver's drop-in gives its embedded NATS the fetcher's login:
// the user the fetcher's example logs in as, the password from the same
// file; the receiver accepts its example with it.
func TestReceiverDropInForTheFetcher(t *testing.T) {
	drop := parseUnit(t, fetcherDropIn)
	recv := parseUnit(t, unitFile)
	fetcher := parseUnit(t, fetcherUnitFile)
	fetcherEnv := active(parseEnv(t, fetcherEnvFile))

	vars := active(parseEnv(t, envFile))
	for k, v := range recv.environment(t) {
		vars[k] = v
	}
	dropEnv := drop.environment(t)
	known := map[string]bool{}
	for _, s := range config.Settings() {
		known[s.Name] = true
		if s.Secret {
			known[s.Name+"_FILE"] = true
		}
	}
	for k, v := range dropEnv {
		if !known[k] {
			t.Errorf("%s: %s is not a setting of the receiver", fetcherDropIn, k)
		}
		vars[k] = v
	}
	loaded := loadedCredentials(t, drop, fetcherDropIn)
	for k, v := range dropEnv {
		if id, ok := strings.CutPrefix(v, credentials); ok && loaded[id] == "" {
			t.Errorf("%s: %s names the credential %q, which the drop-in does not load", fetcherDropIn, k, id)
		}
	}
	values := map[string]bool{}
	for _, v := range dropEnv {
		values[v] = true
	}
	for id, src := range loaded {
		if !values[credentials+id] {
			t.Errorf("%s loads the credential %q, which no setting uses", fetcherDropIn, id)
		}
		// The fetcher reads the same file.
		if got := loadedCredentials(t, fetcher, fetcherUnitFile)[id]; got != src {
			t.Errorf("the receiver's %s is %s, the fetcher's %q", id, src, got)
		}
	}
	if dropEnv["NATS_EMBEDDED_FETCHER_USER"] != fetcherEnv["NATS_USER"] {
		t.Errorf("the receiver's fetcher user %q, the fetcher logs in as %q", dropEnv["NATS_EMBEDDED_FETCHER_USER"], fetcherEnv["NATS_USER"])
	}
	if p := strings.TrimPrefix(fetcherEnv["NATS_PASSWORD_FILE"], fetcherCredentials); p != strings.TrimPrefix(dropEnv["NATS_EMBEDDED_FETCHER_PASSWORD_FILE"], credentials) {
		t.Errorf("the fetcher's password is the credential %q, the receiver's %q", p, dropEnv["NATS_EMBEDDED_FETCHER_PASSWORD_FILE"])
	}

	credentialFiles(t, vars, credentials)
	vars["INTERESTS_FILE"] = interestsFile
	c, err := config.Load(config.Sources{Getenv: func(name string) string { return vars[name] }})
	if err != nil {
		t.Fatalf("the receiver does not load its example with the drop-in: %v", err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("the receiver refuses its example with the drop-in: %v", err)
	}
	if c.NATSEmbeddedFetcherUser != "fetcher" || c.NATSEmbeddedFetcherPassword == "" {
		t.Errorf("fetcher login %q (password set: %v)", c.NATSEmbeddedFetcherUser, c.NATSEmbeddedFetcherPassword != "")
	}
}
