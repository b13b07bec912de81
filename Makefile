# Steward's build, test and sandbox entry points. `make sandbox` runs Steward
# against a local real API server; `make test` runs every test.

GO ?= go
# The two ends of the Kubernetes minors Steward supports (README.md; the
# chart's kubeVersion starts at the oldest), each tested: the whole e2e
# suite against the newest, its core set (E2E_CORE) against the oldest too.
# Each API server is built from the tool module that pins its
# k8s.io/kubernetes (kube_module): the newest from tools/kube-apiserver,
# the oldest from tools/kube-apiserver-<minor>. Both run with the one
# etcd. e2e/harness's TestKubeVersionsMatchTheirToolModules keeps these,
# the modules, the chart and README.md in step.
KUBE_VERSION := v1.37.1
KUBE_OLDEST_VERSION := v1.30.14
ETCD_VERSION := v3.7.3
# The API server and etcd are built from their Go modules, once per version,
# into a cache outside the repository that envtest reads (KUBEBUILDER_ASSETS).
CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/steward
kube_assets = $(CACHE_DIR)/kube-$(1)-etcd-$(ETCD_VERSION)
ASSETS := $(call kube_assets,$(KUBE_VERSION))
OLDEST_ASSETS := $(call kube_assets,$(KUBE_OLDEST_VERSION))
export KUBEBUILDER_ASSETS := $(ASSETS)

# A version's minor (37 for v1.37.1), the tool module its API server is
# built from, and the version stamps of its release build.
kube_minor = $(word 2,$(subst ., ,$(1)))
kube_module = tools/kube-apiserver$(if $(filter-out $(KUBE_VERSION),$(1)),-1.$(call kube_minor,$(1)))
kube_ldflags = -s -w \
	-X k8s.io/component-base/version.gitVersion=$(1) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=$(call kube_minor,$(1))

# How every other tool is built (the GitOps tools', OLM's and Crossplane's
# controllers, promtool, helm, goreleaser, syft, actionlint): trimmed, and
# compiled without optimisation or inlining: a test waits on what those
# programs do, not on their CPU. From an empty build cache promtool alone
# took 137 s, against 190 s optimised; in a fresh machine's CI run, where
# they no longer share the API servers' optimised packages, Flux's
# controllers, promtool, helm, goreleaser and actionlint took 868 s,
# against 950 s. The API servers, their controller managers and etcd,
# which every request of every test and the load benchmarks go through,
# are built optimised.
TOOL_BUILD = $(GO) build -trimpath -gcflags "all=-N -l"

STATICCHECK_VERSION := v0.8.2

# promtool checks and unit-tests the alerting rules (manifests/alerts_test.go).
# It is built from the Prometheus module tools/promtool pins, keyed by
# that version; the tests read its path from PROMTOOL. The build tag
# remove_all_sd (Prometheus's own, for slim builds) leaves out the service
# discovery plugins (the cloud providers' SDKs, half of the build), which
# only `promtool check config` of a scrape configuration would use.
PROMTOOL_VERSION := $(shell awk '/^require github.com\/prometheus\/prometheus / {print $$3}' tools/promtool/go.mod)
export PROMTOOL := $(CACHE_DIR)/promtool-$(PROMTOOL_VERSION)/promtool

# helm lints and renders the chart (charts/steward), and the chart tests
# compare what it renders with the kustomize overlays. It is built from the
# Helm module tools/helm pins, keyed by that version, with the version
# stamps Helm's own release build sets (its default Kubernetes version for
# `helm template` follows the client-go it is built with); the tests read
# its path from HELM.
HELM_VERSION := $(shell awk '/^require helm.sh\/helm\/v3 / {print $$3}' tools/helm/go.mod)
HELM_KUBE_MINOR := $(shell awk '$$1 == "k8s.io/client-go" {split($$2, v, "."); print v[2]}' tools/helm/go.mod)
HELM_LDFLAGS := -s -w -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
	-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$(HELM_KUBE_MINOR) \
	-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$(HELM_KUBE_MINOR)
export HELM := $(CACHE_DIR)/helm-$(HELM_VERSION)/helm

# GoReleaser builds releases from .goreleaser.yaml (make release-snapshot
# locally), and make verify checks that file with it. It is built from the
# GoReleaser module tools/goreleaser pins, keyed by that version, with
# the version stamp its own release build sets.
GORELEASER_VERSION := $(shell awk '/^require github.com\/goreleaser\/goreleaser\/v2 / {print $$3}' tools/goreleaser/go.mod)
export GORELEASER := $(CACHE_DIR)/goreleaser-$(GORELEASER_VERSION)/goreleaser

# syft writes the release's SBOMs (.goreleaser.yaml, sboms). make
# release-snapshot builds it from the module tools/syft pins, keyed by
# that version, and puts it first on GoReleaser's PATH, so a snapshot writes
# the SBOMs a release does; the release workflow installs the same version.
SYFT_VERSION := $(shell awk '/^require github.com\/anchore\/syft / {print $$3}' tools/syft/go.mod)
SYFT := $(CACHE_DIR)/syft-$(SYFT_VERSION)/syft

# actionlint checks the GitHub Actions workflows (.github/workflows) in make
# verify. It is built from the module tools/actionlint pins, keyed by
# that version. It also runs shellcheck on the workflows' run: scripts where
# shellcheck is on the PATH (GitHub's runners have it), and leaves that check
# out where it is not.
ACTIONLINT_VERSION := $(shell awk '/^require github.com\/rhysd\/actionlint / {print $$3}' tools/actionlint/go.mod)
ACTIONLINT := $(CACHE_DIR)/actionlint-$(ACTIONLINT_VERSION)/actionlint

