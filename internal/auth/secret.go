package auth

import (
	"fmt"
	"os"
	"strings"
)

// SecretFromEnv reads the secret NAME from the environment, or, when NAME is
// not set, from the file named by NAME_FILE (a mounted Kubernetes Secret, a
// Docker secret), without its trailing newline. Errors name the variable,
// never the value.
func SecretFromEnv(getenv func(string) string, name string) (string, error) {
	if v := getenv(name); v != "" {
		return v, nil
	}
	path := getenv(name + "_FILE")
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s_FILE: %w", name, err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}
