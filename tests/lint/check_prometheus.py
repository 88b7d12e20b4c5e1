#!/usr/bin/env python3
"""Checks of examples/prometheus/ (run by `make test`): the scrape config, the rules and their unit tests through
promtool, and the Grafana dashboard structurally. One line per check, "ok - ..." or "not ok - ...", and exit
status 1 if any check failed.

  promtool    `promtool check config prometheus.yml` (a promtool built without Kubernetes service discovery, as
              Debian's is, checks the file without the kubernetes_sd_configs jobs and says so), `check rules
              rules.yml`, `test rules rules_test.yml`
  relabel     the static job's relabelling gives each of INSTANCES' addresses its instance (a host name without port
              and domain, an IPv4 or [IPv6] address whole); tests/sections/exporter.sh has Prometheus apply it
  rules       every expression names only the exporter's metrics (CONTRACT below), Prometheus's `up` or a
              recording rule of the file, with label matchers that metric has; every alert has a severity
              (critical, warning, info), summary and description that use label values, and a runbook naming
              `vramguard top` or `vramguard dump`; alerts on `up` match every scrape job of prometheus.yml; every
              alert has a unit test where it fires and one where it does not
  alertmanager `amtool check-config alertmanager.yml` (skipped, with a line, when amtool is missing); its webhook
              receivers for vramguard autoscale send resolved alerts and read the bearer token from a file
              (http_config.authorization.credentials_file), never inline; their routes' repeat_interval (the
              pace of raises while an alert fires) is docs/autoscale.md's, and the examples' --cooldown lies between
              group_interval and repeat_interval
  dashboard   grafana-dashboard.json is JSON with a datasource variable and instance, region and pid variables;
              every panel and query uses the templated datasource; every query names only CONTRACT metrics, with
              label matchers that metric has; panel ids unique; grid positions within 24 columns, not overlapping

  --self-test    broken fixtures must fail the structural checks, and mutated rules (a threshold, a `for`, a
                 window changed) must fail `promtool test rules`
  --no-promtool  skip what needs promtool (tests/run.sh passes it when promtool is missing)
  --root DIR     check DIR/examples/prometheus instead of the repository's

The CONTRACT is the exporter's list of metrics and their labels, docs/metrics.json, generated from its metrics table
(cli/metrics_table.h) as docs/metrics.md's tables are.
"""
import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    print("not ok - python3-yaml is missing (apt-get install python3-yaml, or bash scripts/setup.sh)")
    sys.exit(1)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

from check_examples import Results  # noqa: E402  (the one collector of check lines, beside this file)

# ---- the exporter's metrics: name -> labels (Prometheus adds instance and job to each) ----
# The contract docs/metrics.json is generated from the exporter's own table, cli/metrics_table.h (`make
# metrics-doc`; `make test` checks it is current): a metric renamed there is renamed here.
CONTRACT_FILE = os.path.join(REPO, "docs", "metrics.json")


def load_contract(path=CONTRACT_FILE):
    with open(path, encoding="utf-8") as f:
        return {m["name"]: tuple(m["labels"]) for m in json.load(f)["metrics"]}


CONTRACT = load_contract()
TARGET_LABELS = ("instance", "job")
KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right",
            "inf", "nan", "atan2"}
SEVERITIES = ("critical", "warning", "info")


# ---- PromQL: the metrics an expression selects and the labels it matches on ----

STRING = re.compile(r'"(?:[^"\\]|\\.)*"' + r"|'(?:[^'\\]|\\.)*'")
TOKEN = re.compile(r'(?P<num>\d[\w.]*)|(?P<ident>[A-Za-z_:][\w:]*)|(?P<brace>\{[^}]*\})|(?P<other>\S)')


def selectors(expr):
    """[(metric or None, [label names matched])] for each vector selector in a PromQL expression (Grafana's
    $variables allowed). A function, an aggregation, a keyword or a label in by (...) is not a selector."""
    s = re.sub(STRING, '""', expr)    # strings, with any $variable in them
    s = re.sub(r'\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)', ' ', s)
    s = re.sub(r'\[[^\]]*\]|\$\{[^}]*\}|\$\w+', ' ', s)                        # ranges, $__rate_interval
    toks = [(m.lastgroup, m.group()) for m in TOKEN.finditer(s)]
    out = []
    for i, (kind, text) in enumerate(toks):
        prev = toks[i - 1] if i > 0 else ("", "")
        nxt = toks[i + 1] if i + 1 < len(toks) else ("", "")
        matched = re.findall(r'(\w+)\s*(?:=~|!~|!=|=)', nxt[1]) if nxt[0] == "brace" else []
        if kind == "ident" and text not in KEYWORDS and nxt != ("other", "("):
            out.append((text, matched))
        elif kind == "brace" and (prev[0] != "ident" or prev[1] in KEYWORDS):
            out.append((None, re.findall(r'(\w+)\s*(?:=~|!~|!=|=)', text)))
    return out


