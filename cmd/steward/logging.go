package main

import (
	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newLogger returns a JSON logger at the given verbosity. Sampling is off:
// every decision line is an audit record and must not be dropped.
func newLogger(verbosity int) (logr.Logger, error) {
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
