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
	dir string
	// built holds the versions built into dir.
	built map[string]bool
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
		binary.dir, binary.built = "", nil
	}
}

// stewardBinary builds ./cmd/steward the first time it is called and returns
// the binary's path: the process under test is the real command with its
// real flag parsing, not a function called inside the test process.
// BuildVersion is the version the harness stamps into the steward binary
// it builds, as make build and the Dockerfile stamp theirs.
const BuildVersion = "v0.0.0-e2e"

func stewardBinary() (string, error) {
	return StewardBinary(BuildVersion)
}

// StewardBinary returns the path of the steward binary stamped with
// version (steward_build_info, steward version), built from the work tree
// on first use: with another version than BuildVersion, the binary a
// rolling upgrade moves replicas to (Steward.UseBinary).
func StewardBinary(version string) (string, error) {
	binary.Lock()
	defer binary.Unlock()
	if binary.dir == "" {
		return "", fmt.Errorf("building steward: no Env is running")
	}
	name := "steward"
	if version != BuildVersion {
		name += "-" + version
	}
	path := filepath.Join(binary.dir, name)
	if binary.built[version] {
		return path, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-ldflags", "-X main.version="+version, "-o", path, "./cmd/steward")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building steward (go build ./cmd/steward): %w\n%s", err, out)
	}
	if binary.built == nil {
		binary.built = map[string]bool{}
	}
	binary.built[version] = true
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