def check_expr(r, where, expr, known):
    """Every selector names a metric of `known` (name -> labels) and matches only labels it has."""
    sels = selectors(expr)
    r.check(len(sels) > 0, f"{where}: selects at least one metric", f"no metric in '{expr}'")
    for metric, labels in sels:
        if not r.check(metric is not None and metric in known, f"{where}: metric {metric} is the exporter's",
                       f"not in the exporter's contract (docs/metrics.md): '{expr.strip()[:80]}'"):
            continue
        have = set(known[metric]) | set(TARGET_LABELS)
        extra = [lb for lb in labels if lb not in have and lb != "__name__"]
        r.check(not extra, f"{where}: {metric} is matched on labels it has",
                f"{metric} has no label {extra} (it has {sorted(have)})")


# ---- promtool ----

def promtool(args, cwd):
    p = subprocess.run(["promtool"] + args, cwd=cwd, capture_output=True, text=True, timeout=120)
    return p.returncode, (p.stdout + p.stderr).strip()


def check_promtool(r, d):
    rel = "examples/prometheus"
    rc, out = promtool(["check", "config", "prometheus.yml"], d)
    if rc != 0 and "kubernetes_sd_configs not found" in out:
        # Debian builds Prometheus without Kubernetes service discovery: check the rest, say what was left out.
        with open(os.path.join(d, "prometheus.yml")) as f:
            cfg = yaml.safe_load(f)
        k8s = [j["job_name"] for j in cfg.get("scrape_configs") or [] if "kubernetes_sd_configs" in j]
        cfg["scrape_configs"] = [j for j in cfg.get("scrape_configs") or [] if "kubernetes_sd_configs" not in j]
        tmp = tempfile.mkdtemp(prefix="vg-prom-")
        try:
            for f in os.listdir(d):
                if f.endswith((".yml", ".yaml")):
                    shutil.copy(os.path.join(d, f), tmp)
            with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
                yaml.safe_dump(cfg, f)
            rc, out = promtool(["check", "config", "prometheus.yml"], tmp)
        finally:
            shutil.rmtree(tmp)
        r.skip(f"promtool check config {rel}/prometheus.yml: jobs {k8s}",
               "this promtool has no Kubernetes service discovery (Debian's build); checked structurally below")
        r.check(rc == 0, f"promtool check config {rel}/prometheus.yml (without {k8s})", out[-300:])
    else:
        r.check(rc == 0, f"promtool check config {rel}/prometheus.yml", out[-300:])
    rc, out = promtool(["check", "rules", "rules.yml"], d)
    r.check(rc == 0, f"promtool check rules {rel}/rules.yml", out[-300:])
    rc, out = promtool(["test", "rules", "rules_test.yml"], d)
    r.check(rc == 0, f"promtool test rules {rel}/rules_test.yml", _first_failure(out))


def _first_failure(out):
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    at = [i for i, ln in enumerate(lines) if ln.startswith("alertname:") or ln.startswith("expr:")]
    return " ".join(lines[at[0]:at[0] + 1]) if at else " ".join(lines[-3:])


# ---- scrape config and rules, structurally ----

def load_yaml(r, path, rel):
    try:
        with open(path) as f:
            return yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        r.check(False, f"{rel}: reads as YAML", str(e).replace("\n", " ")[:200])
        return None


