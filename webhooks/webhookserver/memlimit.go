package webhookserver

import (
	"fmt"
	"runtime/debug"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Steward's soft memory limit. Left to GOGC alone, Go's garbage collector
// lets the heap grow to twice what was live after the last collection, and
// Steward's live heap is mostly its informers' caches. A burst of watch
// events (a Composition creating MRs, a cleanup deleting them) can then
// carry the process past its container's limit while most of that memory is
// garbage, and the kernel kills it. A soft limit makes the collector work
// harder as the process nears it instead.

// memoryLimitShare is the part of the container's memory limit given to Go
// as its soft limit. The rest covers what the Go runtime does not count:
// the binary's mapped code and the kernel's own accounting.
const memoryLimitShare = 0.9

// minMemoryLimit is the smallest --memory-limit accepted: Steward's resident
// memory with empty caches is about 40 MiB, so a smaller container limit is
// a mistake that would only show as a crash loop.
var minMemoryLimit = resource.MustParse("64Mi")

// ParseMemoryLimit reads --memory-limit: a Kubernetes quantity ("256Mi") or
// a number of bytes, as the Downward API gives the container's limit. Empty
// or "0" means no limit. (For a container without a limit the Downward API
// gives the node's allocatable memory, which makes a harmless soft limit.)
func ParseMemoryLimit(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a quantity of bytes such as 256Mi", s)
	}
	switch {
	case q.Sign() == 0:
		return 0, nil
	case q.Sign() < 0:
		return 0, fmt.Errorf("%s is negative", s)
	case q.Cmp(minMemoryLimit) < 0:
		return 0, fmt.Errorf("%s is below the %s Steward needs", s, minMemoryLimit.String())
	}
	return q.Value(), nil
}

// softMemoryLimit is the soft limit for a container limit of limit bytes,
// or false when Steward should not set one: without a container limit, or
// when GOMEMLIMIT is set, because then the operator chose the soft limit
// (or "off") and the Go runtime has already applied it.
func softMemoryLimit(limit int64, gomemlimit string) (int64, bool) {
	if limit <= 0 || gomemlimit != "" {
		return 0, false
	}
	return int64(float64(limit) * memoryLimitShare), true
}

// ApplyMemoryLimit sets the soft limit derived from --memory-limit and logs
// the one in effect.
func ApplyMemoryLimit(limit int64, gomemlimit string, log logr.Logger) {
	soft, ok := softMemoryLimit(limit, gomemlimit)
	if !ok {
		if gomemlimit != "" {
			log.Info("soft memory limit from GOMEMLIMIT", "GOMEMLIMIT", gomemlimit)
		}
		return
	}
	debug.SetMemoryLimit(soft)
	log.Info("soft memory limit set", "memoryLimit", limit, "softLimit", soft)
}

// The memory request bodies in flight may hold (serving.InflightLimit). By
// default it is requestMemoryShare of the container's limit: with the
// shipped 256Mi, 96 MiB for bodies besides the caches and the runtime, so
// that a flood of maximum-size reviews is refused before it costs Steward
// its pod. Without a container limit it is defaultRequestMemory.
const requestMemoryShare = 0.375

var (
	defaultRequestMemory = resource.MustParse("96Mi")
	// minRequestMemory lets two thirds of the budget hold one maximum-size
	// review: less would refuse every large object's review.
	minRequestMemory = resource.MustParse("32Mi")
)

// ParseRequestMemory reads --request-memory; empty derives it from the
// container's memory limit (bytes, 0 when unknown).
func ParseRequestMemory(s string, memoryLimit int64) (int64, error) {
	if s == "" {
		if memoryLimit > 0 {
			return max(int64(float64(memoryLimit)*requestMemoryShare), minRequestMemory.Value()), nil
		}
		return defaultRequestMemory.Value(), nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a quantity of bytes such as 96Mi", s)
	}
	if q.Cmp(minRequestMemory) < 0 {
		return 0, fmt.Errorf("%s is below %s, the least that holds one maximum-size review", s, minRequestMemory.String())
	}
	return q.Value(), nil
}
