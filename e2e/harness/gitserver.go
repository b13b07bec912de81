package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// GitServer serves bare Git repositories over smart HTTP on 127.0.0.1,
// through `git http-backend`, so Flux's source-controller clones from it as
// it clones from a Git host. Read-only: commits are pushed to the bare
// repositories on disk.
type GitServer struct {
	root     string
	listener net.Listener
	server   *http.Server
}

// GitRepo is a repository on a GitServer and the working tree commits are
// made in.
type GitRepo struct {
	// URL is the repository's clone URL (http://127.0.0.1:<port>/<name>.git).
	URL string
	// Branch is the branch commits go to.
	Branch string
	bare   string
	work   string
}

// StartGitServer serves the repositories of a new directory under the
// Env's work directory until t ends.
func (e *Env) StartGitServer(t Lifetime) (*GitServer, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("git is not installed: %w", err)
	}
	root, err := os.MkdirTemp(e.dir, "git-")
	if err != nil {
		return nil, fmt.Errorf("creating the Git server's directory: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the Git server: %w", err)
	}
	g := &GitServer{root: root, listener: l}
	g.server = &http.Server{Handler: &cgi.Handler{
		Path: git,
		Args: []string{"http-backend"},
		// GIT_HTTP_EXPORT_ALL serves every repository under the root
		// without a git-daemon-export-ok file in each.
		Env: append(gitEnv(), "GIT_PROJECT_ROOT="+root, "GIT_HTTP_EXPORT_ALL=1"),
	}}
	go func() { _ = g.server.Serve(l) }()
	t.Cleanup(func() { _ = g.server.Close() })
	return g, nil
}

// gitEnv keeps the machine's and the user's Git configuration out of the
// harness's git commands, so they behave the same everywhere.
func gitEnv() []string {
	return []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull, "HOME=" + os.TempDir()}
}

// NewRepo creates an empty repository name (served as <name>.git) with a
// working tree whose commits go to branch main.
func (g *GitServer) NewRepo(ctx context.Context, name string) (*GitRepo, error) {
	r := &GitRepo{
		URL:    fmt.Sprintf("http://%s/%s.git", g.listener.Addr(), name),
		Branch: "main",
		bare:   filepath.Join(g.root, name+".git"),
		work:   filepath.Join(g.root, name+".work"),
	}
	if _, err := runGit(ctx, g.root, "init", "--quiet", "--bare", "--initial-branch", r.Branch, r.bare); err != nil {
		return nil, err
	}
	if _, err := runGit(ctx, g.root, "init", "--quiet", "--initial-branch", r.Branch, r.work); err != nil {
		return nil, err
	}
	if _, err := runGit(ctx, r.work, "remote", "add", "origin", r.bare); err != nil {
		return nil, err
	}
	// A person commits in the working tree too (the sandbox's), with
	// their own Git configuration but for who they are, which it may lack.
	for _, kv := range [][2]string{{"user.name", "Steward sandbox"}, {"user.email", "sandbox@steward.invalid"}} {
		if _, err := runGit(ctx, r.work, "config", kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// WorkTree is the directory of the repository's working tree, whose
// origin is the repository served: commit there and push to Branch.
func (r *GitRepo) WorkTree() string { return r.work }

// Commit writes files (path in the repository → content), removes the
// paths in remove, commits that as message and pushes it, and returns the
// commit's SHA-1.
func (r *GitRepo) Commit(ctx context.Context, message string, files map[string]string, remove ...string) (string, error) {
	for path, content := range files {
		full := filepath.Join(r.work, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	if len(remove) > 0 {
		if _, err := runGit(ctx, r.work, append([]string{"rm", "--quiet", "--"}, remove...)...); err != nil {
			return "", err
		}
	}
	if _, err := runGit(ctx, r.work, "add", "--all"); err != nil {
		return "", err
	}
	if _, err := runGit(ctx, r.work, "commit", "--quiet", "-m", message); err != nil {
		return "", err
	}
	if _, err := runGit(ctx, r.work, "push", "--quiet", "origin", r.Branch); err != nil {
		return "", err
	}
	sha, err := runGit(ctx, r.work, "rev-parse", "HEAD")
	return strings.TrimSpace(sha), err
}

// runGit runs git in dir and returns its standard output.
func runGit(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv()...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			// git says why on either stream ("nothing to commit" is on
			// stdout).
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()+"\n"+out.String()))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return out.String(), nil
}