# Flux's source-, kustomize- and helm-controller run as local processes in
# the e2e tests (e2e/harness StartFlux), so they observe what a real
# reconcile does to what Steward guards. All three are built from the one
# tool module tools/flux, which pins the controllers of one Flux release
# (so they share one build of the packages they have in common), each keyed
# by its own version (requiring the modules, rather than building their
# repositories, drops their replaces of their own ./api for the published
# api modules), static as Flux's images are; the tests read their paths
# from KUSTOMIZE_CONTROLLER, SOURCE_CONTROLLER and HELM_CONTROLLER.
flux_version = $(shell awk '/^require github.com\/fluxcd\/$(1) / {print $$3}' tools/$(if $(2),$(1)-$(2),flux)/go.mod)
KUSTOMIZE_CONTROLLER_VERSION := $(call flux_version,kustomize-controller)
SOURCE_CONTROLLER_VERSION := $(call flux_version,source-controller)
HELM_CONTROLLER_VERSION := $(call flux_version,helm-controller)
export KUSTOMIZE_CONTROLLER := $(CACHE_DIR)/kustomize-controller-$(KUSTOMIZE_CONTROLLER_VERSION)/kustomize-controller
export SOURCE_CONTROLLER := $(CACHE_DIR)/source-controller-$(SOURCE_CONTROLLER_VERSION)/source-controller
export HELM_CONTROLLER := $(CACHE_DIR)/helm-controller-$(HELM_CONTROLLER_VERSION)/helm-controller
FLUX_CONTROLLERS := $(KUSTOMIZE_CONTROLLER) $(SOURCE_CONTROLLER) $(HELM_CONTROLLER)
# Flux 2.7's helm-controller, the last whose HelmRelease CRD serves the
# deprecated helm.toolkit.fluxcd.io/v2beta2, runs in place of the one above
# in the test of a HelmRelease written through it (StartFlux's
# HelmControllerRelease; make e2e-extended): built the same way from the
# module tools/helm-controller-2.7 pins; the test reads its path from
# HELM_CONTROLLER_2_7. The sandbox does not need it.
HELM_CONTROLLER_2_7_VERSION := $(call flux_version,helm-controller,2.7)
export HELM_CONTROLLER_2_7 := $(CACHE_DIR)/helm-controller-$(HELM_CONTROLLER_2_7_VERSION)/helm-controller
FLUX_RELEASE_CONTROLLERS := $(HELM_CONTROLLER_2_7)
# The tool module a controller's binary is built from: tools/flux, or
# tools/<controller>-<release> for an older release's.
flux_module = tools/$(if $(filter $(1),$(HELM_CONTROLLER_2_7)),helm-controller-2.7,flux)

# Argo CD's application controller and repo server (one multi-call
# binary) run as local processes in the e2e tests (e2e/harness
# StartArgoCD), built from the module tools/argocd pins: its main calls
# Argo CD's own commands for the two and for the Git askpass helper, and
# leaves out the API server, the CLI, Dex, notifications and the
# ApplicationSet controller, a quarter of the packages. Argo CD 3.6
# needs Go 1.27: that build alone runs with GOTOOLCHAIN=go1.27.3, which the
# go command fetches from the module proxy; the tests read the path from
# ARGOCD, and need redis-server (.ci/run installs Debian's).
ARGOCD_VERSION := $(shell awk '{sub(/^require /, "")} $$1 == "github.com/argoproj/argo-cd/v3" {print $$2; exit}' tools/argocd/go.mod)
ARGOCD_GOTOOLCHAIN := go1.27.3
export ARGOCD := $(CACHE_DIR)/argocd-$(ARGOCD_VERSION)/argocd

# Fleet's controller and agent run as local processes in the extended e2e
# set (make e2e-extended; e2e/harness StartFleet), so they observe what a
# real Bundle, its BundleDeployment and the agent's Helm install, drift
# correction and removal do to what Steward guards. Both are built from the
# module tools/fleet pins, into one directory keyed by that version, static
# and with the version stamps Fleet's own release build sets (requiring the
# module, rather than building its repository, drops its replace of its own
# ./pkg/apis for the published module of the same version); the tests read
# their paths from FLEET_CONTROLLER and FLEET_AGENT.
FLEET_VERSION := $(shell awk '/^require github.com\/rancher\/fleet / {print $$3}' tools/fleet/go.mod)
export FLEET_CONTROLLER := $(CACHE_DIR)/fleet-$(FLEET_VERSION)/fleetcontroller
export FLEET_AGENT := $(CACHE_DIR)/fleet-$(FLEET_VERSION)/fleetagent
FLEET := $(FLEET_CONTROLLER) $(FLEET_AGENT)

# OLM's catalog operator, the controller that executes InstallPlans, runs as
# a local process in the extended e2e set (make e2e-extended; e2e/harness
# StartOLM), beside operator-registry's opm serving a file-based catalog on
# a loopback port, so they observe what a real approval and install does to
# what Steward guards. OLM's olm operator (which drives a CSV's phases) is
# not built: what installplanguard keys on, InstallPlans and Subscriptions,
# only the catalog operator writes, and the two hard-code the same metrics
# port (:8443). Both are built from the modules the one tool module
# tools/olm pins (OLM's release and the operator-registry it requires), each
# keyed by its version, static, with the build tags their own release builds
# use; the tests read their paths from OLM_CATALOG and OPM.
OLM_VERSION := $(shell awk '/^require github.com\/operator-framework\/operator-lifecycle-manager / {print $$3}' tools/olm/go.mod)
OPM_VERSION := $(shell awk '/^require github.com\/operator-framework\/operator-registry / {print $$3}' tools/olm/go.mod)
export OLM_CATALOG := $(CACHE_DIR)/olm-$(OLM_VERSION)/catalog
export OPM := $(CACHE_DIR)/opm-$(OPM_VERSION)/opm

