#!/usr/bin/env bash
# scripts/pack-prometheus.sh: pack this machine's Prometheus and Alertmanager (Debian's prometheus and
# prometheus-alertmanager, which scripts/setup.sh installs) into .gpu-cache/prom/prom.tar.xz, for the
# autoscale_loop_torch check of tests/gpu/run.sh: the GPU machine has no network and nothing can be installed there,
# so the tarball travels with the tree (carry .gpu-cache/prom), and the check unpacks it. About 16 MB.
#
#   usage: scripts/pack-prometheus.sh [OUT]   (OUT default: .gpu-cache/prom/prom.tar.xz in this repository)
#
# What is packed: /usr/bin/prometheus and /usr/bin/prometheus-alertmanager (static Go binaries: they need only
# libc), and share/prometheus/alertmanager/*.tmpl, the templates Debian's Alertmanager reads from
# /usr/share/prometheus/alertmanager/ (the check binds them there in a mount namespace of its own where that is
# missing). Never committed: .gpu-cache/ is in .gitignore.
set -euo pipefail
out=${1:-$(cd "$(dirname "$0")/.." && pwd)/.gpu-cache/prom/prom.tar.xz}
for f in /usr/bin/prometheus /usr/bin/prometheus-alertmanager /usr/share/prometheus/alertmanager/default.tmpl; do
	[ -e "$f" ] || { echo "pack-prometheus: $f is missing: apt-get install prometheus prometheus-alertmanager" >&2; exit 1; }
done
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/share/prometheus/alertmanager" "$(dirname "$out")"
cp /usr/bin/prometheus /usr/bin/prometheus-alertmanager "$stage/"
cp /usr/share/prometheus/alertmanager/*.tmpl "$stage/share/prometheus/alertmanager/"
tar -C "$stage" -cJf "$out.tmp" prometheus prometheus-alertmanager share
mv "$out.tmp" "$out"
echo "pack-prometheus: $out ($(du -h "$out" | cut -f1)): $(prometheus --version 2>&1 | head -1); $(prometheus-alertmanager --version 2>&1 | head -1)"
