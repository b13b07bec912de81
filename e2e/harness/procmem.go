package harness

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
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