# Crossplane's core, the patch-and-transform composition function and
# provider-nop run as local processes in the Crossplane e2e test
# (e2e/realcrossplane_test.go, e2e/harness StartCrossplane), so a real
# claim's and XR's Foreground deletion, with Kubernetes' garbage collector,
# meets claimguard. Each is built from the module its tool module
# (tools/crossplane, tools/function-patch-and-transform,
# tools/provider-nop: their crossplane-runtime majors differ) pins, keyed by
# that version, static and trimmed. Crossplane's cold build is long (about
# an hour on two shared cores), so neither make test nor make e2e builds or
# runs them: make crossplane builds them, make e2e-crossplane runs the test
# (build tag crossplane); the test reads their paths from CROSSPLANE,
# FUNCTION_PATCH_AND_TRANSFORM and PROVIDER_NOP.
CROSSPLANE_VERSION := $(shell awk '/^require github.com\/crossplane\/crossplane\/v2 / {print $$3}' tools/crossplane/go.mod)
FUNCTION_PAT_VERSION := $(shell awk '/^require github.com\/crossplane-contrib\/function-patch-and-transform / {print $$3}' tools/function-patch-and-transform/go.mod)
PROVIDER_NOP_VERSION := $(shell awk '/^require github.com\/crossplane-contrib\/provider-nop / {print $$3}' tools/provider-nop/go.mod)
export CROSSPLANE := $(CACHE_DIR)/crossplane-$(CROSSPLANE_VERSION)/crossplane
export FUNCTION_PATCH_AND_TRANSFORM := $(CACHE_DIR)/function-patch-and-transform-$(FUNCTION_PAT_VERSION)/function-patch-and-transform
export PROVIDER_NOP := $(CACHE_DIR)/provider-nop-$(PROVIDER_NOP_VERSION)/provider-nop
CROSSPLANE_TOOLS := $(CROSSPLANE) $(FUNCTION_PATCH_AND_TRANSFORM) $(PROVIDER_NOP)

.PHONY: all help build test unit e2e e2e-oldest fuzz fuzz-targets lint generate verify sandbox bench bench-hostile bench-scale bench-registrations bench-compare tools test-tools flux-controllers argocd fleet olm crossplane e2e-extended e2e-crossplane chart-package chart-push release release-snapshot clean

all: build ## build bin/steward (the default goal)

# Lists every target with the description after its "## ", so a new target
# without one shows up (docs/make_test.go fails on it).
help: ## list the targets, one line each
	@echo 'Usage: make [target] [VARIABLE=value]'
	@echo
	@echo 'Targets:'
	@awk 'BEGIN {FS = ":[^#]*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-17s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# The version and commit stamped into the binary (steward version,
# steward_build_info).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
STEWARD_LDFLAGS := -X main.version=$(VERSION) -X main.revision=$(REVISION)

build: ## bin/steward, stamped with git describe and the commit (steward version)
	$(GO) build -ldflags "$(STEWARD_LDFLAGS)" -o bin/steward ./cmd/steward

tools: $(ASSETS)/kube-apiserver $(ASSETS)/kube-controller-manager $(ASSETS)/etcd ## build kube-apiserver, kube-controller-manager and etcd from their Go modules into the cache (once per version)

# Every tool make test and make verify run, built before the first test:
# the newest and the oldest supported API server with their controller
# managers and etcd, Flux's and Argo CD's real controllers, promtool, helm,
# goreleaser and actionlint. .ci/run builds them first,
# one at a time (make test-tools, without -j): on a fresh machine the
# builds are most of the run, and one go build already keeps two cores
# busy; builds side by side only contend. Already built, a no-op.
test-tools: tools $(FLUX_CONTROLLERS) argocd $(PROMTOOL) $(HELM) $(GORELEASER) $(ACTIONLINT) $(OLDEST_ASSETS)/kube-apiserver $(OLDEST_ASSETS)/kube-controller-manager $(OLDEST_ASSETS)/etcd ## build every tool make test and make verify run (the oldest API server too), once per version

# Any version's API server, from its tool module (kube_module).
$(CACHE_DIR)/kube-%-etcd-$(ETCD_VERSION)/kube-apiserver:
	@mkdir -p $(@D)
	@echo "building kube-apiserver $* from $(call kube_module,$*) into $(@D) (first time only, a few minutes)"
	cd $(call kube_module,$*) && $(GO) build -trimpath -ldflags "$(call kube_ldflags,$*)" -o $@.tmp . && mv $@.tmp $@

# Any version's controller manager (the e2e environment runs Kubernetes'
# real garbage collector, namespace, deployment and replicaset controllers
# beside its API server), from the API server's own tool module: the one
# k8s.io/kubernetes, so the two share the module download and most of the
# build cache: it is built after the API server (order only), so that under
# make -j the two never compile the same packages side by side.
$(CACHE_DIR)/kube-%-etcd-$(ETCD_VERSION)/kube-controller-manager: | $(CACHE_DIR)/kube-%-etcd-$(ETCD_VERSION)/kube-apiserver
	@mkdir -p $(@D)
	@echo "building kube-controller-manager $* from $(call kube_module,$*) into $(@D) (first time only)"
	cd $(call kube_module,$*) && $(GO) build -trimpath -ldflags "$(call kube_ldflags,$*)" -o $@.tmp ./kube-controller-manager && mv $@.tmp $@

$(ASSETS)/etcd:
	@mkdir -p $(ASSETS)
	@echo "building etcd $(ETCD_VERSION) into $(ASSETS) (first time only)"
	cd tools/etcd && $(GO) build -trimpath -ldflags "-s -w" -o $@.tmp . && mv $@.tmp $@

# The other versions' directories get a copy of the same etcd.
$(CACHE_DIR)/kube-%-etcd-$(ETCD_VERSION)/etcd: $(ASSETS)/etcd
	@mkdir -p $(@D)
	cp $< $@.tmp && mv $@.tmp $@

$(PROMTOOL):
	@mkdir -p $(dir $@)
	@echo "building promtool $(PROMTOOL_VERSION) into $(dir $@) (first time only, a few minutes)"
	cd tools/promtool && $(TOOL_BUILD) -tags remove_all_sd -ldflags "-s -w" -o $@.tmp github.com/prometheus/prometheus/cmd/promtool && mv $@.tmp $@

