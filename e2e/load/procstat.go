package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat.
// Linux fixes it at 100 on every architecture Go supports; reading it
// would need cgo (sysconf).
const clockTicks = 100

// cpuTime returns the CPU time (user + system) a process has used.
func cpuTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name is parenthesised and may contain spaces; the fields
	// after it start with the state (field 3), so utime and stime (fields
	// 14 and 15) are at indexes 11 and 12.
	end := bytes.LastIndexByte(data, ')')
	if end < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(data[end+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad utime/stime %q %q", pid, fields[11], fields[12])
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// machineCPU returns the busy and total CPU time of the whole machine, all
// cores together, from the first line of /proc/stat.
func machineCPU() (busy, total time.Duration, err error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var ticks [10]int64
	for i := 1; i < len(fields) && i <= len(ticks); i++ {
		ticks[i-1], _ = strconv.ParseInt(fields[i], 10, 64)
	}
	// user nice system idle iowait irq softirq steal guest guest_nice; guest
	// time is already counted in user and nice.
	var sum int64
	for _, t := range ticks[:8] {
		sum += t
	}
	idle := ticks[3] + ticks[4]
	toDur := func(t int64) time.Duration { return time.Duration(t) * time.Second / clockTicks }
	return toDur(sum - idle), toDur(sum), nil
}

// childrenNamed returns the pids of parent's children whose command name
// is name (the API server and etcd run as children of this process).
func childrenNamed(parent int, name string) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []int
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		open, end := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(string(data[end+1:]))
		if len(fields) < 2 || string(data[open+1:end]) != name {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid != parent {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data[:open]))); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
