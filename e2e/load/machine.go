package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/stewardhq/steward/e2e/harness"
)

// machine describes where the numbers were measured.
type machine struct {
	CPUs          int    `json:"cpus"`
	CPUModel      string `json:"cpuModel"`
	MemoryBytes   int64  `json:"memoryBytes"`
	Kernel        string `json:"kernel"`
	GoVersion     string `json:"goVersion"`
	KubeAPIServer string `json:"kubeAPIServer"`
	Etcd          string `json:"etcd"`
	Commit        string `json:"commit"`
	LoadAvgStart  string `json:"loadAvgStart"`
	LoadAvgEnd    string `json:"loadAvgEnd"`
}

func describeMachine(ctx context.Context, c *cluster) machine {
	m := machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), LoadAvgStart: loadAvg()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			if v, ok := strings.CutPrefix(s.Text(), "MemTotal:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				m.MemoryBytes = kb * 1024
			}
		}
		f.Close()
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	if v, err := c.kube.Discovery().ServerVersion(); err == nil {
		m.KubeAPIServer = v.GitVersion
	}
	if dir, err := harness.AssetsDir(); err == nil {
		if out, err := exec.CommandContext(ctx, filepath.Join(dir, "etcd"), "--version").Output(); err == nil {
			for _, line := range strings.Split(string(out), "\n") {
				if v, ok := strings.CutPrefix(line, "etcd Version: "); ok {
					m.Etcd = strings.TrimSpace(v)
				}
			}
		}
	}
	if root, err := harness.RepoRoot(); err == nil {
		if out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short", "HEAD").Output(); err == nil {
			m.Commit = strings.TrimSpace(string(out))
		}
	}
	return m
}

func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
