package e2e

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
)

// fluxSAHook is the denial of fluxguard's entry for service accounts.
const fluxSAHook = `admission webhook "fluxguard-serviceaccounts.steward.dev" denied the request: `

// fluxguardMachinery holds fluxguard to the decision table through the real
// API server, whose managedFields decide what is Git's: kustomize-controller
// applied TestFluxguard's objects server-side, so its entry owns exactly
// what Git declares. The cluster's machinery changes the rest freely; a
// person's change of the rest is refused saying it is not in Git; Git's
// fields are refused to everyone but Flux.
func fluxguardMachinery(ctx context.Context, t *testing.T) {
	in := func(args ...string) []string { return append([]string{"-n", fluxAppsNS}, args...) }
	as := func(user string, args ...string) []string {
		return append([]string{"--as", user, "--as-group", "system:serviceaccounts"}, args...)
	}
	refused := func(t *testing.T, hook, want string, never string, args ...string) {
		t.Helper()
		_, stderr, err := env.Kubectl(ctx, "", args...)
		if err == nil || !strings.Contains(stderr, hook) || !strings.Contains(stderr, want) {
			t.Fatalf("kubectl %s: want %q from %q, got %v:\n%s", strings.Join(args, " "), want, hook, err, stderr)
		}
		if never != "" && strings.Contains(stderr, never) {
			t.Errorf("the denial says %q, which is not true of a field Git does not declare:\n%s", never, stderr)
		}
	}
	const reloader = "system:serviceaccount:ops:reloader"

	t.Run("AnOperatorsAnnotationUnderItsOwnManager", func(t *testing.T) {
		kubectlOK(t, ctx, "", as(reloader, in("patch", "deployment", "podinfo", "--field-manager=reloader", "--type=merge",
			"-p", `{"spec":{"template":{"metadata":{"annotations":{"reloader.example.com/last-reload":"1"}}}}}`)...)...)
	})
	t.Run("AnOperatorsChangeOfGitsField", func(t *testing.T) {
		refused(t, fluxSAHook, "it is reverted at the next reconcile (interval 10m). Changed: /spec/template/spec/containers/0/image.", "",
			as(reloader, in("set", "image", "deployment/podinfo", "podinfo=ghcr.io/stefanprodan/podinfo:6.7.2")...)...)
	})
	t.Run("CainjectorsCABundle", func(t *testing.T) {
		ca := newTestCA(t, "widget-webhook")
		patch := `{"spec":{"conversion":{"webhook":{"clientConfig":{"caBundle":"` + base64.StdEncoding.EncodeToString(ca.pem) + `"}}}}}`
		kubectlOK(t, ctx, "", as("system:serviceaccount:cert-manager:cert-manager-cainjector",
			"patch", "crd", "widgets.flux-e2e.example.com", "--field-manager=cert-manager-cainjector", "--type=merge", "-p", patch)...)
	})
	t.Run("APersonsAnnotationIsRefusedAsNotInGit", func(t *testing.T) {
		refused(t, fluxguardHook, "Changed: /metadata/annotations/team, which Git does not declare: kustomize-controller keeps fields others set, unless a kubectl or before-first-apply field manager wrote them", "reverted",
			"--as", "jane", "-n", fluxAppsNS, "annotate", "configmap", "settings", "team=a", "--field-manager=k9s")
	})
	t.Run("KubectlAnnotateIsStrippedByFlux", func(t *testing.T) {
		refused(t, fluxguardHook, "written by the field manager kubectl-annotate: kustomize-controller removes what that manager writes at its next reconcile", "reverted",
			"--as", "jane", "-n", fluxAppsNS, "annotate", "configmap", "settings", "team=a")
	})
	t.Run("APersonsScale", func(t *testing.T) {
		refused(t, fluxScaleHook, "Changed: /spec/replicas, which Git does not declare", "reverted",
			"--as", "jane", "-n", fluxAppsNS, "scale", "deployment", "autoscaled", "--replicas=5")
		refused(t, fluxScaleHook, "it is reverted at the next reconcile (interval 10m). Changed: /spec/replicas.", "",
			"--as", "jane", "-n", fluxAppsNS, "scale", "deployment", "podinfo", "--replicas=5")
	})
	t.Run("TheAutoscalerNeverReachesSteward", func(t *testing.T) {
		unchangedCalls(t, fluxguardPaths+"/scale", func() {
			kubectlOK(t, ctx, "", as("system:serviceaccount:kube-system:horizontal-pod-autoscaler", in("scale", "deployment", "autoscaled", "--replicas=3")...)...)
		})
	})
	t.Run("AnOperatorsScaleWhereGitDeclaresNoReplicas", func(t *testing.T) {
		kubectlOK(t, ctx, "", as(reloader, in("scale", "deployment", "autoscaled", "--replicas=4")...)...)
	})
	t.Run("ApplyingGitsValueUnderAnotherManagerTakesNothing", func(t *testing.T) {
		// A forced apply of Git's own value: the API server makes the
		// manager a co-owner (there is no conflict to force), so
		// kustomize-controller still owns the image and the taker's next
		// change of it is refused as Git's. Taking the field over takes
		// changing it, which is refused.
		apply := func(image string) (string, error) {
			obj := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"podinfo","namespace":"` + fluxAppsNS + `"},` +
				`"spec":{"template":{"spec":{"containers":[{"name":"podinfo","image":"` + image + `"}]}}}}`
			_, stderr, err := env.Kubectl(ctx, obj, as(reloader, "apply", "--server-side", "--force-conflicts", "--field-manager=taker", "-f", "-")...)
			return stderr, err
		}
		if stderr, err := apply("ghcr.io/stefanprodan/podinfo:6.7.0"); err != nil {
			t.Fatalf("applying Git's value changes nothing, and is allowed: %v\n%s", err, stderr)
		}
		stderr, err := apply("ghcr.io/stefanprodan/podinfo:6.7.3")
		if err == nil || !strings.Contains(stderr, fluxSAHook) || !strings.Contains(stderr, "it is reverted at the next reconcile (interval 10m). Changed: /spec/template/spec/containers/0/image.") {
			t.Fatalf("the co-owner's change of the image: want it refused as Git's, got %v:\n%s", err, stderr)
		}
	})
	t.Run("RewritingKustomizeControllersEntry", func(t *testing.T) {
		refused(t, fluxSAHook, "Changed: /metadata/managedFields (the kustomize-controller entry", "",
			as(reloader, in("patch", "configmap", "settings", "--type=json", "-p", `[{"op":"replace","path":"/metadata/managedFields","value":[{}]}]`)...)...)
	})
}