$(HELM):
	@mkdir -p $(dir $@)
	@echo "building helm $(HELM_VERSION) into $(dir $@) (first time only, a few minutes)"
	cd tools/helm && $(TOOL_BUILD) -ldflags "$(HELM_LDFLAGS)" -o $@.tmp helm.sh/helm/v3/cmd/helm && mv $@.tmp $@

$(GORELEASER):
	@mkdir -p $(dir $@)
	@echo "building goreleaser $(GORELEASER_VERSION) into $(dir $@) (first time only, about five minutes)"
	cd tools/goreleaser && $(TOOL_BUILD) -ldflags "-s -w -X main.version=$(GORELEASER_VERSION)" -o $@.tmp github.com/goreleaser/goreleaser/v2 && mv $@.tmp $@

$(SYFT):
	@mkdir -p $(dir $@)
	@echo "building syft $(SYFT_VERSION) into $(dir $@) (first time only, several minutes)"
	cd tools/syft && CGO_ENABLED=0 $(TOOL_BUILD) -ldflags "-s -w -X main.version=$(SYFT_VERSION:v%=%)" -o $@.tmp github.com/anchore/syft/cmd/syft && mv $@.tmp $@

$(ACTIONLINT):
	@mkdir -p $(dir $@)
	@echo "building actionlint $(ACTIONLINT_VERSION) into $(dir $@) (first time only)"
	cd tools/actionlint && $(TOOL_BUILD) -ldflags "-s -w" -o $@.tmp github.com/rhysd/actionlint/cmd/actionlint && mv $@.tmp $@

flux-controllers: $(FLUX_CONTROLLERS) $(FLUX_RELEASE_CONTROLLERS) ## build Flux's kustomize-, source- and helm-controller, and Flux 2.7's helm-controller, from their Go modules into the cache (once per version)

# Any of the four: the controller's name is the file's, its version the
# rest of its directory's name, its module flux_module's. The three of
# tools/flux are built one after another (order only), so that under
# make -j two never compile the packages they share side by side.
$(SOURCE_CONTROLLER): | $(KUSTOMIZE_CONTROLLER)
$(HELM_CONTROLLER): | $(SOURCE_CONTROLLER)
$(FLUX_CONTROLLERS) $(FLUX_RELEASE_CONTROLLERS):
	@mkdir -p $(@D)
	@echo "building $(@F) $(patsubst $(@F)-%,%,$(notdir $(@D))) into $(@D) (first time only, several minutes)"
	cd $(call flux_module,$@) && CGO_ENABLED=0 $(TOOL_BUILD) -ldflags "-s -w" -o $@.tmp github.com/fluxcd/$(@F) && mv $@.tmp $@

argocd: $(ARGOCD) ## build Argo CD's application controller and repo server from its Go module into the cache (once per version)

$(ARGOCD):
	@mkdir -p $(@D)
	@echo "building Argo CD $(ARGOCD_VERSION) into $(@D) with $(ARGOCD_GOTOOLCHAIN) (first time only, about five minutes)"
	cd tools/argocd && GOTOOLCHAIN=$(ARGOCD_GOTOOLCHAIN) CGO_ENABLED=0 $(TOOL_BUILD) -ldflags "-s -w" -o $@.tmp .
	@# The repo server runs the script Argo CD's image installs beside it.
	cd tools/argocd && install -m 0755 "$$(GOTOOLCHAIN=$(ARGOCD_GOTOOLCHAIN) $(GO) list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3)/hack/git-verify-wrapper.sh" $(@D)/
	mv $@.tmp $@

fleet: $(FLEET) ## build Fleet's controller and agent from their Go module into the cache (once per version)

# Either of the two: the command's name is the file's. The agent is built
# after the controller (order only), so that under make -j the two never
# compile the packages they share side by side.
$(FLEET_AGENT): | $(FLEET_CONTROLLER)
$(FLEET):
	@mkdir -p $(@D)
	@echo "building $(@F) $(FLEET_VERSION) into $(@D) (first time only, several minutes)"
	cd tools/fleet && CGO_ENABLED=0 $(TOOL_BUILD) -ldflags "-s -w -X github.com/rancher/fleet/pkg/version.Version=$(FLEET_VERSION)" -o $@.tmp github.com/rancher/fleet/cmd/$(@F) && mv $@.tmp $@

olm: $(OLM_CATALOG) $(OPM) ## build OLM's catalog operator and operator-registry's opm from their Go modules (tools/olm) into the cache (once per version)

$(OLM_CATALOG):
	@mkdir -p $(@D)
	@echo "building OLM's catalog operator $(OLM_VERSION) into $(@D) (first time only, several minutes)"
	cd tools/olm && CGO_ENABLED=0 $(TOOL_BUILD) -tags json1 \
		-ldflags "-s -w -X github.com/operator-framework/operator-lifecycle-manager/pkg/version.OLMVersion=$(OLM_VERSION)" \
		-o $@.tmp github.com/operator-framework/operator-lifecycle-manager/cmd/catalog && mv $@.tmp $@

# opm is built after the catalog operator (order only), so that under make
# -j the two never compile the packages they share side by side.
$(OPM): | $(OLM_CATALOG)
$(OPM):
	@mkdir -p $(@D)
	@echo "building opm $(OPM_VERSION) into $(@D) (first time only, a few minutes)"
	cd tools/olm && CGO_ENABLED=0 $(TOOL_BUILD) -tags json1,containers_image_openpgp \
		-ldflags "-s -w -X github.com/operator-framework/operator-registry/cmd/opm/version.opmVersion=$(OPM_VERSION)" \
		-o $@.tmp github.com/operator-framework/operator-registry/cmd/opm && mv $@.tmp $@

crossplane: $(CROSSPLANE_TOOLS) ## build Crossplane's core, function-patch-and-transform and provider-nop from their Go modules into the cache (once per version; core's cold build takes about an hour)

