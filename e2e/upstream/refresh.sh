#!/usr/bin/env bash
# Copies the upstream CRDs listed in SOURCES.md again from their tags.
# Needs the internet; CI does not run it. Review the diff before committing.
set -euo pipefail
cd "$(dirname "$0")"
fetch() { # repository tag path destination
  curl -fsSL "https://raw.githubusercontent.com/$1/$2/$3" -o "$4"
}
op=prometheus-operator/prometheus-operator
for crd in servicemonitors prometheusrules; do
  fetch "$op" v0.93.0 "example/prometheus-operator-crd/monitoring.coreos.com_${crd}.yaml" "prometheus-operator/monitoring.coreos.com_${crd}.yaml"
done
# Flux: the CRDs of every kind apimigration guards, at the controller tags
# each Flux release names (see SOURCES.md). image-reflector-controller is
# v1.2.0 for 2.9: see SOURCES.md.
flux_release() { # release, then controller:tag pairs
  local r=$1
  shift
  mkdir -p "flux/$r"
  for ct in "$@"; do
    local c=${ct%%:*} t=${ct#*:}
    for crd in $(flux_crds "$c"); do
      fetch "fluxcd/$c-controller" "$t" "config/crd/bases/$crd.yaml" "flux/$r/$crd.yaml"
    done
  done
}
flux_crds() { # controller
  case $1 in
  kustomize) echo kustomize.toolkit.fluxcd.io_kustomizations ;;
  helm) echo helm.toolkit.fluxcd.io_helmreleases ;;
  source) echo source.toolkit.fluxcd.io_{gitrepositories,helmrepositories,helmcharts,buckets,ocirepositories} ;;
  notification) echo notification.toolkit.fluxcd.io_{receivers,alerts,providers} ;;
  image-reflector) echo image.toolkit.fluxcd.io_{imagerepositories,imagepolicies} ;;
  image-automation) echo image.toolkit.fluxcd.io_imageupdateautomations ;;
  esac
}
flux_release 2.6 kustomize:v1.6.0 source:v1.6.0 helm:v1.3.0 notification:v1.6.0 image-reflector:v0.35.0 image-automation:v0.41.0
flux_release 2.7 kustomize:v1.7.0 source:v1.7.0 helm:v1.4.0 notification:v1.7.1 image-reflector:v1.0.1 image-automation:v1.0.1
flux_release 2.8 kustomize:v1.8.0 source:v1.8.0 helm:v1.5.0 notification:v1.8.0 image-reflector:v1.1.0 image-automation:v1.1.0
# 2.10: helm, notification and image-* were generated from their api
# modules' markers (see SOURCES.md); copying the tags' files replaces them.
flux_release 2.10 kustomize:v1.10.0 source:v1.10.0 helm:v1.7.0 notification:v1.10.0 image-reflector:v1.3.0 image-automation:v1.3.0
flux_release 2.9 kustomize:v1.9.1 source:v1.9.1 helm:v1.6.1 notification:v1.9.1 image-reflector:v1.2.0 image-automation:v1.2.1
# source-watcher's ArtifactGenerator (generated from its api module, see
# SOURCES.md) and source-controller's ExternalArtifact.
mkdir -p source-watcher/2.3
fetch fluxcd/source-watcher v2.3.0 config/crd/bases/source.extensions.fluxcd.io_artifactgenerators.yaml source-watcher/2.3/source.extensions.fluxcd.io_artifactgenerators.yaml
fetch fluxcd/source-controller v1.10.0 config/crd/bases/source.toolkit.fluxcd.io_externalartifacts.yaml source-watcher/2.3/source.toolkit.fluxcd.io_externalartifacts.yaml
# OLM v0: the kinds installplanguard reads, and the CSVs InstallPlans name.
for crd in installplans subscriptions clusterserviceversions; do
  fetch operator-framework/api v0.45.0 "crds/operators.coreos.com_${crd}.yaml" "olm/operators.coreos.com_${crd}.yaml"
done
# OLM v0.33.0: every kind of the release whose catalog operator the e2e tests
# run (tools/olm).
mkdir -p olm-v0.33.0
for crd in catalogsources clusterserviceversions installplans olmconfigs operatorconditions operatorgroups operators subscriptions; do
  fetch operator-framework/operator-lifecycle-manager v0.33.0 "deploy/chart/crds/0000_50_olm_00-${crd}.crd.yaml" "olm-v0.33.0/0000_50_olm_00-${crd}.crd.yaml"
done
# Crossplane's own kinds, for a v1 and a v2 release.
crossplane_release() { # release tag, then CRD file names
  local r=$1 t=$2
  shift 2
  mkdir -p "crossplane/$r"
  for crd in "$@"; do
    fetch crossplane/crossplane "$t" "cluster/crds/$crd.yaml" "crossplane/$r/$crd.yaml"
  done
}
crossplane_release 1.20 v1.20.11 apiextensions.crossplane.io_{compositeresourcedefinitions,compositions,usages}
crossplane_release 2.3 v2.3.4 apiextensions.crossplane.io_{compositeresourcedefinitions,compositions,usages} protection.crossplane.io_{usages,clusterusages}
# A real provider's managed resources, legacy and namespaced (.m.) groups.
mkdir -p provider-sql
for g in postgresql.sql.crossplane.io postgresql.sql.m.crossplane.io; do
  for crd in roles databases; do
    fetch crossplane-contrib/provider-sql v0.16.0 "package/crds/${g}_${crd}.yaml" "provider-sql/${g}_${crd}.yaml"
  done
done
# More of its kinds, for the cache-at-scale benchmark only.
mkdir -p provider-sql-scale
for crd in grants schemas; do
  fetch crossplane-contrib/provider-sql v0.16.0 "package/crds/postgresql.sql.crossplane.io_${crd}.yaml" "provider-sql-scale/postgresql.sql.crossplane.io_${crd}.yaml"
done
# Argo CD's own Application and AppProject, of the release e2e runs
# (tools/argocd).
mkdir -p argocd/3.6
for crd in application appproject; do
  fetch argoproj/argo-cd v3.6.1 "manifests/crds/${crd}-crd.yaml" "argocd/3.6/${crd}-crd.yaml"
done
# Fleet's own CRDs, every kind in one file, of the release e2e runs
# (tools/fleet).
mkdir -p fleet/0.12
fetch rancher/fleet v0.12.0 charts/fleet-crd/templates/crds.yaml fleet/0.12/crds.yaml
# cert-manager's Issuer and Certificate, which the cert-manager install renders.
mkdir -p cert-manager/1.21
for crd in issuers certificates; do
  fetch cert-manager/cert-manager v1.21.1 "deploy/crds/cert-manager.io_${crd}.yaml" "cert-manager/1.21/cert-manager.io_${crd}.yaml"
done
# The OpenReports CRDs the audit also writes to.
mkdir -p openreports
for crd in reports clusterreports; do
  fetch openreports/reports-api v0.2.1 "config/crd/openreports.io_${crd}.yaml" "openreports/openreports.io_${crd}.yaml"
done
# The PolicyReport CRDs Steward ships and its audit writes to (no tags
# upstream: the commit that last changed them). Kept in manifests/upstream.
for crd in policyreports clusterpolicyreports; do
  fetch kubernetes-sigs/wg-policy-prototypes 7132d6fc8ba754cf0aa2888a64f9da18ab394e41 "policy-report/crd/v1alpha2/wgpolicyk8s.io_${crd}.yaml" "../../manifests/upstream/wgpolicyk8s.io_${crd}.yaml"
done
