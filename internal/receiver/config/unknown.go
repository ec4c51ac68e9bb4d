package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/platform/settings"
)

// ourPrefixes are the environment prefixes our binaries read: a variable
// under one of them that none reads is a typo (RECEIVER_MAX_BODDY), which
// the environment, unlike the YAML file, cannot refuse.
var ourPrefixes = []string{"RECEIVER_", "NATS_", "CDSE_", "INTEREST", "QUARANTINE_", "PULL_", "RECONCILE_", "WATCH_", "FETCH_", "COMPLETE_"}

// otherNames are the variables under our prefixes that a binary or example
// other than the receiver's settings reads, so that one environment file
// can serve them all without a warning. A test holds this list to the code
// (TestKnownEnvCoversTheCode).
var otherNames = []string{
	"RECEIVER_CONFIG",    // receiver, every command: --config's default
	"RECEIVER_ADMIN_URL", // register status
	"INTEREST",           // examples/node: the interest to consume
	"INTEREST_PREFIX",    // examples/node: the interests' subject prefix
}

// fetcherNames are the fetcher's variables (FETCH_*, and the NATS_* and
// CDSE_* it shares with the receiver), from its settings' one list.
var fetcherNames = fetchconfig.Names()

// KnownEnv reports whether name is a variable one of our binaries or
// examples reads.
func KnownEnv(name string) bool {
	if slices.Contains(otherNames, name) || slices.Contains(fetcherNames, name) {
		return true
	}
	for _, s := range all {
		if name == s.Name || s.Secret && name == s.Name+"_FILE" {
			return true
		}
	}
	return false
}

// UnknownEnv lists the variables of environ (KEY=VALUE, as os.Environ) that
// are under our prefixes and that nothing of ours reads, each with the
// known name it most resembles ("" when none is close). Kubernetes'
// service links (NATS_SERVICE_HOST, NATS_PORT_4222_TCP, ... for a Service
// named nats) are not ours and not listed.
func UnknownEnv(environ []string) (unknown []UnknownVar) {
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !ours(name) || serviceLink(name) || KnownEnv(name) {
			continue
		}
		unknown = append(unknown, UnknownVar{Name: name, Suggest: closest(name)})
	}
	return unknown
}

// UnknownVar is a variable nothing reads.
type UnknownVar = settings.Unknown

func ours(name string) bool {
	for _, p := range ourPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// serviceLink reports the variables Kubernetes sets for each Service of
// the namespace (<SVC>_SERVICE_HOST, <SVC>_SERVICE_PORT[_<NAME>],
// <SVC>_PORT, <SVC>_PORT_<port>_<proto>[_PROTO|_PORT|_ADDR]).
func serviceLink(name string) bool {
	return strings.HasSuffix(name, "_SERVICE_HOST") || strings.Contains(name, "_SERVICE_PORT") ||
		strings.HasSuffix(name, "_PORT") || strings.Contains(name, "_PORT_")
}

// closest is the known name nearest to name by edit distance, when it is
// near enough to be a typo of it.
func closest(name string) string {
	best, bestD := "", 4
	consider := func(known string) {
		if d := distance(name, known); d < bestD {
			best, bestD = known, d
		}
	}
	for _, s := range all {
		consider(s.Name)
		if s.Secret {
			consider(s.Name + "_FILE")
		}
	}
	for _, n := range append(slices.Clone(otherNames), fetcherNames...) {
		consider(n)
	}
	return best
}

// distance is the Levenshtein distance of a and b (names are short).
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// TypoHints is a line per variable of environ (as os.Environ) that
// nothing reads and that resembles a known one, "" when none does. It goes
// with a configuration error: a setting reported missing is often the one
// misspelt, and the warning at start comes only once the rest is valid.
func TypoHints(environ []string) string {
	var b strings.Builder
	for _, u := range UnknownEnv(environ) {
		if u.Suggest != "" {
			fmt.Fprintf(&b, "\n%s is set, and nothing reads it: did you mean %s?", u.Name, u.Suggest)
		}
	}
	return b.String()
}
