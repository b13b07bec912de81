package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// reading is the state of every process's counters at one moment.
type reading struct {
	cpu         map[string]time.Duration
	machineBusy time.Duration
	steward     scrape
	allowAll    scrape
	warnings    int64
}

// pids are the processes whose CPU time is read, by name.
func (b *bench) pids() map[string]int {
	return map[string]int{
		procAPIServer: b.c.apiPID,
		procEtcd:      b.c.etcdPID,
		procSteward:   b.c.steward().PID(),
		procAllowAll:  b.aa.pid(),
		procLoad:      os.Getpid(),
	}
}

func (b *bench) read() reading {
	r := reading{cpu: map[string]time.Duration{}, warnings: b.c.warnings.Load()}
	for name, pid := range b.pids() {
		if d, err := cpuTime(pid); err == nil {
			r.cpu[name] = d
		}
	}
	r.machineBusy, _, _ = machineCPU()
	var err error
	if r.steward, err = readStewardMetrics(b.c.steward()); err != nil {
		b.warnf("reading steward's metrics: %v", err)
	}
	if r.allowAll, err = readMetrics(b.aa.metricsURL()); err != nil {
		b.warnf("reading the allow-all webhook's metrics: %v", err)
	}
	return r
}

const (
	requestsMetric = "controller_runtime_webhook_requests_total"
	latencyMetric  = "controller_runtime_webhook_latency_seconds"
	decisionMetric = "steward_decision_duration_seconds"
)

// fill sets a point's process figures from the readings around it.
func (p *point) fill(before, after reading) {
	p.CPU = map[string]time.Duration{}
	for name, d := range after.cpu {
		p.CPU[name] = d - before.cpu[name]
	}
	p.MachineBusy = after.machineBusy - before.machineBusy
	if before.steward != nil && after.steward != nil {
		p.StewardCalls = after.steward.value(requestsMetric, nil) - before.steward.value(requestsMetric, nil)
		if p.Config == cfgSteward {
			p.handler = after.steward.histogram(latencyMetric, nil).sub(before.steward.histogram(latencyMetric, nil))
			p.decision = after.steward.histogram(decisionMetric, nil).sub(before.steward.histogram(decisionMetric, nil))
		}
	} else {
		p.MetricsMissing = true
	}
	if before.allowAll != nil && after.allowAll != nil {
		p.AllowAllCalls = after.allowAll.value(requestsMetric, nil) - before.allowAll.value(requestsMetric, nil)
		if p.Config == cfgAllowAll {
			p.handler = after.allowAll.histogram(latencyMetric, nil).sub(before.allowAll.histogram(latencyMetric, nil))
		}
	} else {
		p.MetricsMissing = true
	}
	if n := p.Answered() + p.Failed; n > 0 {
		p.WarningsPer = float64(after.warnings-before.warnings) / float64(n)
	}
}

func finiteNum(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// heapAlloc reads Steward's live heap after a garbage collection, from the
// runtime.MemStats that the pprof heap endpoint prints in its text form.
func heapAlloc(pprofAddr string) (int64, error) {
	resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/heap?debug=1&gc=1")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET heap profile: %s", resp.Status)
	}
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "# HeapAlloc = "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("the heap profile has no HeapAlloc line")
}

// fetchProfile saves a pprof profile of Steward to path.
func fetchProfile(pprofAddr, query, path string) error {
	client := &http.Client{Timeout: 2 * time.Minute}
	resp, err := client.Get("http://" + pprofAddr + "/debug/pprof/" + query)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", query, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}
