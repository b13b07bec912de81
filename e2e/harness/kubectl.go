package harness

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// kubectlPath is where kubectl is installed; PATH is searched when it is
// elsewhere.
const kubectlPath = "/usr/bin/kubectl"

// Kubectl runs kubectl with the admin kubeconfig and args, feeding it stdin.
// Impersonate with "--as", "jane", "--as-group", "devs". err is non-nil when
// kubectl exits non-zero; it quotes stderr, which is also returned as is.
func (e *Env) Kubectl(ctx context.Context, stdin string, args ...string) (stdout, stderr string, err error) {
	path, lookErr := exec.LookPath(kubectlPath)
	if lookErr != nil {
		if path, lookErr = exec.LookPath("kubectl"); lookErr != nil {
			return "", "", fmt.Errorf("kubectl is not installed: %w", lookErr)
		}
	}
	cmd := exec.CommandContext(ctx, path, append([]string{"--kubeconfig", e.Kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Env = append(cmd.Environ(), "KUBECONFIG="+e.Kubeconfig)
	if err := cmd.Run(); err != nil {
		return out.String(), errOut.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), errOut.String(), nil
}