def check_scrape_config(r, cfg):
    jobs = [j for j in (cfg or {}).get("scrape_configs") or [] if isinstance(j, dict)]
    r.check(any("static_configs" in j for j in jobs), "prometheus.yml: a job with static targets")
    r.check(any("kubernetes_sd_configs" in j for j in jobs), "prometheus.yml: a job with Kubernetes discovery")
    for j in jobs:
        w = f"prometheus.yml job {j.get('job_name')}"
        relabel = j.get("relabel_configs") or []
        to_instance = [x for x in relabel if x.get("target_label") == "instance"]
        r.check(len(to_instance) == 1, f"{w}: relabels instance (to the node's name)")
        if "kubernetes_sd_configs" in j:
            r.check(any(x.get("source_labels") == ["__meta_kubernetes_pod_node_name"] for x in to_instance),
                    f"{w}: instance is the pod's node (__meta_kubernetes_pod_node_name)")
        if "static_configs" in j and len(to_instance) == 1:
            check_instance_relabel(r, w, to_instance[0])
        clash = [x.get("target_label") for x in relabel
                 if x.get("target_label") in ("pod", "container", "pid", "region", "gpu", "command")]
        r.check(not clash, f"{w}: adds no target label the exporter's metrics carry",
                f"{clash} would rename the metrics' own to exported_*")
    return [j.get("job_name") for j in jobs]


# A target's address -> the instance the static job's relabelling must give it: a host name loses its port and
# domain (the node's name, what alertmanager.yml routes on); an IPv4 or a bracketed IPv6 address stays whole.
INSTANCES = [("gpu-node-1.example.internal:9847", "gpu-node-1"), ("gpu-node-1:9847", "gpu-node-1"),
             ("gpu-node-1", "gpu-node-1"), ("127.0.0.1:9847", "127.0.0.1"), ("10.20.30.40:9847", "10.20.30.40"),
             ("10.20.30.40", "10.20.30.40"), ("[::1]:9847", "[::1]"), ("[fd00::2]", "[fd00::2]")]


def relabel_replace(rule, labels):
    """Prometheus's `replace` action on one rule: the regex anchored at both ends, $1 or ${1} in the replacement;
    the target is left as it was when the regex does not match. Python's re and Go's RE2 agree on these regexes
    (leftmost-first alternation, no look-around); tests/sections/exporter.sh runs the same rule in Prometheus."""
    value = (rule.get("separator", ";")).join(labels.get(x, "") for x in rule.get("source_labels") or [])
    m = re.fullmatch(rule.get("regex", "(.*)"), value)
    if m is None:
        return labels.get(rule["target_label"], "")
    return re.sub(r"\$\{?(\d+)\}?", lambda g: m.group(int(g.group(1))) or "", rule.get("replacement", "$1"))


def check_instance_relabel(r, w, rule):
    # A target left without instance gets its address (port included) from Prometheus.
    got = {a: relabel_replace(rule, {"__address__": a}) or a for a, _ in INSTANCES}
    wrong = [f"{a} -> instance={got[a]!r} (want {want!r})" for a, want in INSTANCES if got[a] != want]
    r.check(not wrong, f"{w}: instance keeps host names (without port and domain), IPv4 and [IPv6] addresses whole",
            "; ".join(wrong))


def check_rules(r, rules, tests, jobs):
    groups = (rules or {}).get("groups") or []
    records = {ru["record"]: None for g in groups for ru in g.get("rules") or [] if "record" in ru}
    known = dict(CONTRACT)
    known["up"] = ()
    # A recording rule's labels: those of what it is computed from, at most; accept any of the contract's.
    every = tuple(sorted({lb for v in CONTRACT.values() for lb in v}))
    known.update({name: every for name in records})
    alerts = []
    for g in groups:
        for ru in g.get("rules") or []:
            name = ru.get("alert") or ru.get("record")
            w = f"rules.yml {name}"
            check_expr(r, w, str(ru.get("expr", "")), known)
            if "alert" not in ru:
                continue
            alerts.append(name)
            labels, ann = ru.get("labels") or {}, ru.get("annotations") or {}
            r.check(labels.get("severity") in SEVERITIES, f"{w}: severity is one of {', '.join(SEVERITIES)}",
                    f"found {labels.get('severity')!r}")
            for key in ("summary", "description", "runbook"):
                r.check(isinstance(ann.get(key), str) and ann[key].strip(), f"{w}: has a {key} annotation")
            if "absent(" not in str(ru.get("expr")):
                r.check("$labels." in str(ann.get("summary", "")) and "$labels." in str(ann.get("description", "")),
                        f"{w}: summary and description use label values ($labels)")
            r.check(re.search(r"vramguard (top|dump)", str(ann.get("runbook", ""))) is not None,
                    f"{w}: runbook names `vramguard top` or `vramguard dump`")
            for rx in re.findall(r'\bup\{[^}]*job=~"([^"]*)"', str(ru.get("expr", ""))):
                missed = [j for j in jobs if not re.fullmatch(rx, j)]
                r.check(not missed, f"{w}: job=~\"{rx}\" matches every scrape job", f"misses {missed}")
    r.check(len(alerts) >= 5, f"rules.yml: {len(alerts)} alerts")
    fires, quiet = set(), set()
    for t in (tests or {}).get("tests") or []:
        for a in t.get("alert_rule_test") or []:
            (fires if a.get("exp_alerts") else quiet).add(a.get("alertname"))
    for a in alerts:
        r.check(a in fires, f"rules_test.yml: a test where {a} fires")
        r.check(a in quiet, f"rules_test.yml: a test where {a} does not fire")
    unknown = (fires | quiet) - set(alerts)
    r.check(not unknown, "rules_test.yml: tests only alerts of rules.yml", f"unknown: {sorted(unknown)}")


