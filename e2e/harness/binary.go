package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// The steward binary is built once per process, on first use, into a
// directory shared by every Env in the process; the last Env to stop removes
// it (and the watchdog does, if the process dies).
var binary struct {
	sync.Mutex
	dir   string
	built bool
	users int
}

// acquireBinary registers an Env as a user of the binary and returns the
// directory it is built into.
func acquireBinary() (string, error) {
	binary.Lock()
	defer binary.Unlock()
	if binary.dir == "" {
		dir, err := os.MkdirTemp("", "steward-e2e-bin-")
		if err != nil {
			return "", fmt.Errorf("creating the directory for the steward binary: %w", err)
		}
		binary.dir = dir
	}
	binary.users++
	return binary.dir, nil
}

// releaseBinary removes the binary when no Env uses it any more.
func releaseBinary() {
	binary.Lock()
	defer binary.Unlock()
	if binary.users == 0 {
		return
	}
	binary.users--
	if binary.users == 0 {
		_ = os.RemoveAll(binary.dir)
		binary.dir, binary.built = "", false
	}
}

// stewardBinary builds ./cmd/steward the first time it is called and returns
// the binary's path: the process under test is the real command with its
// real flag parsing, not a function called inside the test process.
// BuildVersion is the version the harness stamps into the steward binary
// it builds, as make build and the Dockerfile stamp theirs.
const BuildVersion = "v0.0.0-e2e"

func stewardBinary() (string, error) {
	binary.Lock()
	defer binary.Unlock()
	if binary.dir == "" {
		return "", fmt.Errorf("building steward: no Env is running")
	}
	path := filepath.Join(binary.dir, "steward")
	if binary.built {
		return path, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-ldflags", "-X main.version="+BuildVersion, "-o", path, "./cmd/steward")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building steward (go build ./cmd/steward): %w\n%s", err, out)
	}
	binary.built = true
	return path, nil
}

// RunCommand runs the steward binary the harness built with args, as a
// user would from a terminal, and returns what it printed and its exit
// code; err is set only when it could not run at all.
func RunCommand(ctx context.Context, args ...string) (stdout, stderr string, code int, err error) {
	bin, err := stewardBinary()
	if err != nil {
		return "", "", 0, err
	}
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), errOut.String(), exit.ExitCode(), nil
	}
	return out.String(), errOut.String(), 0, err
}
