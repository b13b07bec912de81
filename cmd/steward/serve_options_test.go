package main

import (
	"strings"
	"testing"
)

func TestServeFlagsRefuseInvalidValuesNamingTheFlag(t *testing.T) {
	tests := map[string]struct {
		reason  string
		args    []string
		wantErr string
	}{
		"PortOutOfRange":             {reason: "a port must be a TCP port", args: []string{"--port=70000"}, wantErr: "--port: 70000"},
		"UnknownCertMode":            {reason: "only two certificate modes exist", args: []string{"--cert-mode=vault"}, wantErr: `--cert-mode: "vault"`},
		"BadLogLevel":                {reason: "log levels are names or numbers", args: []string{"--log-level=loud"}, wantErr: "--log-level:"},
		"BadMetricsAddr":             {reason: "addresses need host:port", args: []string{"--metrics-bind-address=8080"}, wantErr: "--metrics-bind-address:"},
		"MissingClientCA":            {reason: "a client CA file that does not exist is refused at start-up", args: []string{"--client-ca-file=/does/not/exist"}, wantErr: "--client-ca-file:"},
		"BadMemoryLimit":             {reason: "a memory limit is a quantity of bytes", args: []string{"--memory-limit=lots"}, wantErr: "--memory-limit:"},
		"BadRequestMemory":           {reason: "the request budget must hold one maximum-size review", args: []string{"--request-memory=1Mi"}, wantErr: "--request-memory: 1Mi is below 32Mi"},
		"InsecureMetricsOffLoopback": {reason: "metrics without authentication only on loopback", args: []string{"--metrics-secure=false", "--metrics-bind-address=:8080"}, wantErr: "--metrics-secure=false serves metrics to anyone"},
		"NegativeDelay":              {reason: "a shutdown delay cannot be negative", args: []string{"--shutdown-delay=-1s"}, wantErr: "--shutdown-delay:"},
		"RegistrationURLNotHTTPS":    {reason: "the API server calls webhooks over HTTPS only", args: []string{"--registration-url=http://127.0.0.1:9443"}, wantErr: "--registration-url:"},
		"RegistrationURLWithPath":    {reason: "each webhook adds its own path", args: []string{"--registration-url=https://127.0.0.1:9443/validate"}, wantErr: "--registration-url:"},
		"StrayArgument":              {reason: "positional arguments are a mistake", args: []string{"extra"}, wantErr: "unexpected arguments"},
		"UnknownFlagFails":           {reason: "unknown flags are errors", args: []string{"--prot=1"}, wantErr: "flag provided but not defined: --prot"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := parseServeFlags(tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: got %v, want an error containing %q", tc.reason, err, tc.wantErr)
			}
		})
	}
}

func TestServeFlagDefaultsAreValid(t *testing.T) {
	o, err := parseServeFlags(nil)
	if err != nil {
		t.Fatalf("defaults must be valid: %v", err)
	}
	if o.enableHTTP2 || o.port != 9443 || o.certMode != certModeFiles {
		t.Errorf("unexpected defaults: http2=%v port=%d certMode=%s", o.enableHTTP2, o.port, o.certMode)
	}
}

func TestInsecureMetricsOnLoopbackAreAccepted(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:8080", "[::1]:8080", "localhost:8080", "0"} {
		if _, err := parseServeFlags([]string{"--metrics-secure=false", "--metrics-bind-address=" + addr}); err != nil {
			t.Errorf("--metrics-secure=false --metrics-bind-address=%s: %v", addr, err)
		}
	}
}