# ---- Alertmanager's route to vramguard autoscale ----

def check_amtool(r, d):
    rel = "examples/prometheus/alertmanager.yml"
    if shutil.which("amtool") is None:
        r.skip(f"amtool check-config {rel}", "amtool is missing: apt-get install prometheus-alertmanager "
               "(bash scripts/setup.sh)")
        return
    p = subprocess.run(["amtool", "check-config", "alertmanager.yml"], cwd=d, capture_output=True, text=True,
                       timeout=60)
    r.check(p.returncode == 0, f"amtool check-config {rel}", (p.stdout + p.stderr).strip()[-300:])


def check_alertmanager(r, cfg):
    rel = "alertmanager.yml"
    hooks = [(rc.get("name"), w) for rc in (cfg or {}).get("receivers") or [] if isinstance(rc, dict)
             for w in rc.get("webhook_configs") or [] if "autoscale" in str(rc.get("name"))]
    r.check(len(hooks) > 0, f"{rel}: a webhook receiver for vramguard autoscale")
    for name, w in hooks:
        auth = ((w.get("http_config") or {}).get("authorization")) or {}
        r.check(w.get("send_resolved") is True, f"{rel} {name}: send_resolved: true (the receiver logs them)")
        r.check(isinstance(auth.get("credentials_file"), str) and "credentials" not in auth,
                f"{rel} {name}: the bearer token from http_config.authorization.credentials_file",
                "a token written in the config is read by whoever reads the config")



def seconds(text):
    """Alertmanager's and the receiver's durations as used in the examples: 30s, 5m, 1h, or a bare number of seconds."""
    m = re.fullmatch(r"(\d+)([smh]?)", str(text).strip())
    return int(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)] if m else None


def check_cadence(r, cfg):
    """How often a still-firing alert raises a limit: Alertmanager posts it again every repeat_interval of its route
    (each post is a raise); the receiver's cool-down only refuses posts that come sooner. The examples' cool-down
    (docs/autoscale.md's command and config file, the Kubernetes ConfigMap) lies between the autoscale routes'
    group_interval (the pace of a flapping alert's posts) and their repeat_interval (the pace of raises), which
    docs/autoscale.md's route shares with alertmanager.yml; and the doc says that repeat_interval sets the pace."""
    with open(os.path.join(REPO, "docs", "autoscale.md"), encoding="utf-8") as f:
        doc = f.read()
    with open(os.path.join(REPO, "examples", "kubernetes", "autoscale.yaml"), encoding="utf-8") as f:
        k8s = f.read()
    routes = [ro for ro in ((cfg or {}).get("route") or {}).get("routes") or [] if "autoscale" in str(ro.get("receiver"))]
    repeat = {seconds(ro.get("repeat_interval")) for ro in routes}
    group = {seconds(ro.get("group_interval")) for ro in routes}
    doc_repeat = {seconds(x) for x in re.findall(r"^ +repeat_interval: (\S+)", doc, re.M)}
    doc_group = {seconds(x) for x in re.findall(r"^ +group_interval: (\S+)", doc, re.M)}
    cool = {seconds(x) for x in re.findall(r"--cooldown (\d+[smh]?)\b", doc) +
            re.findall(r"^ *cooldown = (\S+)", doc + k8s, re.M)}
    r.check(len(repeat) == 1 and len(group) == 1 and None not in repeat | group,
            "alertmanager.yml: the autoscale routes share one repeat_interval and one group_interval",
            f"repeat_interval {repeat}, group_interval {group}")
    r.check(doc_repeat == repeat and doc_group == group, "docs/autoscale.md's route has alertmanager.yml's "
            "repeat_interval and group_interval", f"doc {doc_repeat} {doc_group}, alertmanager.yml {repeat} {group}")
    r.check(bool(cool) and None not in cool and all(max(group) <= c < min(repeat) for c in cool),
            "the examples' cool-down: at least group_interval, shorter than repeat_interval (no repeat refused)",
            f"cool-down {sorted(cool)} s; group_interval {group}, repeat_interval {repeat}")
    row = [ln for ln in doc.splitlines() if ln.startswith("| `--cooldown")]
    r.check(len(row) == 1 and "repeat_interval" in row[0], "docs/autoscale.md's --cooldown row says that "
            "Alertmanager's repeat_interval, not the cool-down, sets how often a firing alert is raised again")


