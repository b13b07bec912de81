# Steward's build, test and sandbox entry points. `make sandbox` runs Steward
# against a local real API server; `make test` runs every test.

GO ?= go
KUBE_VERSION := v1.37.1
ETCD_VERSION := v3.7.3
# The API server and etcd are built from their Go modules, once per version,
# into a cache outside the repository that envtest reads (KUBEBUILDER_ASSETS).
CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/steward
ASSETS := $(CACHE_DIR)/kube-$(KUBE_VERSION)-etcd-$(ETCD_VERSION)
export KUBEBUILDER_ASSETS := $(ASSETS)

KUBE_LDFLAGS := -s -w \
	-X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=37

.PHONY: all build test unit e2e lint generate verify sandbox bench tools clean

all: build

build:
	$(GO) build -o bin/steward ./cmd/steward

tools: $(ASSETS)/kube-apiserver $(ASSETS)/etcd

$(ASSETS)/kube-apiserver:
	@mkdir -p $(ASSETS)
	@echo "building kube-apiserver $(KUBE_VERSION) into $(ASSETS) (first time only, a few minutes)"
	cd e2e/tools/kube-apiserver && $(GO) build -trimpath -ldflags "$(KUBE_LDFLAGS)" -o $@.tmp . && mv $@.tmp $@

$(ASSETS)/etcd:
	@mkdir -p $(ASSETS)
	@echo "building etcd $(ETCD_VERSION) into $(ASSETS) (first time only)"
	cd e2e/tools/etcd && $(GO) build -trimpath -ldflags "-s -w" -o $@.tmp . && mv $@.tmp $@

test: tools
	$(GO) test ./...

unit:
	$(GO) test $$($(GO) list ./... | grep -v /e2e)

e2e: tools
	$(GO) test ./e2e/... -count=1 -v

clean:
	rm -rf bin
