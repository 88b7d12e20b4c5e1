#!/usr/bin/env bash
# Section examples: the container, Kubernetes and Prometheus recipes under examples/, checked statically (yamllint,
# manifests, compose, Dockerfiles; promtool for the rules and their unit tests). Needs PyYAML; promtool if installed.
source tests/lib/section.sh

echo "== examples: container and Kubernetes recipes (static; no Docker engine or cluster here)"
# The checker needs PyYAML: the first python3 on PATH if it has it, else Debian's (python3-yaml).
PYY=python3
python3 -c 'import yaml' 2>/dev/null || PYY=/usr/bin/python3
prog "examples lint (yamllint, manifests, compose, Dockerfiles)" -- $PYY tests/lint/check_examples.py
prog "examples lint fails on broken fixtures (--self-test)" -- $PYY tests/lint/check_examples.py --self-test
# examples/prometheus: promtool (Debian's prometheus package) checks the config and rules and runs the rules' unit
# tests; without it, only the structural checks run.
PT=
if ! command -v promtool >/dev/null 2>&1; then
	PT=--no-promtool
	skip "prometheus: promtool check config / check rules / test rules" \
		"promtool missing: apt-get install prometheus (bash scripts/setup.sh)"
fi
prog "prometheus: scrape config, rules and their tests, Grafana dashboard" -- $PYY tests/lint/check_prometheus.py $PT
prog "prometheus: broken fixtures and mutated rules fail (--self-test)" -- \
	$PYY tests/lint/check_prometheus.py --self-test $PT

done_testing
