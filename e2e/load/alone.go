package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"
)

// The webhook processes alone: the reviews the API server sent the
// allow-all webhook for each workload, recorded in (c), are sent straight
// to Steward and to the allow-all webhook over the same kind of TLS
// connection, with the API server out of the loop (configuration (a) is in
// effect). The CPU each process spends per call is then its own request
// path only: no informer events (nothing is written), no API server
// competing for the cores, the same requests for both.

// alonePoint is one target driven directly at one number of writers,
// summed over its rounds.
type alonePoint struct {
	Workload string        `json:"workload"`
	Target   string        `json:"target"`
	Writers  int           `json:"writers"`
	Elapsed  time.Duration `json:"elapsed"`
	Calls    int           `json:"calls"`
	Failed   int           `json:"failed"`
	Errors   []string      `json:"errors,omitempty"`
	CPU      time.Duration `json:"cpu"`
	P50      time.Duration `json:"p50"`
	P99      time.Duration `json:"p99"`

	latencies []time.Duration
}

// Targets of the direct drive.
const (
	targetSteward  = "steward"
	targetAllowAll = "allow-all"
)

// Rate is calls answered per second.
func (p *alonePoint) Rate() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Calls) / p.Elapsed.Seconds()
}

// CPUPerCall is the target's CPU time per answered call, in ms.
func (p *alonePoint) CPUPerCall() float64 {
	if p.Calls == 0 {
		return 0
	}
	return float64(p.CPU) / float64(time.Millisecond) / float64(p.Calls)
}

// findAlone returns a direct-drive point, or nil.
func (r *results) findAlone(wl, target string, writers int) *alonePoint {
	for _, p := range r.Alone {
		if p.Workload == wl && p.Target == target && p.Writers == writers {
			return p
		}
	}
	return nil
}

// recording runs measure, and keeps the reviews the allow-all webhook
// receives during w's first point in (c).
func (b *bench) recording(w *workload, cfg configID, measure func() (*point, error)) (*point, error) {
	if cfg != cfgAllowAll || b.reviews[w.Name] != nil {
		return measure()
	}
	if err := b.aa.record(); err != nil {
		b.warnf("recording %s's reviews: %v", w.Name, err)
	}
	p, err := measure()
	got, rerr := b.aa.recorded()
	switch {
	case rerr != nil:
		b.warnf("recording %s's reviews: %v", w.Name, rerr)
	case len(got) > 0:
		b.reviews[w.Name] = got
	}
	return p, err
}

// runAlone drives Steward and the allow-all webhook with each workload's
// recorded reviews, alternating the two, at every number of writers.
func (b *bench) runAlone(ctx context.Context, all []*workload) error {
	if err := b.sw.switchTo(ctx, cfgNone); err != nil {
		return err
	}
	steward, err := aloneClient(b.c.steward().CABundle())
	if err != nil {
		return err
	}
	allowAll, err := aloneClient(b.aa.ca)
	if err != nil {
		return err
	}
	targets := []struct {
		name   string
		pid    int
		client *http.Client
		url    func(string) string
	}{
		{targetSteward, b.c.steward().PID(), steward, b.c.steward().URL},
		{targetAllowAll, b.aa.pid(), allowAll, b.aa.url},
	}
	k := 0
	for _, w := range all {
		reviews := b.reviews[w.Name]
		if len(reviews) == 0 {
			continue
		}
		paths := make([]string, 0, len(reviews))
		for p := range reviews {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		for _, n := range b.opts.concurrency {
			rounds := map[string][]*alonePoint{}
			for range b.opts.rounds {
				order := []int{0, 1}
				if k%2 == 1 {
					slices.Reverse(order)
				}
				k++
				for _, i := range order {
					t := targets[i]
					ops := perWriter(n, func(int) op {
						return func(ctx context.Context, seq int) error {
							p := paths[seq%len(paths)]
							return callDirect(ctx, t.client, t.url(p), reviews[p])
						}
					})
					var cpu0, cpu1 time.Duration
					l := runLoad(ctx, ops, b.opts.warmup, b.opts.duration, 0,
						func() { cpu0, _ = cpuTime(t.pid) },
						func() { cpu1, _ = cpuTime(t.pid) })
					rounds[t.name] = append(rounds[t.name], &alonePoint{Workload: w.Name, Target: t.name, Writers: n,
						Elapsed: l.Elapsed, Calls: l.Answered(), Failed: l.Failed, Errors: l.FirstErrors, CPU: cpu1 - cpu0, latencies: l.latencies})
				}
			}
			for _, t := range targets {
				p := mergeAlone(rounds[t.name])
				b.res.Alone = append(b.res.Alone, p)
				logf("%-30s alone %-9s %3d writers: %6.0f calls/s  p50 %6.2fms  p99 %6.2fms  CPU/call %.3f ms  errors %d",
					w.Name, t.name, n, p.Rate(), ms(p.P50), ms(p.P99), p.CPUPerCall(), p.Failed)
			}
		}
	}
	return nil
}

// mergeAlone sums the rounds of one target at one number of writers.
func mergeAlone(rounds []*alonePoint) *alonePoint {
	first := rounds[0]
	p := &alonePoint{Workload: first.Workload, Target: first.Target, Writers: first.Writers}
	for _, r := range rounds {
		p.Elapsed += r.Elapsed
		p.Calls += r.Calls
		p.Failed += r.Failed
		p.CPU += r.CPU
		p.Errors = append(p.Errors, r.Errors...)
		p.latencies = append(p.latencies, r.latencies...)
	}
	slices.Sort(p.latencies)
	p.P50, p.P99 = percentile(p.latencies, 0.5), percentile(p.latencies, 0.99)
	return p
}

// aloneClient speaks to a webhook as the API server does: TLS verified
// against the webhook's CA, HTTP/1.1, connections kept alive.
func aloneClient(ca []byte) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("no CA to verify the webhook's certificate with")
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		MaxIdleConnsPerHost: 1024,
	}}, nil
}

// callDirect posts one review and checks that the answer is a verdict: an
// allowed or denied AdmissionReview response, not an error.
func callDirect(ctx context.Context, c *http.Client, url string, review []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(review))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	var answer struct {
		Response *struct {
			Allowed bool `json:"allowed"`
			Status  *struct {
				Code    int32  `json:"code"`
				Message string `json:"message"`
			} `json:"status"`
		} `json:"response"`
	}
	if err := json.Unmarshal(body, &answer); err != nil || answer.Response == nil {
		return fmt.Errorf("%s: not an AdmissionReview answer: %.200s", url, body)
	}
	if r := answer.Response; !r.Allowed && r.Status != nil && r.Status.Code != http.StatusForbidden {
		return fmt.Errorf("%s: answered %d: %s", url, r.Status.Code, r.Status.Message)
	}
	return nil
}