# One after another (order only), so that under make -j the three never
# compile side by side on a small machine.
$(FUNCTION_PATCH_AND_TRANSFORM): | $(PROVIDER_NOP)
$(CROSSPLANE): | $(FUNCTION_PATCH_AND_TRANSFORM)
$(CROSSPLANE):
	@mkdir -p $(@D)
	@echo "building Crossplane $(CROSSPLANE_VERSION) into $(@D) (first time only, up to an hour)"
	cd tools/crossplane && CGO_ENABLED=0 $(TOOL_BUILD) \
		-ldflags "-s -w -X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=$(CROSSPLANE_VERSION)" \
		-o $@.tmp github.com/crossplane/crossplane/v2/cmd/crossplane && mv $@.tmp $@

$(FUNCTION_PATCH_AND_TRANSFORM):
	@mkdir -p $(@D)
	@echo "building function-patch-and-transform $(FUNCTION_PAT_VERSION) into $(@D) (first time only, several minutes)"
	cd tools/function-patch-and-transform && CGO_ENABLED=0 $(TOOL_BUILD) -ldflags "-s -w" \
		-o $@.tmp github.com/crossplane-contrib/function-patch-and-transform && mv $@.tmp $@

$(PROVIDER_NOP):
	@mkdir -p $(@D)
	@echo "building provider-nop $(PROVIDER_NOP_VERSION) into $(@D) (first time only, several minutes)"
	cd tools/provider-nop && CGO_ENABLED=0 $(TOOL_BUILD) -ldflags "-s -w" \
		-o $@.tmp github.com/crossplane-contrib/provider-nop/cmd/provider && mv $@.tmp $@

# The one command that runs every test: unit, golden, fuzz seed corpora,
# the e2e suite against a real kube-apiserver and etcd, and the replicas'
# scenarios (e2e/ha: three Stewards upgraded, drained, killed and
# reconfigured under load, about six minutes; e2e/staticadmission: an API
# server started with the rendered static admission configuration), then
# the e2e suite's core set against the oldest supported API server
# (e2e-oldest). The e2e
# packages run after the others and one at a time (-p 1) rather than
# beside them: their burst and load tests need the machine's cores for the
# API server and Steward, and sharing them with other tests makes the API
# server's webhook calls time out.
E2E_PACKAGES := ./e2e ./e2e/ha ./e2e/staticadmission
test: tools $(FLUX_CONTROLLERS) argocd unit ## every test: unit, golden, fuzz corpora, then e2e and the replicas' scenarios against a real API server, and the core set against the oldest (builds tools, Flux's and Argo CD's controllers, promtool and helm first)
	$(GO) test -p 1 -timeout 45m $(E2E_PACKAGES)
	@$(MAKE) --no-print-directory e2e-oldest

# The e2e suite's core set, the tests that also run against the oldest
# supported API server (KUBE_OLDEST_VERSION): one allowed and one refused
# write for every rule (the walkthroughs of docs/walkthroughs.md, and
# apimigration's refusal of a removed version), the registered webhook
# configurations as the server stores them, claimguard's rules following
# a new XRD, the background audit's PolicyReports, start-up with
# client-go's WatchList on and off, and the chart with every value set
# applied with a server-side dry run. A name that matches no test fails the
# run (and e2e/harness's TestE2ECoreNamesTestsOfTheSuite), so a renamed
# test cannot drop out of the set unnoticed.
E2E_CORE := \
	TestRegisteredWebhooksAreTheRenderedOnes \
	TestReadmeFleetWalkthrough \
	TestReadmeFluxguardWalkthrough \
	TestReadmeArgocdguardWalkthrough \
	TestReadmeCrossplaneWalkthrough \
	TestReadmeOLMWalkthrough \
	TestReadmeFluxWalkthroughs \
	TestAPIMigration \
	TestClaimguardNewXRDIsGuardedWithoutRestart \
	TestAuditPublishesPolicyReports \
	TestStartUpWithWatchListOnAndOff \
	TestChartWithEveryValueAppliesOnTheServer
empty :=
# run_names is go test's -run expression for exactly the tests named.
run_names = ^($(subst $(empty) $(empty),|,$(strip $(1))))$$
E2E_CORE_RUN := $(call run_names,$(E2E_CORE))
e2e-oldest: $(OLDEST_ASSETS)/kube-apiserver $(OLDEST_ASSETS)/kube-controller-manager $(OLDEST_ASSETS)/etcd ## the e2e suite's core set (E2E_CORE) against the oldest supported API server, KUBE_OLDEST_VERSION (builds it first, once)
	@echo "the e2e core set against kube-apiserver $(KUBE_OLDEST_VERSION)"
	@out=$$(mktemp); rc=$$(mktemp); trap 'rm -f "$$out" "$$rc"' EXIT; \
	{ KUBEBUILDER_ASSETS=$(OLDEST_ASSETS) $(GO) test -p 1 -timeout 20m -v -run '$(E2E_CORE_RUN)' ./e2e; echo $$? >"$$rc"; } 2>&1 | tee "$$out"; \
	for name in $(E2E_CORE); do \
		grep -Eq "^--- (PASS|SKIP|FAIL): $$name " "$$out" || { echo "e2e-oldest: $$name ran no test: E2E_CORE names a test the e2e package does not have"; echo 1 >"$$rc"; }; \
	done; \
	exit $$(cat "$$rc")