# ---- the Grafana dashboard ----

DS_VARS = ("${datasource}", "$datasource")


def panels_of(dash):
    """Every panel, rows' collapsed panels included."""
    out = []
    for p in dash.get("panels") or []:
        out.append(p)
        out.extend(p.get("panels") or [])
    return out


def check_dashboard(r, path):
    rel = "grafana-dashboard.json"
    try:
        with open(path) as f:
            dash = json.load(f)
    except (OSError, ValueError) as e:
        r.check(False, f"{rel}: is JSON", str(e))
        return
    r.check(isinstance(dash, dict) and isinstance(dash.get("title"), str), f"{rel}: is JSON with a title")
    tvars = {v.get("name"): v for v in (dash.get("templating") or {}).get("list") or [] if isinstance(v, dict)}
    ds = tvars.get("datasource") or {}
    r.check(ds.get("type") == "datasource" and ds.get("query") == "prometheus",
            f"{rel}: a datasource variable of type prometheus", f"found {ds or 'none'}")
    for name in ("instance", "region", "pid"):
        v = tvars.get(name) or {}
        if not r.check(v.get("type") == "query", f"{rel}: a query variable ${name}"):
            continue
        r.check(_ds_uid(v.get("datasource")) in DS_VARS, f"{rel}: ${name} queries the templated datasource")
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        m = re.fullmatch(r'\s*label_values\((.*),\s*(\w+)\)\s*', str(q))
        if r.check(m is not None and m.group(2) == name, f"{rel}: ${name} is label_values(..., {name})", str(q)):
            check_expr(r, f"{rel} ${name}", m.group(1), CONTRACT)
    ids, cells = {}, {}
    panels = panels_of(dash)
    r.check(len(panels) > 0, f"{rel}: has panels")
    used_vars = set()
    for p in panels:
        pid, title = p.get("id"), p.get("title")
        w = f"{rel} panel {pid} ({title})"
        r.check(isinstance(pid, int) and pid not in ids, f"{w}: id is a unique integer",
                f"also panel '{ids.get(pid)}'" if pid in ids else "")
        ids[pid] = title
        g = p.get("gridPos") or {}
        x, y, wd, h = (g.get(k) for k in ("x", "y", "w", "h"))
        if r.check(all(isinstance(v, int) for v in (x, y, wd, h)) and x >= 0 and y >= 0 and wd > 0 and h > 0
                   and x + wd <= 24, f"{w}: gridPos within the 24 columns", f"{g}"):
            if True:
                mine = {(cx, cy) for cx in range(x, x + wd) for cy in range(y, y + h)}
                hit = {cells[c] for c in mine if c in cells}
                r.check(not hit, f"{w}: overlaps no other panel", f"overlaps panel {sorted(hit, key=str)}")
                cells.update({c: pid for c in mine})
        if p.get("type") == "row":
            continue
        r.check(_ds_uid(p.get("datasource")) in DS_VARS, f"{w}: datasource is ${{datasource}}",
                f"found {p.get('datasource')}")
        targets = p.get("targets") or []
        r.check(len(targets) > 0, f"{w}: has queries")
        for t in targets:
            tw = f"{w} query {t.get('refId')}"
            r.check(_ds_uid(t.get("datasource", p.get("datasource"))) in DS_VARS, f"{tw}: datasource is ${{datasource}}")
            expr = t.get("expr")
            if r.check(isinstance(expr, str) and expr.strip(), f"{tw}: has an expr"):
                check_expr(r, tw, expr, CONTRACT)
                used_vars.update(re.findall(r'\$\{?(\w+)', expr))
    for name in ("instance", "region", "pid"):
        r.check(name in used_vars, f"{rel}: some query filters on ${name}")


