// Package buildinfo says what a binary is: its version, the commit it was
// built from, when, and with which Go. The values live in
// github.com/prometheus/common/version (set with -ldflags -X at build time,
// as Prometheus' own builds set them), so that `--version` and the
// cdse_receiver_build_info metric can never disagree.
package buildinfo

import (
	"fmt"
	"runtime"

	"github.com/prometheus/common/version"
)

// Info is a binary's build.
type Info struct {
	Version   string `json:"version" yaml:"version"`
	Revision  string `json:"revision" yaml:"revision"`
	BuildDate string `json:"buildDate" yaml:"buildDate"`
	GoVersion string `json:"goVersion" yaml:"goVersion"`
	Platform  string `json:"platform" yaml:"platform"`
}

// A build without -X says "dev", in --version and in the metric alike.
func init() {
	if version.Version == "" {
		version.Version = "dev"
	}
}

// Get returns this binary's build. The revision falls back to what the Go
// toolchain recorded (vcs.revision) when the build did not set it.
func Get() Info {
	i := Info{Version: version.Version, Revision: version.GetRevision(), BuildDate: version.BuildDate,
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if i.Revision == "" {
		i.Revision = "unknown"
	}
	if i.BuildDate == "" {
		i.BuildDate = "unknown"
	}
	return i
}

// String is the one line `--version` prints.
func (i Info) String(program string) string {
	return fmt.Sprintf("%s version %s (revision %s, built %s, %s, %s)", program, i.Version, i.Revision, i.BuildDate, i.GoVersion, i.Platform)
}