# The scenarios against Fleet's controller and agent, OLM's catalog
# operator with opm, and Flux 2.7's helm-controller (e2e/realfleet_test.go,
# realolm_test.go and realflux_apimigration_test.go, build tag extended),
# with the API server, its controller manager and Flux's controllers make
# test runs. make test and make e2e leave them out: on a fresh machine,
# after what make test builds, their builds took 692 s, and .ci/run's
# whole run must stay under 85 minutes cold (it took 84 without them).
# This target builds what they need first (once per version), then runs
# the three (about 70 s).
E2E_EXTENDED := TestRealFleet TestRealOLM TestRealFluxDeprecatedHelmRelease
e2e-extended: tools $(FLUX_CONTROLLERS) $(FLUX_RELEASE_CONTROLLERS) fleet olm ## the scenarios against Fleet's, OLM's and Flux 2.7's real controllers (build tag extended; builds them first, once: about twelve minutes cold)
	$(GO) test -p 1 -tags extended -count=1 -v -timeout 20m -run '$(call run_names,$(E2E_EXTENDED))' ./e2e

# The Crossplane scenario alone (e2e/realcrossplane_test.go, build tag
# crossplane): claimguard against Crossplane's real core,
# function-patch-and-transform and provider-nop, with Kubernetes' garbage
# collector. Neither make test nor make e2e runs it, since Crossplane's
# cold build takes about an hour here; this target builds what it needs
# first (once per version).
e2e-crossplane: $(ASSETS)/kube-apiserver $(ASSETS)/kube-controller-manager $(ASSETS)/etcd $(CROSSPLANE_TOOLS) ## the Crossplane scenario against Crossplane's real core, function and provider (build tag crossplane; builds them first, once: about an hour cold)
	$(GO) test -p 1 -tags crossplane -count=1 -v -timeout 20m -run '^TestRealCrossplane$$' ./e2e

# Every package but the e2e suites (bench/load, bench/scale, bench,
# e2e/harness and cmd/sandbox have no API server in their tests and run
# here).
unit: $(PROMTOOL) $(HELM) ## the quick tests: unit, golden and fuzz-corpus tests without the API server (builds promtool and helm first, once)
	$(GO) test $$($(GO) list ./... | grep -v -e '/e2e$$' -e '/e2e/ha$$' -e '/e2e/staticadmission$$')

e2e: tools $(FLUX_CONTROLLERS) argocd $(HELM) ## the e2e suites only, verbose (builds the API server, etcd, Flux's and Argo CD's controllers and helm first)
	$(GO) test -p 1 ./e2e/... -count=1 -v

# Renders manifests/ and the Helm chart from the typed objects and the
# rule list, after collecting the configuration's doc comments for its
# JSON schema (webhooks/config/schemadocs.go).
generate: ## re-render manifests/ and the Helm chart charts/steward
	$(GO) test ./webhooks/config -run '^TestSchemaDocsMatchTheSource$$' -update >/dev/null
	$(GO) run ./cmd/steward manifests --chart-dir charts/steward

# Fails when generated files are stale, the chart does not lint or render,
# code is unformatted or suspicious, or the release configuration or a
# workflow is invalid.
verify: generate lint $(HELM) $(GORELEASER) $(ACTIONLINT) ## generate and fail on stale manifests/ or charts/; lint; helm lint and template; goreleaser check; actionlint
	@git diff --exit-code -- manifests charts || (echo "manifests/ or charts/ is stale: run make generate and commit" && exit 1)
	@test -z "$$(git status --porcelain --untracked-files=all -- manifests charts)" || (git status --short -- manifests charts; echo "manifests/ or charts/ has uncommitted files: run make generate and commit" && exit 1)
	$(HELM) lint --strict charts/steward
	$(HELM) lint --strict charts/steward --set certificates.mode=self-managed
	$(HELM) template steward charts/steward --namespace steward-system >/dev/null
	$(HELM) template steward charts/steward --namespace steward-system --set certificates.mode=self-managed \
		--set monitoring.serviceMonitor.enabled=true,monitoring.prometheusRule.enabled=true,monitoring.dashboard.enabled=true >/dev/null
	$(GORELEASER) check
	$(ACTIONLINT) -no-color

# Packages the Helm chart into bin/chart/steward-<CHART_VERSION>.tgz, with
# APP_VERSION as its appVersion (the image tag it runs). GoReleaser's
# before hook runs it with the release's version; by default it packages
# the chart as generated.
CHART_VERSION ?=
APP_VERSION ?=
chart-package: $(HELM) ## package the Helm chart into bin/chart/ (CHART_VERSION, APP_VERSION)
	@rm -rf bin/chart && mkdir -p bin/chart
	$(HELM) package charts/steward --destination bin/chart \
		$(if $(CHART_VERSION),--version $(CHART_VERSION)) $(if $(APP_VERSION),--app-version $(APP_VERSION))

# Pushes the chart packaged in bin/chart (the release's before hook runs
# make chart-package) to CHART_REPO as an OCI artefact, then signs it with
# cosign by the digest helm reports, keyless as the release's checksums and
# images are (.goreleaser.yaml). GoReleaser cannot push a chart itself: the
# release workflow runs this after make release. helm and cosign both read
# the registry login from docker login.
CHART_REPO ?= oci://ghcr.io/stewardhq/charts
COSIGN ?= cosign
chart-push: $(HELM) ## push bin/chart/steward-*.tgz to CHART_REPO (oci://ghcr.io/stewardhq/charts) and sign it with cosign (the release workflow runs it)
	@set -e; charts=$$(ls bin/chart/steward-*.tgz 2>/dev/null) || { echo "no chart in bin/chart: run make chart-package first"; exit 1; }; \
	for chart in $$charts; do \
		$(HELM) push "$$chart" $(CHART_REPO) >bin/chart/push.txt 2>&1 || { cat bin/chart/push.txt; exit 1; }; \
		cat bin/chart/push.txt; \
		ref=$$(awk '$$1 == "Pushed:" {print $$2}' bin/chart/push.txt); \
		digest=$$(awk '$$1 == "Digest:" {print $$2}' bin/chart/push.txt); \
		test -n "$$ref" && test -n "$$digest" || { echo "helm push reported no reference or digest"; exit 1; }; \
		echo "$(COSIGN) sign $${ref%:*}@$$digest"; \
		COSIGN_YES=true $(COSIGN) sign "$${ref%:*}@$$digest"; \
	done