def _ds_uid(ds):
    if isinstance(ds, dict):
        return ds.get("uid")
    return ds


# ---- driver ----

def check_dir(r, d, with_promtool):
    if with_promtool:
        check_promtool(r, d)
    cfg = load_yaml(r, os.path.join(d, "prometheus.yml"), "prometheus.yml")
    jobs = check_scrape_config(r, cfg)
    rules = load_yaml(r, os.path.join(d, "rules.yml"), "rules.yml")
    tests = load_yaml(r, os.path.join(d, "rules_test.yml"), "rules_test.yml")
    check_rules(r, rules, tests, jobs)
    check_amtool(r, d)
    am = load_yaml(r, os.path.join(d, "alertmanager.yml"), "alertmanager.yml")
    check_alertmanager(r, am)
    check_cadence(r, am)
    check_dashboard(r, os.path.join(d, "grafana-dashboard.json"))


# ---- self-test ----

def _broken_dashboard(dash):
    """The dashboard with one mistake of each kind the checker knows."""
    d = copy.deepcopy(dash)
    ps = [p for p in panels_of(d) if p.get("type") != "row"]
    ps[1]["id"] = ps[0]["id"]                                        # duplicate id
    ps[2]["gridPos"] = dict(ps[2]["gridPos"], x=20, w=8)             # beyond column 24
    ps[3]["datasource"] = {"type": "prometheus", "uid": "P1809F7CD0C75ACF3"}  # a hard-coded datasource
    ps[4]["targets"][0]["expr"] = 'vramguard_process_used_byte{instance=~"$instance"}'   # a typo
    ps[5]["targets"][0]["expr"] = 'vramguard_region_used_bytes{pid=~"$pid"}'   # no such label
    d["templating"]["list"] = [v for v in d["templating"]["list"] if v.get("name") != "datasource"]
    return d, ["id is a unique integer", "gridPos within the 24 columns", "datasource is ${datasource}",
               "metric vramguard_process_used_byte is the exporter's", "vramguard_region_used_bytes is matched on "
               "labels it has", "a datasource variable"]


def _broken_rules(rules):
    d = copy.deepcopy(rules)
    alerts = [ru for g in d["groups"] for ru in g["rules"] if "alert" in ru]
    alerts[0]["labels"]["severity"] = "page"
    del alerts[1]["annotations"]["runbook"]
    alerts[2]["expr"] = "increase(vramguard_process_denial_total[10m]) > 0"
    return d, ["severity is one of", "has a runbook annotation", "metric vramguard_process_denial_total"]


# Each mutation of rules.yml that rules_test.yml must catch: (what, old text, new text).
MUTATIONS = [
    ("quota threshold 80 % -> 95 %", "(vramguard_process_quota_bytes > 0) > 0.8", "(vramguard_process_quota_bytes > 0) > 0.95"),
    ("quota threshold > -> >=", "(vramguard_process_quota_bytes > 0) > 0.8", "(vramguard_process_quota_bytes > 0) >= 0.8"),
    ("quota alert without the zero-quota guard", "vramguard_process_used_bytes / (vramguard_process_quota_bytes > 0) > 0.8",
     "vramguard_process_used_bytes / vramguard_process_quota_bytes > 0.8"),
    ("region threshold 90 % -> 80 %", "(vramguard_region_budget_bytes > 0) > 0.9", "(vramguard_region_budget_bytes > 0) > 0.8"),
    ("denial window 10m -> 30m", "increase(vramguard_process_denials_total[10m])",
     "increase(vramguard_process_denials_total[30m])"),
    ("denials by delta() (blind to resets)", "increase(vramguard_process_denials_total[10m]) > 0",
     "delta(vramguard_process_denials_total[10m]) != 0"),
    ("streams alert on the counter's value", "increase(vramguard_process_streams_destroyed_pending_total[10m]) > 0",
     "vramguard_process_streams_destroyed_pending_total > 0"),
    ("exporter down for 5m -> 1m", "== 0\n        for: 5m", "== 0\n        for: 1m"),
    ("forecast threshold 1 h -> 2 h", "vramguard_process_quota_forecast_seconds < 3600",
     "vramguard_process_quota_forecast_seconds < 7200"),
    ("forecast threshold < -> <=", "vramguard_process_quota_forecast_seconds < 3600",
     "vramguard_process_quota_forecast_seconds <= 3600"),
    ("forecast for 5m -> 2m", "< 3600\n        for: 5m", "< 3600\n        for: 2m"),
]


