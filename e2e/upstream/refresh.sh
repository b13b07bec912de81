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
