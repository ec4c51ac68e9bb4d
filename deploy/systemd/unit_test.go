package systemd_test

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/ingest/interestfile"
	"github.com/cdse-jetstream/receiver/internal/receiver/acmerules"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
)

const (
	unitFile = "cdse-receiver.service"
	envFile  = "receiver.env.example"
	// interestsFile is the example interests (INTERESTS_FILE).
	interestsFile = "interests.yaml.example"
	// credentials is where systemd puts the unit's LoadCredential= files.
	credentials = "/run/credentials/" + unitFile + "/"
)

// unit is a unit file: section, key, the values in order (a key may be
// given more than once).
type unit map[string]map[string][]string

// parseUnit reads a unit file as systemd does: [Section] headers,
// Key=Value lines, comments starting with # or ;, lines continued by a
// trailing backslash.
func parseUnit(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{}
	section := ""
	sc := bufio.NewScanner(f)
	var cont string
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if cont != "" {
			line, cont = cont+" "+line, ""
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			cont = strings.TrimSuffix(line, `\`)
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = line[1 : len(line)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || section == "" {
			t.Fatalf("%s:%d: not Key=Value in a section: %q", path, n, line)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		u[section][k] = append(u[section][k], v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

// one is the single value of a key ("" if absent); a key given twice
// fails.
func (u unit) one(t *testing.T, section, key string) string {
	t.Helper()
	v := u[section][key]
	if len(v) > 1 {
		t.Errorf("[%s] %s is given %d times", section, key, len(v))
	}
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// environment is the unit's Environment= assignments.
func (u unit) environment(t *testing.T) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, line := range u["Service"]["Environment"] {
		for _, a := range strings.Fields(line) {
			k, v, ok := strings.Cut(strings.Trim(a, `"`), "=")
			if !ok {
				t.Errorf("Environment=%s is not NAME=value", line)
			}
			env[k] = v
		}
	}
	return env
}

// assignment is a NAME=value line of the environment file.
type assignment struct {
	name, value string
	line        int
	commented   bool // an example to uncomment: "#NAME=value"
}

var envLine = regexp.MustCompile(`^(#\s*)?([A-Z][A-Z0-9_]*)=(.*)$`)