def self_test(d, with_promtool):
    r = Results()
    with open(os.path.join(d, "grafana-dashboard.json")) as f:
        dash = json.load(f)
    with open(os.path.join(d, "rules.yml")) as f:
        rules_text = f.read()
    tmp = tempfile.mkdtemp(prefix="vg-prom-self-")
    try:
        case = os.path.join(tmp, "case")
        shutil.copytree(d, case)
        bad, expect = _broken_dashboard(dash)
        with open(os.path.join(case, "grafana-dashboard.json"), "w") as f:
            json.dump(bad, f)
        badr, expect_r = _broken_rules(yaml.safe_load(rules_text))
        with open(os.path.join(case, "rules.yml"), "w") as f:
            yaml.safe_dump(badr, f)
        with open(os.path.join(d, "alertmanager.yml")) as f:
            am = yaml.safe_load(f)
        hook = [w for rc in am["receivers"] if "autoscale" in rc["name"] for w in rc["webhook_configs"]][0]
        hook["send_resolved"] = False
        hook["http_config"]["authorization"] = {"type": "Bearer", "credentials": "s3cret"}
        with open(os.path.join(case, "alertmanager.yml"), "w") as f:
            yaml.safe_dump(am, f)
        expect_a = ["send_resolved: true", "the bearer token from http_config.authorization.credentials_file"]
        inner = Results(quiet=True)
        check_dir(inner, case, with_promtool=False)
        fails = [ln for ln in inner.lines if ln.startswith("not ok")]
        for ln in fails:
            print(f"#   {ln}")
        for e in expect + expect_r + expect_a:
            r.check(any(e in ln for ln in fails), f"self-test: a broken fixture fails '{e}'")
        n = len(expect + expect_r + expect_a)
        r.check(len(fails) <= 2 * n, f"self-test: nothing else fails ({len(fails)} failing checks for {n} mistakes)")
        if shutil.which("amtool") is not None:
            am["route"]["routes"][0]["receiver"] = "no-such-receiver"
            with open(os.path.join(case, "alertmanager.yml"), "w") as f:
                yaml.safe_dump(am, f)
            inner = Results(quiet=True)
            check_amtool(inner, case)
            r.check(inner.failed == 1, "self-test: amtool check-config fails a route to an undefined receiver")
        else:
            r.skip("self-test: amtool check-config fails a route to an undefined receiver", "amtool is missing")
        if not with_promtool:
            r.skip("self-test: mutated rules fail promtool test rules", "no promtool")
            return r
        for what, old, new in MUTATIONS:
            if not r.check(old in rules_text, f"self-test: mutation '{what}' applies to rules.yml"):
                continue
            shutil.copy(os.path.join(d, "rules.yml"), case)
            with open(os.path.join(case, "rules.yml"), "w") as f:
                f.write(rules_text.replace(old, new))
            rc, out = promtool(["test", "rules", "rules_test.yml"], case)
            r.check(rc != 0, f"self-test: rules_test.yml catches '{what}'", "promtool test rules passed")
            if rc != 0:
                print(f"#   {_first_failure(out)}")
    finally:
        shutil.rmtree(tmp)
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--self-test", action="store_true", help="check that broken fixtures and mutated rules fail")
    ap.add_argument("--no-promtool", action="store_true", help="skip what needs promtool")
    ap.add_argument("--root", default=REPO, help="the tree whose examples/prometheus to check")
    a = ap.parse_args()
    d = os.path.join(os.path.abspath(a.root), "examples", "prometheus")
    with_promtool = not a.no_promtool
    if with_promtool and shutil.which("promtool") is None:
        print("not ok - promtool is installed: apt-get install prometheus (bash scripts/setup.sh), or --no-promtool")
        return 1
    r = self_test(d, with_promtool) if a.self_test else Results()
    if not a.self_test:
        check_dir(r, d, with_promtool)
    print(f"{len(r.lines) - r.failed} passed, {r.failed} failed")
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
