package harness

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Memory is a process's resident memory from /proc/<pid>/status.
type Memory struct {
	// RSS is the current resident set size (VmRSS).
	RSS int64
	// Peak is the highest resident set size since the process started
	// (VmHWM).
	Peak int64
}

// ProcessMemory reads a process's VmRSS and VmHWM.
func ProcessMemory(pid int) (Memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	defer f.Close()
	var m Memory
	s := bufio.NewScanner(f)
	for s.Scan() {
		key, value, ok := strings.Cut(s.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch key {
		case "VmRSS":
			dst = &m.RSS
		case "VmHWM":
			dst = &m.Peak
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("/proc/%d/status %s: %w", pid, key, err)
		}
		*dst = kb * 1024
	}
	return m, s.Err()
}

// ResetPeakMemory starts a new VmHWM from the current resident size
// (/proc/<pid>/clear_refs), so that a measurement's peak is its own.
func ResetPeakMemory(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat:
// Linux fixes it at 100 on every architecture Go supports.
const clockTicks = 100

// ProcessCPU returns the CPU time (user + system) a process has used.
func ProcessCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name is parenthesised and may contain spaces; after it,
	// utime and stime are fields 14 and 15 of the line (indexes 11, 12).
	end := bytes.LastIndexByte(data, ')')
	fields := strings.Fields(string(data[end+1:]))
	if end < 0 || len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad utime/stime %q %q", pid, fields[11], fields[12])
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// MachineBusy returns the CPU time the whole machine has spent busy, all
// cores together, from the first line of /proc/stat.
func MachineBusy() (time.Duration, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	// user nice system idle iowait irq softirq steal; guest time is
	// already counted in user and nice.
	var busy int64
	for i, f := range fields[1:9] {
		if t, _ := strconv.ParseInt(f, 10, 64); i != 3 && i != 4 {
			busy += t
		}
	}
	return time.Duration(busy) * time.Second / clockTicks, nil
}

// ControlPlanePIDs returns the process ids of the Env's kube-apiserver and
// etcd, found by the work directory in their command lines (as the
// watchdog finds them), so that their CPU time can be read.
func (e *Env) ControlPlanePIDs() (apiServer, etcd int, err error) {
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil || !bytes.Contains(data, []byte(e.mark)) {
			continue
		}
		argv0, _, _ := bytes.Cut(data, []byte{0})
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		switch filepath.Base(string(argv0)) {
		case "kube-apiserver":
			apiServer = pid
		case "etcd":
			etcd = pid
		}
	}
	if apiServer == 0 || etcd == 0 {
		return 0, 0, fmt.Errorf("finding kube-apiserver and etcd in /proc: found pids %d and %d", apiServer, etcd)
	}
	return apiServer, etcd, nil
}