# Publishes the release of the tag checked out, as .goreleaser.yaml says:
# the release workflow (.github/workflows/release.yml) runs it on a tag
# v<semver>, with GITHUB_TOKEN, cosign and syft installed, Docker buildx and
# a login to ghcr.io. It is not meant to be run by hand.
release: $(GORELEASER) $(HELM) ## publish the release of the tag checked out (the release workflow runs it: GITHUB_TOKEN, cosign, syft, buildx, ghcr.io login)
	$(GORELEASER) release --clean

# A release built locally into dist/ and published nowhere: the archives,
# their SBOMs (with syft built from tools/syft), checksums, the packaged
# chart and, with a Docker daemon and buildx, the images (loaded into the
# daemon). Signing is left out (--skip=sign): keyless signing needs the
# release workflow's OIDC token. Without a Docker daemon the images are left
# out too (--skip=docker); GORELEASER_FLAGS adds flags, e.g.
# GORELEASER_FLAGS=--skip=sbom.
GORELEASER_FLAGS ?=
release-snapshot: $(GORELEASER) $(HELM) $(SYFT) ## build a release into dist/ with its SBOMs, unsigned, and publish nothing (no images without a Docker daemon)
	@skip=sign; \
	if ! docker info >/dev/null 2>&1 || ! docker buildx version >/dev/null 2>&1; then \
		echo "no Docker daemon with buildx: the images are left out (--skip=docker)"; skip=sign,docker; \
	fi; \
	echo "$(GORELEASER) release --snapshot --clean --skip=$$skip $(GORELEASER_FLAGS)"; \
	PATH="$(dir $(SYFT)):$$PATH" $(GORELEASER) release --snapshot --clean --skip=$$skip $(GORELEASER_FLAGS)

lint: ## gofmt, go vet and staticcheck (with the build tags crossplane and extended too, so the scenarios make test leaves out are checked)
	@test -z "$$(gofmt -l cmd check webhooks certs manifests e2e buildinfo completion)" || (gofmt -l cmd check webhooks certs manifests e2e buildinfo completion; echo "gofmt needed" && exit 1)
	$(GO) vet ./...
	$(GO) vet -tags crossplane,extended ./e2e/...
	@if $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) -version >/dev/null 2>&1; then \
		$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) -tags crossplane,extended ./...; \
	else echo "staticcheck $(STATICCHECK_VERSION) could not be installed from the module proxy; skipped"; fi

# Runs every fuzz target for a bounded time (FUZZTIME each, default 30s).
# Minimising a new input is capped at 2s: with objects of realistic size as
# seeds, the default minute would take a short run's whole time. Each run
# starts from the committed corpora (f.Add and testdata/fuzz), with its
# generated inputs in a directory of its own: the ones `go test -fuzz`
# keeps under GOCACHE grow with every run, and a target that is still
# replaying them when FUZZTIME ends fails ("context deadline exceeded")
# without having fuzzed at all. Each package's instrumented test binary is
# built once and runs each of its targets: `go test -fuzz` would link it
# again for every target.
#
# Go 1.26's fuzzing coordinator can also fail a target with a bare "context
# deadline exceeded" at the FUZZTIME boundary, having found nothing
# (go.dev/issue/75804, fixed in Go 1.27). A real failure always writes its
# input under testdata/fuzz/<target>, so a run that fails with that message
# and writes no input is reported and passed over; any other failure stops.
FUZZTIME ?= 30s
fuzz: ## run every fuzz target for FUZZTIME (default 30s) each
	@work=$$(mktemp -d); trap 'rm -rf "$$work"' EXIT; \
	$(MAKE) -s fuzz-targets | while read -r dir target; do \
		bin="$$work/$$(echo "$$dir" | tr / _).test"; \
		if [ ! -x "$$bin" ]; then $(GO) test -c -fuzz . -o "$$bin" "./$$dir" || exit 1; fi; \
		echo "fuzzing ./$$dir $$target for $(FUZZTIME)"; \
		inputs="$$dir/testdata/fuzz/$$target"; \
		before=$$(ls "$$inputs" 2>/dev/null | wc -l); \
		if (cd "$$dir" && "$$bin" -test.run '^$$' -test.fuzz "^$$target$$" -test.fuzztime $(FUZZTIME) -test.fuzzminimizetime 2s \
			-test.fuzzcachedir "$$work/cache/$$dir") >"$$work/out" 2>&1; then \
			cat "$$work/out"; continue; \
		fi; \
		cat "$$work/out"; \
		if grep -q '^    context deadline exceeded$$' "$$work/out" && [ "$$(ls "$$inputs" 2>/dev/null | wc -l)" -eq "$$before" ]; then \
			echo "$$target: stopped by the fuzzing coordinator's deadline race (go.dev/issue/75804), no failing input written; not a failure"; \
		else \
			exit 1; \
		fi; \
	done

# Every fuzz target, one "directory target" line each, read from the
# source: listing them with `go test -list` would link a test binary for
# every package, a few seconds each, to find targets a grep finds at once.
fuzz-targets: ## list every fuzz target, "directory target" a line, from the source
	@grep -roE '^func Fuzz[A-Za-z0-9_]*\(' --include='*_test.go' webhooks cmd check | sort -s -t: -k1,1 | \
		sed -E 's|^(.*)/[^/]*:func (Fuzz[A-Za-z0-9_]*)\($$|\1 \2|'

# Handler benchmarks for every rule, with an allow-all baseline, then the
# load generator (bench/load) against the real API server: four admission
# configurations, every workload, about an hour with its defaults on two
# cores. It writes its section of docs/benchmarks.md and
# docs/benchmark-latency.svg; pass
# flags with BENCH_FLAGS, e.g. a ten-minute check at reduced scale:
# make bench BENCH_FLAGS="-rounds 2 -concurrency 1,16 -objects 1300 -burst-writers 100".
BENCH_FLAGS ?=
bench: tools ## handler benchmarks, then the load generator against a real API server (about an hour; BENCH_FLAGS)
	@mkdir -p bin
	$(GO) test -run '^$$' -bench . -benchmem ./webhooks/... > bin/handler-bench.txt || (cat bin/handler-bench.txt; exit 1)
	@cat bin/handler-bench.txt
	$(GO) run ./bench/load -handler-bench bin/handler-bench.txt $(BENCH_FLAGS)

