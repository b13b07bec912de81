package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Run is what every report says of the run that wrote it: the machine and
// commit measured, when, and what went wrong without ending the run.
type Run struct {
	Machine           Machine
	Started, Finished time.Time
	Warnings          []string
}

// Machine is the machine's CPUs and the commit measured.
type Machine struct {
	CPUs             int
	CPUModel, Commit string
}

// NewRun describes this machine and the checked-out commit, which is
// dirty only when the code measured is.
func NewRun(ctx context.Context) Run {
	data, _ := os.ReadFile("/proc/cpuinfo")
	_, model, _ := strings.Cut(string(data), "model name")
	commit, _ := exec.CommandContext(ctx, "git", "rev-parse", "--short", "HEAD").Output()
	if exec.CommandContext(ctx, "git", "diff", "--quiet", "HEAD", "--", "cmd", "webhooks", "certs", "manifests", "e2e").Run() != nil {
		commit = append(bytes.TrimSpace(commit), " with uncommitted changes to the code"...)
	}
	m := Machine{CPUs: runtime.NumCPU(), CPUModel: strings.Trim(strings.SplitN(model, "\n", 2)[0], "\t :"), Commit: strings.TrimSpace(string(commit))}
	return Run{Machine: m, Started: time.Now()}
}

// Warnf logs a warning and keeps it for the report.
func (r *Run) Warnf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	Logf("warning: %s", msg)
	r.Warnings = append(r.Warnings, msg)
}

// Generated says when and on what the run was made.
func (r *Run) Generated() string {
	m := r.Machine
	return fmt.Sprintf("on %s at commit `%s`, on %d × %s", r.Started.UTC().Format("2006-01-02 15:04 MST"), m.Commit, m.CPUs, m.CPUModel)
}

// WarningList is the run's warnings as a Markdown list, one line each.
func (r *Run) WarningList() string {
	var b strings.Builder
	for _, msg := range r.Warnings {
		b.WriteString("- " + strings.NewReplacer("\n", " ", "|", `\|`).Replace(msg) + "\n")
	}
	return b.String()
}

// WriteSection writes svg as chart beside the report at path, and section
// between the report's markers of name, keeping the rest: what people
// wrote there, and the sections other runs write. A report without the
// markers gets the section at its end; no report, a title and the section.
func WriteSection(path, name, chart, svg, section string) error {
	Logf("writing the %s section of %s, and %s", name, path, filepath.Join(filepath.Dir(path), chart))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), chart), []byte(svg), 0o644); err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.WriteFile(path, []byte(splice(string(data), name, section)), 0o644)
}

// splice puts section, between name's markers, in place of report's
// section of that name (see WriteSection).
func splice(report, name, section string) string {
	begin := "<!-- " + name + ":begin (written by the benchmark; edit outside these markers, which a new run keeps) -->"
	end := "<!-- " + name + ":end -->"
	marked := begin + "\n" + strings.Trim(section, "\n") + "\n" + end
	if before, rest, ok := strings.Cut(report, begin); ok {
		if _, after, ok := strings.Cut(rest, end); ok {
			return before + marked + after
		}
	}
	if strings.TrimSpace(report) == "" {
		return "# Benchmarks\n\n" + marked + "\n"
	}
	return strings.TrimRight(report, "\n") + "\n\n" + marked + "\n"
}

// InRoot resolves a path relative to the repository root.
func InRoot(root, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(root, path)
}

// Logf logs a line of progress, with the time, to standard error.
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

// Sleep waits for d or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
