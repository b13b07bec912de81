package webhookserver

import (
	"fmt"
	"strconv"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// NewLogger returns a JSON logger at the given verbosity. Sampling is off:
// every decision line is an audit record and must not be dropped.
func NewLogger(verbosity int) (logr.Logger, error) {
	zc := zap.NewProductionConfig()
	zc.Level = zap.NewAtomicLevelAt(zapcore.Level(-verbosity))
	zc.Sampling = nil
	// The caller of every decision line is the same line of serving.Wrap;
	// finding it costs a stack walk per request.
	zc.DisableCaller = true
	zc.EncoderConfig.TimeKey = "ts"
	zc.EncoderConfig.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	z, err := zc.Build()
	if err != nil {
		return logr.Discard(), err
	}
	return zapr.NewLogger(z), nil
}

// ParseLogLevel reads --log-level: a level name (debug, info, error) or
// a verbosity number, the verbosity NewLogger takes.
func ParseLogLevel(s string) (int, error) {
	switch s {
	case "debug":
		return 1, nil
	case "info":
		return 0, nil
	case "error":
		return -2, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not debug, info, error or a verbosity number >= 0", s)
	}
	return n, nil
}