# The hostile-load scenario alone: floods of unauthenticated 7 MiB reviews
# against the webhook port at 20, 50 and 100 clients, Steward with its
# shipped bound on request memory and without it, in paired rounds (about
# three minutes). It prints a Markdown table and writes bin/hostile-load.md.
bench-hostile: tools ## floods of unauthenticated 7 MiB reviews, Steward bounded and unbounded (about three minutes)
	$(GO) run ./bench/load -hostile -rounds 3 $(BENCH_FLAGS)

# The cache-at-scale scenarios (bench/scale), separate from the load run, which
# seeds the same mix through bench: Steward's
# synced and peak resident memory, live heap, start-up time and watches with
# 65k, 250k and 500k objects cached (XRs, MRs of real provider-sql kinds,
# Flux objects), client-go's WatchList on and off, and with 2,000
# Fleet-managed Deployments and 500 MR kinds. It writes its section of
# docs/benchmarks.md and docs/benchmark-memory.svg. A check of the tool in
# about ten minutes, labelled as reduced scale:
# make bench-scale BENCH_FLAGS="-scale-objects 6000,12000 -mr-kinds 50 -fleet-workloads 200".
bench-scale: tools ## memory and start-up with 65k to 500k objects cached (BENCH_FLAGS)
	$(GO) run ./bench/scale $(BENCH_FLAGS)

# What Steward's registrations cost the API server on the writes they let
# by: the CPU time per write that kube-apiserver's own admission code
# (k8s.io/apiserver at the e2e API server's version) spends deciding, entry
# by entry, whether to call Steward, with no registrations, Steward's,
# Steward's without argocdguard's two entries, and the chart's with
# docs/examples/argocd-annotation-label-values.yaml (argocdguard's entries
# narrowed to labelled objects), in paired rounds (about three minutes).
# bench/registrations is a module of its own, so Steward's build and tests
# never compile the API server's admission packages. Flags:
# make bench-registrations BENCH_FLAGS="-rounds 30 -writes 50000".
bench-registrations: $(HELM) ## the API server's CPU per write deciding whether to call Steward, with its own admission code (about three minutes; BENCH_FLAGS)
	@mkdir -p bin
	$(HELM) template steward charts/steward --namespace steward-system --values docs/examples/argocd-annotation-label-values.yaml >bin/argocd-annotation-label.yaml
	cd bench/registrations && $(GO) test -count=1 . && $(GO) run . -also ../../bin/argocd-annotation-label.yaml $(BENCH_FLAGS)

# A package's handler benchmarks (time and CPU per webhook call; claimguard's
# with its caches at the benchmark scale) of BASE, a commit, against the work
# tree, in alternating rounds on one machine, compared by benchstat and by
# each round's head/base ratio of CPU time per call, wall time where a side
# does not report it (median and spread, bench/pairedratio.awk), which
# a shared machine's drift from round to round hardly moves:
# make bench-compare BASE=v0.4.0 [BENCH_PKG=./webhooks/fleetguard BENCH_RUN=.].
# Results in bin/bench-compare/.
BASE ?=
BENCH_ROUNDS ?= 10
BENCH_PKG ?= ./webhooks/claimguard
BENCH_RUN ?= ^BenchmarkClaimguard$$
BENCH_TIME ?= 20000x
bench-compare: ## a package's handler benchmarks at BASE=<commit> against the work tree, by benchstat
	@test -n "$(BASE)" || { echo "usage: make bench-compare BASE=<commit>"; exit 2; }
	@rm -rf bin/bench-compare && mkdir -p bin/bench-compare
	@git worktree prune # a run interrupted before its worktree was removed
	git worktree add --detach bin/bench-compare/base $(BASE)
	cd bin/bench-compare/base && $(GO) test -c -o ../base.test $(BENCH_PKG)
	$(GO) test -c -o bin/bench-compare/head.test $(BENCH_PKG)
	git worktree remove --force bin/bench-compare/base
	@for i in $$(seq $(BENCH_ROUNDS)); do for side in base head; do \
		(cd $(BENCH_PKG) && $(CURDIR)/bin/bench-compare/$$side.test -test.run '^$$' -test.bench '$(BENCH_RUN)' -test.benchtime $(BENCH_TIME)) \
			| grep '^Benchmark' >> bin/bench-compare/$$side.txt || exit 1; done; done
	$(GO) run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da bin/bench-compare/base.txt bin/bench-compare/head.txt | tee bin/bench-compare/benchstat.txt
	@awk -f bench/pairedratio.awk bin/bench-compare/base.txt bin/bench-compare/head.txt | tee bin/bench-compare/ratios.txt

# Runs Steward against a local real API server until interrupted;
# SANDBOX_CONFIG=<file> runs it with that configuration file;
# SANDBOX_REPLICAS=3 runs three replicas behind a connection spreader that
# plays their Service, as e2e/ha does.
sandbox: tools $(if $(SANDBOX_FLUX),$(FLUX_CONTROLLERS)) ## run Steward against a local real API server until interrupted (SANDBOX_CONFIG=<file>, SANDBOX_REPLICAS=3, SANDBOX_FLUX=1: with Flux's real controllers and a Git repository)
	$(GO) run ./cmd/sandbox $(if $(SANDBOX_CONFIG),--config $(SANDBOX_CONFIG)) $(if $(SANDBOX_REPLICAS),--replicas $(SANDBOX_REPLICAS)) $(if $(SANDBOX_FLUX),--flux)

clean: ## remove bin/
	rm -rf bin