// parseEnv reads an EnvironmentFile as systemd does for what the example
// uses: NAME=value, the whole value optionally in double or single quotes
// (quotes inside an unquoted value are kept), no backslash;
// commented-out assignments are kept, marked.
func parseEnv(t *testing.T, path string) []assignment {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []assignment
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		m := envLine.FindStringSubmatch(line)
		if m == nil {
			if line != "" && line[0] != '#' && line[0] != ';' {
				t.Errorf("%s:%d: not NAME=value: %q", path, n+1, line)
			}
			continue
		}
		v := m[3]
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			v = v[1 : len(v)-1]
		}
		if strings.Contains(v, `\`) {
			t.Errorf("%s:%d: %s: a backslash, which systemd reads as an escape", path, n+1, m[2])
		}
		out = append(out, assignment{name: m[2], value: v, line: n + 1, commented: m[1] != ""})
	}
	return out
}

// active are the assignments in force, by name.
func active(env []assignment) map[string]string {
	m := map[string]string{}
	for _, a := range env {
		if !a.commented {
			m[a.name] = a.value
		}
	}
	return m
}

// timespan parses a systemd time span: "30", "30s", "1min 30s", "2m",
// "500ms", "1h".
func timespan(t *testing.T, s string) time.Duration {
	t.Helper()
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second
	}
	units := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second, "sec": time.Second,
		"m": time.Minute, "min": time.Minute, "h": time.Hour, "hr": time.Hour}
	var d time.Duration
	for _, part := range regexp.MustCompile(`(\d+)\s*([a-z]+)`).FindAllStringSubmatch(s, -1) {
		n, _ := strconv.Atoi(part[1])
		u, ok := units[part[2]]
		if !ok {
			t.Fatalf("time span %q: unit %q", s, part[2])
		}
		d += time.Duration(n) * u
	}
	if d == 0 {
		t.Fatalf("time span %q", s)
	}
	return d
}

// The unit's settings: present, and consistent with the receiver's.
func TestUnit(t *testing.T) {
	u := parseUnit(t, unitFile)
	env := parseEnv(t, envFile)
	want := map[string]string{
		"ExecStart":                "/usr/local/bin/receiver",
		"EnvironmentFile":          "/etc/cdse-receiver/receiver.env",
		"StateDirectory":           "cdse-receiver",
		"ProtectSystem":            "strict",
		"ProtectHome":              "yes",
		"PrivateTmp":               "yes",
		"NoNewPrivileges":          "yes",
		"AmbientCapabilities":      "CAP_NET_BIND_SERVICE",
		"CapabilityBoundingSet":    "CAP_NET_BIND_SERVICE",
		"Restart":                  "on-failure",
		"RestartPreventExitStatus": "2", // a configuration error
	}
	for k, v := range want {
		if got := u.one(t, "Service", k); got != v {
			t.Errorf("[Service] %s=%q, want %q", k, got, v)
		}
	}
	if user := u.one(t, "Service", "User"); u.one(t, "Service", "DynamicUser") != "yes" && (user == "" || user == "root" || user == "0") {
		t.Error("the receiver runs as root: DynamicUser=yes or User= of its own")
	}
	if u.one(t, "Install", "WantedBy") != "multi-user.target" {
		t.Error("[Install] WantedBy=multi-user.target is missing")
	}

	// The data directory is the StateDirectory, and only the unit says so.
	uenv := u.environment(t)
	if dir, state := uenv["RECEIVER_DATA_DIR"], "/var/lib/"+u.one(t, "Service", "StateDirectory"); dir != state {
		t.Errorf("RECEIVER_DATA_DIR=%q, the StateDirectory is %s (the rest of the file system is read-only)", dir, state)
	}
	if v, ok := active(env)["RECEIVER_DATA_DIR"]; ok && v != uenv["RECEIVER_DATA_DIR"] {
		t.Errorf("%s sets RECEIVER_DATA_DIR=%s, outside the StateDirectory", envFile, v)
	}

	// systemd waits longer than the receiver takes to stop.
	stop := timespan(t, u.one(t, "Service", "TimeoutStopSec"))
	bound := config.Default().ShutdownTimeout
	if v, ok := active(env)["RECEIVER_SHUTDOWN_TIMEOUT"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("RECEIVER_SHUTDOWN_TIMEOUT=%s: %v", v, err)
		}
		bound = max(bound, d)
	}
	if stop <= bound {
		t.Errorf("TimeoutStopSec %s is not above the receiver's shutdown bound %s: systemd would kill it mid-shutdown", stop, bound)
	}

	// Every credential loaded is a _FILE of the settings, and every _FILE
	// under the credentials directory is loaded.
	loaded := map[string]bool{}
	for _, lc := range u["Service"]["LoadCredential"] {
		id, src, ok := strings.Cut(lc, ":")
		if !ok || !strings.HasPrefix(src, "/etc/cdse-receiver/") {
			t.Errorf("LoadCredential=%s: want id:/etc/cdse-receiver/file", lc)
		}
		loaded[id] = true
	}
	secret := map[string]bool{}
	for _, st := range config.Settings() {
		if st.Secret {
			secret[st.Name+"_FILE"] = true
		}
	}
	used := map[string]bool{}
	for _, a := range env {
		if !secret[a.name] { // INTERESTS_FILE is a file the receiver reads itself
			continue
		}
		id, ok := strings.CutPrefix(a.value, credentials)
		switch {
		case !ok:
			t.Errorf("%s:%d: %s=%s is not a credential of the unit (%s...): the receiver cannot read /etc/cdse-receiver", envFile, a.line, a.name, a.value, credentials)
		case !a.commented && !loaded[id]:
			t.Errorf("%s:%d: %s names the credential %q, which the unit does not load", envFile, a.line, a.name, id)
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
}

// Every variable of the example is a setting of the receiver, secrets only
// from files; the values are those the set-up needs.
func TestEnvironmentFile(t *testing.T) {
	known := map[string]bool{}
	secret := map[string]bool{}
	for _, s := range config.Settings() {
		known[s.Name] = true
		if s.Secret {
			secret[s.Name] = true
			known[s.Name+"_FILE"] = true
		}
	}
	env := parseEnv(t, envFile)
	seen := map[string]int{}
	for _, a := range env {
		if !known[a.name] {
			t.Errorf("%s:%d: %s is not a setting of the receiver", envFile, a.line, a.name)
		}
		if secret[a.name] {
			t.Errorf("%s:%d: %s in clear: give %s_FILE, a credential of the unit", envFile, a.line, a.name, a.name)
		}
		if !a.commented {
			if prev, ok := seen[a.name]; ok {
				t.Errorf("%s:%d: %s again (line %d)", envFile, a.line, a.name, prev)
			}
			seen[a.name] = a.line
		}
	}
	vars := active(env)
	for name, want := range map[string]string{"RECEIVER_ADDR": ":443", "RECEIVER_ACME_HTTP_ADDR": ":80"} {
		if vars[name] != want {
			t.Errorf("%s=%q, want %q", name, vars[name], want)
		}
	}
	for _, name := range []string{"RECEIVER_ACME_DOMAINS", "RECEIVER_ACME_EMAIL", "RECEIVER_USERNAME", "RECEIVER_PASSWORD_FILE", "RECONCILE_INTERVAL", "INTERESTS_FILE", "CDSE_USERNAME", "CDSE_PASSWORD_FILE"} {
		if vars[name] == "" {
			t.Errorf("%s is not set", name)
		}
	}
	if err := acmerules.ValidateDomains(strings.Split(vars["RECEIVER_ACME_DOMAINS"], ",")); err != nil {
		t.Errorf("RECEIVER_ACME_DOMAINS: %v", err)
	}
	if host, _, err := net.SplitHostPort(vars["RECEIVER_ADMIN_ADDR"]); err != nil || !net.ParseIP(host).IsLoopback() {
		t.Errorf("RECEIVER_ADMIN_ADDR=%q: the admin endpoints belong on loopback", vars["RECEIVER_ADMIN_ADDR"])
	}
	if v := vars["NATS_EMBEDDED_ADDR"]; v != "" {
		t.Errorf("NATS_EMBEDDED_ADDR=%s: the example keeps the embedded NATS on loopback", v)
	}
}

// The receiver accepts the example as it is, with the unit's environment
// and a password in each credential.
func TestTheReceiverLoadsTheExample(t *testing.T) {
	u := parseUnit(t, unitFile)
	vars := active(parseEnv(t, envFile))
	for k, v := range u.environment(t) {
		vars[k] = v
	}
	creds := t.TempDir()
	for k, v := range vars {
		if id, ok := strings.CutPrefix(v, credentials); ok && strings.HasSuffix(k, "_FILE") {
			f := filepath.Join(creds, id)
			if err := os.WriteFile(f, []byte("a-long-password-for-"+id+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			vars[k] = f
		}
	}
	// The interests file at its place: the example shipped beside the unit.
	if vars["INTERESTS_FILE"] != "/etc/cdse-receiver/interests.yaml" {
		t.Errorf("INTERESTS_FILE=%q, want /etc/cdse-receiver/interests.yaml", vars["INTERESTS_FILE"])
	}
	vars["INTERESTS_FILE"] = interestsFile
	c, err := config.Load(config.Sources{Getenv: func(name string) string { return vars[name] }})
	if err != nil {
		t.Fatalf("the receiver does not load the example: %v", err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("the receiver refuses the example: %v", err)
	}
	if c.Addr != ":443" || c.DataDir != "/var/lib/cdse-receiver" || c.ReconcileFilter != "" || c.ACMEDomains == "" {
		t.Errorf("loaded: addr %q, data dir %q, reconcile filter %q (want the interests' union), ACME %q", c.Addr, c.DataDir, c.ReconcileFilter, c.ACMEDomains)
	}
	// The interests shipped beside the unit are ones the receiver takes
	// (Validate read them too).
	if set, err := interestfile.Load(interestsFile); err != nil || set.Len() != 3 {
		t.Errorf("%s: %v", interestsFile, err)
	}
	if !strings.Contains(strings.Join(u["Service"]["ExecReload"], ""), "-HUP") {
		t.Error("no ExecReload sending SIGHUP: systemctl reload would not re-read the interests")
	}
}

// systemd itself reads the unit: `systemd-analyze verify` (no warning at
// all) and its offline security review, where systemd-analyze is installed
// (Debian's systemd package). Without it, the checks above stand alone.
// The fetcher's unit is held to the same.
func TestSystemdAnalyze(t *testing.T) {
	for _, tt := range []struct{ unit, bin string }{{unitFile, "receiver"}, {fetcherUnitFile, "fetcher"}} {
		t.Run(tt.bin, func(t *testing.T) { systemdAnalyze(t, tt.unit, tt.bin) })
	}
}

// systemdAnalyze verifies unitFile, whose ExecStart is /usr/local/bin/<binary>.
func systemdAnalyze(t *testing.T, unitFile, binary string) {
	bin, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze is not installed: the unit is checked by the other tests only")
		return
	}
	// verify wants ExecStart's binary: a stand-in, the unit otherwise as
	// shipped, under its own name.
	dir := t.TempDir()
	stub := filepath.Join(dir, binary)
	if err := os.WriteFile(stub, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	execStart := "ExecStart=/usr/local/bin/" + binary + "\n"
	if !strings.Contains(string(b), execStart) {
		t.Fatalf("no %s line", strings.TrimSpace(execStart))
	}
	copyFile := filepath.Join(dir, unitFile)
	if err := os.WriteFile(copyFile, []byte(strings.Replace(string(b), execStart, "ExecStart="+stub+"\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "verify", copyFile).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}

	out, err = exec.Command(bin, "security", "--offline=yes", "--no-pager", copyFile).CombinedOutput()
	if err != nil && strings.Contains(string(out), "offline") {
		t.Logf("this systemd-analyze has no offline security review: %s", strings.TrimSpace(string(out)))
		return
	}
	m := regexp.MustCompile(`Overall exposure level for ` + regexp.QuoteMeta(unitFile) + `: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	exposure, _ := strconv.ParseFloat(string(m[1]), 64)
	t.Logf("systemd-analyze security: exposure %.1f", exposure)
	if exposure > 2.0 {
		var weak []string
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "✗") {
				weak = append(weak, line)
			}
		}
		t.Errorf("exposure %.1f, want at most 2.0 (OK):\n%s", exposure, strings.Join(slices.Compact(weak), "\n"))
	}
}
