package claimguard

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// named is "Kind namespace/name", or "Kind name" for cluster-scoped objects.
func named(kind, namespace, name string) string {
	if namespace == "" {
		return kind + " " + name
	}
	return kind + " " + namespace + "/" + name
}

// String is named(kind, namespace, name): "Kind namespace/name", or "Kind
// name" for cluster-scoped objects, which is the kind and the cache key.
func (f found) String() string { return f.gk.Kind + " " + f.key() }

// describe names one object with what keeps it alive.
func describe(f found, now time.Time) string {
	return describeDeleting(f, func(f found) string { return "deleting for " + f.deletingFor(now).String() })
}

// describeDeleting is describe with deleting saying how an object being
// deleted is; the audit's reports leave out the time, which changes every
// pass.
func describeDeleting(f found, deleting func(found) string) string {
	if f.unwatched {
		return f.String() + " (a kind Steward does not cache; it may already be gone)"
	}
	var parts []string
	if f.externalName() != "" {
		parts = append(parts, fmt.Sprintf("external name %q", f.externalName()))
	}
	if f.deleting() {
		parts = append(parts, deleting(f))
	}
	if f.finalizers.any() {
		parts = append(parts, "finalizers: "+f.finalizers.String())
	}
	if len(parts) == 0 {
		return f.String()
	}
	return f.String() + " (" + strings.Join(parts, "; ") + ")"
}

// listed names up to maxListed objects and counts the rest.
func listed(fs []found, now time.Time) string {
	return listedWith(fs, "; ", func(f found) string { return describe(f, now) })
}

// listedWith is listed describing each object with describe, separated
// by sep.
func listedWith(fs []found, sep string, describe func(found) string) string {
	var b strings.Builder
	for i, f := range fs {
		if i == maxListed {
			fmt.Fprintf(&b, "%sand %d more", sep, len(fs)-maxListed)
			break
		}
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(describe(f))
	}
	return b.String()
}

// heldBy says what keeps a deleting composite resource from going away.
func heldBy(xr found, holders []found, now time.Time) string {
	return heldByListed(xr, holders, func(fs []found) string { return listed(fs, now) })
}

// heldByListed is heldBy naming the holders with list.
func heldByListed(xr found, holders []found, list func([]found) string) string {
	if len(holders) == 0 {
		if !xr.finalizers.any() {
			return "has no composed resources left"
		}
		return "is held by its finalizers " + xr.finalizers.String()
	}
	return fmt.Sprintf("is still held by %s: %s", count(len(holders), "composed resource"), list(holders))
}

func count(n int, noun string) string {
	return fmt.Sprintf("%d %s", n, plural(n, noun))
}

func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// kubectlGet is the command that shows one object.
func kubectlGet(gr schema.GroupResource, namespace, name string) string {
	if namespace == "" {
		return fmt.Sprintf("kubectl get %s %s", gr, name)
	}
	return fmt.Sprintf("kubectl get %s -n %s %s", gr, namespace, name)
}

// uncheckedNote is the warning added when some kinds could not be searched.
func uncheckedNote(cov *coverage) string {
	return "claimguard could not search " + strings.Join(cov.unchecked, ", ") + " for resources still being deleted; this request was allowed without that part of the check"
}
