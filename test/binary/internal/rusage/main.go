// Command rusage runs a command and writes its peak resident memory, in
// bytes, to the file named by $RUSAGE_OUT. The whole-binary tests measure
// a command through it because getrusage in the test process itself would
// count the test process's own peak: a child started with vfork and exec
// inherits the high-water mark of the memory it shared with its parent
// until the exec. From this small process, that is a few megabytes.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		fmt.Fprintln(os.Stderr, "rusage:", err)
		os.Exit(127)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		_ = os.WriteFile(os.Getenv("RUSAGE_OUT"), []byte(fmt.Sprint(ru.Maxrss<<10)), 0o600) // kilobytes on Linux
	}
	os.Exit(cmd.ProcessState.ExitCode())
}
