#!/usr/bin/env python3
"""Static checks of the container and Kubernetes recipes under examples/ (run by `make test`; nothing is built,
pulled or applied). One line per check, "ok - ..." or "not ok - ...", and exit status 1 if any check failed.

  yamllint     every *.yml / *.yaml under examples/, with tests/lint/yamllint.yml (examples/prometheus/ gets only
               this here; tests/lint/check_prometheus.py checks the rest)
  Kubernetes   every YAML document with apiVersion and kind: its name; for workloads (Pod, Job, Deployment, ...)
               each container's name, image and command or args, env, volumeMounts against the Pod's volumes;
               a container that requests nvidia.com/gpu sets a valid quota (NVIDIA_GPU_MEMORY_LIMITS or
               `vramguard run --limit`), one that runs vramguard requests nvidia.com/gpu, and a report file lies
               on a mounted volume; device-plugin ConfigMaps hold sharing configs that parse; a library in
               LD_PRELOAD is on a mounted volume
  CDI          a DaemonSet that runs `vramguard cdi` asks for no GPU, writes its spec to a hostPath mounted at
               the host's path, and its --limit sizes are well-formed; a Pod asks for vramguard.dev/quota=SIZE
               through NRI's cdi-devices.noderesource.dev annotations, for a container it has and a SIZE some
               DaemonSet generates; no cdi.k8s.io/ annotation on a Pod (the kubelet does not pass it on)
  node agents  a DaemonSet that runs `vramguard exporter` or `vramguard autoscale` asks for no GPU; the receiver
               (`vramguard autoscale`, its flags and its --config ConfigMap's `name = value` lines together): a
               --config names a key of a ConfigMap of the same file mounted there; a non-loopback --listen only
               with allow-remote; a token-file in a memory emptyDir mounted readOnly, which an init container fills from
               a Secret with `install -o UID -m 0400` (UID the receiver's; a Secret's own files belong to root); not
               root (runAsNonRoot, or runAsUser other than 0); with allow-remote, a NetworkPolicy of the same file
               whose podSelector matches the pod and whose ingress rule for the receiver's port names its peers
  Compose      docker-compose.yml, compose.yaml: services with an image, one quota (in environment, or a
               vramguard.dev/quota=SIZE CDI device), a GPU (an nvidia reservation, gpus, or a nvidia.com/gpu CDI
               device), a library in LD_PRELOAD mounted,
               named volumes declared, report files on a volume
  Dockerfiles  every Dockerfile (Dockerfile, Dockerfile.*, *.Dockerfile, not *.dockerignore): known instructions
               after joining continuation lines and dropping comments; every stage `FROM image AS name`; ARGs
               declared before the first FROM are all used in a FROM and every variable a FROM uses is one of them;
               COPY --from names an earlier stage; ENTRYPOINT and CMD in exec form, a JSON array of strings;
               `vramguard run` entry points end with `--`; a library written into /etc/ld.so.preload is an
               absolute path copied into that stage

  --self-test  runs the same checks on broken fixtures embedded below and passes only if each fails as expected
  --root DIR   check DIR/examples instead of the repository's
"""
import argparse
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
YAMLLINT_CONFIG = os.path.join(HERE, "yamllint.yml")


class Results:
    """Collects one line per check; prints them unless quiet (the self-test reads them instead)."""

    def __init__(self, quiet=False):
        self.lines, self.failed, self.quiet = [], 0, quiet

    def check(self, cond, what, why=""):
        line = f"ok - {what}" if cond else f"not ok - {what}" + (f": {why}" if why else "")
        if not cond:
            self.failed += 1
        self.lines.append(line)
        if not self.quiet:
            print(line, flush=True)
        return cond

    def skip(self, what, why):
        self.lines.append(f"ok - {what} # SKIP {why}")
        if not self.quiet:
            print(self.lines[-1], flush=True)


# ---- the quota's grammar (a mirror of config/'s parser (size.c, limits.c), for catching typos in recipes) ----

SIZE = r"(?:\d+(?:\.\d+)?(?:[kmgt](?:i?b)?|b)?|\d+(?:\.\d+)?%|unlimited)"
KEY = r"(?:\d+|GPU-[0-9a-f-]+|MIG-[0-9a-zA-Z/-]+)"
LIMIT_ITEM = re.compile(rf"^(?:{KEY}[:=])?{SIZE}$", re.IGNORECASE)


def limit_problem(value):
    """None if value is a well-formed NVIDIA_GPU_MEMORY_LIMITS, else why not."""
    if not isinstance(value, str) or not value.strip():
        return "empty (that means no quota at all)"
    for item in value.split(","):
        if not LIMIT_ITEM.match(item):
            return f"'{item}' is not SIZE, N%, unlimited or KEY:VALUE (e.g. 4G, 50%, 0:4G,1:2G)"
    return None


def vramguard_run_options(argv):
    """The options of a `vramguard run ... -- CMD` command line, as a dict, or None if argv is not one."""
    if len(argv) < 2 or os.path.basename(str(argv[0])) != "vramguard" or argv[1] != "run":
        return None
    opts, i = {}, 2
    while i < len(argv) and argv[i] != "--":
        a = str(argv[i])
        if a.startswith("--") and "=" in a:
            k, v = a[2:].split("=", 1)
            opts[k] = v
        elif a.startswith("--") and i + 1 < len(argv):
            opts[a[2:]] = str(argv[i + 1])
            i += 1
        i += 1
    opts["--"] = i < len(argv)
    return opts


def under(path, mounts):
    """True if path lies in one of the mount points."""
    return any(path == m or path.startswith(m.rstrip("/") + "/") for m in mounts)


# ---- yamllint ----

def run_yamllint(r, files, root):
    exe = shutil.which("yamllint")
    if not r.check(exe is not None, "yamllint is installed", "apt-get install yamllint (bash scripts/setup.sh)"):
        return
    for f in files:
        p = subprocess.run([exe, "-f", "parsable", "-c", YAMLLINT_CONFIG, f], capture_output=True, text=True)
        problems = [ln for ln in p.stdout.splitlines() if "[error]" in ln]
        r.check(p.returncode == 0, f"yamllint {os.path.relpath(f, root)}", "; ".join(problems[:3]) or p.stderr)


# ---- Kubernetes ----

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
API_VERSIONS = {"Pod": "v1", "ConfigMap": "v1", "PersistentVolumeClaim": "v1", "Job": "batch/v1",
                "CronJob": "batch/v1", "Deployment": "apps/v1", "StatefulSet": "apps/v1",
                "DaemonSet": "apps/v1", "ReplicaSet": "apps/v1"}


def pod_spec_meta(doc):
    """The metadata of a workload's Pod template."""
    spec = doc.get("spec") or {}
    if doc.get("kind") == "CronJob":
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    return (spec.get("template") or {}).get("metadata")


def pod_spec(doc):
    kind, spec = doc.get("kind"), doc.get("spec") or {}
    if kind == "Pod":
        return spec
    if kind in ("Job", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"):
        return ((spec.get("template") or {}).get("spec")) or {}
    if kind == "CronJob":
        return (((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
    return None


CDI_KIND = "vramguard.dev/quota"
NRI_CDI = ("cdi-devices.noderesource.dev", "cdi-devices.nri.io")


def cdi_requests(r, where, meta, names):
    """{container: [CDI device names]} from the Pod template's NRI device-injector annotations."""
    out = {}
    for k, v in ((meta or {}).get("annotations") or {}).items():
        if k.startswith("cdi.k8s.io/"):
            r.check(False, f"{where}: annotation {k} reaches the runtime",
                    "the kubelet passes Pod annotations to the sandbox only; containerd and CRI-O read cdi.k8s.io/ "
                    "from a container's CRI config, which a device plugin or DRA driver fills (README.md)")
            continue
        prefix, _, rest = k.partition("/")
        if prefix not in NRI_CDI:
            continue
        try:
            devs = yaml.safe_load(v)
        except yaml.YAMLError:
            devs = None
        if not r.check(isinstance(devs, list) and all(isinstance(d, str) for d in devs),
                       f"{where}: annotation {k} is a YAML list of CDI device names"):
            continue
        targets = [rest[len("container."):]] if rest.startswith("container.") else names
        for t in targets:
            r.check(t in names, f"{where}: annotation {k} names a container of the Pod", f"containers: {names}")
            out.setdefault(t, []).extend(devs)
    return out


def vramguard_cdi_options(argv):
    """[(option, value)] of a `vramguard cdi ...` command line, or None if argv is not one."""
    if len(argv) < 2 or os.path.basename(str(argv[0])) != "vramguard" or argv[1] != "cdi":
        return None
    opts, i = [], 2
    while i < len(argv):
        a = str(argv[i])
        if a.startswith("--") and "=" in a:
            opts.append(tuple(a[2:].split("=", 1)))
        elif a.startswith("--") and i + 1 < len(argv):
            opts.append((a[2:], str(argv[i + 1])))
            i += 1
        i += 1
    return opts


def check_node_installer(r, where, spec, vols, generated):
    """A DaemonSet that writes vramguard's CDI spec on each node."""
    cs = (spec.get("initContainers") or []) + (spec.get("containers") or [])
    found = False
    for c in cs:
        w = f"{where} container {c.get('name')}"
        r.check("nvidia.com/gpu" not in ((c.get("resources") or {}).get("limits") or {}),
                f"{w}: asks for no nvidia.com/gpu", "a node installer must not take a GPU from the device plugin")
        opts = vramguard_cdi_options((c.get("command") or []) + (c.get("args") or []))
        if opts is None:
            continue
        found = True
        limits = [v for k, v in opts if k == "limit"]
        outs = [v for k, v in opts if k == "output"]
        r.check(len(limits) > 0, f"{w}: vramguard cdi has --limit")
        for v in limits:
            why = limit_problem(v)
            r.check(why is None, f"{w}: vramguard cdi --limit '{v}' is well-formed", why or "")
            generated.add(v)
        mounts = {m.get("mountPath"): m.get("name") for m in c.get("volumeMounts") or [] if isinstance(m, dict)}
        for out in outs or ["/etc/cdi"]:
            host = [((vols.get(n) or {}).get("hostPath") or {}).get("path") for mp, n in mounts.items()
                    if under(out, [mp])]
            r.check(len(host) == 1 and host[0] is not None and out.startswith(host[0]),
                    f"{w}: vramguard cdi writes {out} to the host's {out} (a hostPath at the same path)",
                    "the runtime reads /etc/cdi and /var/run/cdi on the node")
        exe = str(c["command"][0]) if c.get("command") else ""
        mp = [m for m in mounts if under(exe, [m])]
        r.check(len(mp) == 1 and ((vols.get(mounts[mp[0]]) or {}).get("hostPath") or {}).get("path") == mp[0],
                f"{w}: runs the command installed on the host, at the host's path ({exe})",
                "the spec names the library where the command finds it; that must be a path on the node")
    r.check(found, f"{where}: a container runs vramguard cdi")


NODE_AGENTS = ("exporter", "autoscale")     # vramguard commands that run on a node beside the jobs, not as a job
LOOPBACK = re.compile(r"^(127\.\d+\.\d+\.\d+|\[::1\]|localhost):\d+$")


def vramguard_command(c):
    """(subcommand, [argv after it]) if the container runs `vramguard SUBCOMMAND ...`, else (None, [])."""
    argv = [str(a) for a in (c.get("command") or []) + (c.get("args") or [])]
    for i, a in enumerate(argv[:-1]):
        if os.path.basename(a) == "vramguard":
            return argv[i + 1], argv[i + 2:]
    return None, []


def long_options(argv):
    """[(name, value)] of --name VALUE / --name=VALUE / --flag (value "true")."""
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--") and "=" in a:
            out.append(tuple(a[2:].split("=", 1)))
        elif a.startswith("--") and a[2:] in ("allow-remote", "dry-run"):
            out.append((a[2:], "true"))
        elif a.startswith("--") and i + 1 < len(argv):
            out.append((a[2:], argv[i + 1]))
            i += 1
        i += 1
    return out


def config_options(text):
    """[(name, value)] of a --config FILE: `name = value` lines, # comments."""
    out = []
    for ln in str(text).splitlines():
        ln = ln.split("#", 1)[0].strip()
        if ln:
            k, _, v = ln.partition("=")
            out.append((k.strip(), v.strip()))
    return out


def mounted_volume(c, vols, path):
    """(the volumeMount, the volume, the path inside the volume) that holds path in container c, or Nones."""
    best = None
    for m in c.get("volumeMounts") or []:
        mp = m.get("mountPath", "") if isinstance(m, dict) else ""
        if mp and under(path, [mp]) and (best is None or len(mp) > len(best.get("mountPath"))):
            best = m
    if best is None:
        return None, None, None
    return best, vols.get(best.get("name")), path[len(best["mountPath"].rstrip("/")) + 1:]


def check_token(r, w, c, spec, vols, token):
    """The receiver's token: a Secret's files belong to root (group fsGroup, group-readable, when one is set), which
    the receiver, not root, cannot read or refuses (it wants a file readable by its owner only). So an init
    container copies it from the Secret into a memory emptyDir, owned by the receiver's user, mode 0400 or 0600,
    and the receiver mounts that readOnly."""
    m, vol, key = mounted_volume(c, vols, token)
    ed = (vol or {}).get("emptyDir")
    if not r.check(isinstance(ed, dict) and ed.get("medium") == "Memory",
                   f"{w}: the token {token} lies in a memory emptyDir (copied there from a Secret)",
                   "a Secret mounted directly belongs to root: the receiver, not root, cannot read it; a token in "
                   "the image or a ConfigMap is readable by whoever reads those"):
        return
    r.check(m.get("readOnly") is True, f"{w}: the token's emptyDir is mounted readOnly")
    sc, psc = c.get("securityContext") or {}, spec.get("securityContext") or {}
    uid = sc.get("runAsUser", psc.get("runAsUser"))
    copied = False
    for ic in spec.get("initContainers") or []:
        mounts = {x.get("name"): x.get("mountPath", "") for x in ic.get("volumeMounts") or []}
        if m.get("name") not in mounts or not any("secret" in (vols.get(n) or {}) for n in mounts):
            continue
        cmd = " ".join(str(a) for a in (ic.get("command") or []) + (ic.get("args") or []))
        dest = mounts[m.get("name")].rstrip("/") + "/" + key
        owner = re.search(r"(?:-o\s*|--owner=)(\d+)\b", cmd)
        mode = re.search(r"(?:-m\s*|--mode=)0?([46]00)\b", cmd)
        copied = (re.search(r"\binstall\b", cmd) is not None and dest in cmd and owner is not None
                  and mode is not None and int(owner.group(1)) == uid)
        if copied:
            break
    r.check(copied, f"{w}: an init container copies the token from a Secret with install, owned by the "
            f"receiver's user ({uid}), mode 0400 or 0600",
            "install -o UID -m 0400 /secret/token DEST: the receiver refuses a token file others can read")


def check_receiver(r, w, c, spec, labels, vols, configmaps, netpols):
    """A `vramguard autoscale` container: its token, its user, where it listens and who may reach it."""
    _, argv = vramguard_command(c)
    opts = long_options(argv)
    for k, path in [o for o in opts if o[0] == "config"]:
        m, vol, key = mounted_volume(c, vols, path)
        cm = (vol or {}).get("configMap", {}).get("name") if vol else None
        if r.check(cm in configmaps and key in (configmaps.get(cm) or {}),
                   f"{w}: --config {path} is a key of a ConfigMap of this file, mounted there",
                   f"volume {m.get('name') if m else None}, ConfigMaps {sorted(configmaps)}"):
            opts += config_options(configmaps[cm][key])
    got = {}
    for k, v in opts:
        got.setdefault(k, v)
    listen, socket = got.get("listen", "127.0.0.1:9848"), got.get("socket")
    remote = got.get("allow-remote", "false").lower() in ("true", "1", "yes", "on")
    if socket is None:
        r.check(LOOPBACK.match(listen) is not None or remote,
                f"{w}: listens on {listen}, not a loopback address, only with allow-remote",
                "the receiver refuses it at start (vramguard help autoscale)")
        token = got.get("token-file")
        if r.check(token is not None, f"{w}: has a token-file (required with --listen)"):
            check_token(r, w, c, spec, vols, token)
    sc, psc = c.get("securityContext") or {}, spec.get("securityContext") or {}
    uid = sc.get("runAsUser", psc.get("runAsUser"))
    nonroot = sc.get("runAsNonRoot", psc.get("runAsNonRoot"))
    r.check(uid != 0 and (nonroot is True or (isinstance(uid, int) and uid > 0)),
            f"{w}: does not run as root (runAsNonRoot, or runAsUser other than 0)",
            f"runAsUser {uid}, runAsNonRoot {nonroot}: as root it could raise any job's limit (docs/autoscale.md)")
    if remote and socket is None:
        port = int(listen.rsplit(":", 1)[1]) if listen.rsplit(":", 1)[-1].isdigit() else None
        mine = []
        for np_ in netpols:
            sel = ((np_.get("spec") or {}).get("podSelector") or {}).get("matchLabels") or {}
            if sel and all(labels.get(k) == v for k, v in sel.items()):
                mine.append(np_)
        ok = False
        for np_ in mine:
            for rule in (np_.get("spec") or {}).get("ingress") or []:
                ports = [p.get("port") for p in rule.get("ports") or []]
                if (port in ports or "autoscale" in ports) and rule.get("from"):
                    ok = True
        r.check(ok, f"{w}: allow-remote: a NetworkPolicy selects the pod and admits only named peers to port {port}",
                "without one, every pod of the cluster can reach the receiver")


def check_container(r, where, c, volumes, init, cdi=()):
    name = c.get("name", "?")
    w = f"{where} container {name}"
    r.check(isinstance(c.get("name"), str) and DNS_LABEL.match(c["name"]) is not None, f"{w}: name is a DNS label")
    r.check(isinstance(c.get("image"), str) and c["image"].strip() != "", f"{w}: has an image")
    argv = c.get("command") or c.get("args")
    r.check(isinstance(argv, list) and len(argv) > 0 and all(isinstance(a, (str, int, float)) for a in argv),
            f"{w}: has command or args (a list of strings)")
    for key in ("command", "args"):
        if key in c:
            r.check(all(isinstance(a, str) for a in c[key]), f"{w}: every {key} item is a string",
                    "quote numbers and sizes, e.g. \"8G\"")
    if init and "restartPolicy" in c:
        r.check(c["restartPolicy"] == "Always", f"{w}: an init container's restartPolicy is Always (a sidecar)")

    env, seen = {}, set()
    for e in c.get("env") or []:
        ok = isinstance(e, dict) and isinstance(e.get("name"), str) and ("value" in e or "valueFrom" in e)
        label = e.get("name") if isinstance(e, dict) else repr(e)
        r.check(ok, f"{w}: env entry {label} has a name and a value")
        if ok:
            r.check(e["name"] not in seen, f"{w}: env {e['name']} set once")
            seen.add(e["name"])
            if "value" in e:
                r.check(isinstance(e["value"], str), f"{w}: env {e['name']} value is a string")
                env[e["name"]] = e["value"]

    mounts = []
    for m in c.get("volumeMounts") or []:
        vname = m.get("name") if isinstance(m, dict) else None
        r.check(vname in volumes, f"{w}: volumeMount {vname} names a volume of the Pod",
                f"volumes are {sorted(volumes) or 'none'}")
        mp = m.get("mountPath", "") if isinstance(m, dict) else ""
        r.check(isinstance(mp, str) and mp.startswith("/"), f"{w}: mountPath {mp} is absolute")
        mounts.append(mp)

    limits = (c.get("resources") or {}).get("limits") or {}
    requests = (c.get("resources") or {}).get("requests") or {}
    gpus = limits.get("nvidia.com/gpu")
    wants_gpu = gpus is not None
    if "nvidia.com/gpu" in requests:
        r.check(requests["nvidia.com/gpu"] == gpus, f"{w}: nvidia.com/gpu requests equal limits",
                "an extended resource's request must equal its limit")
    opts = vramguard_run_options([str(a) for a in (c.get("command") or [])] + [str(a) for a in (c.get("args") or [])]) \
        if c.get("command") else None
    quota_devs = [d.split("=", 1)[1] for d in cdi if d.startswith(CDI_KIND + "=")]
    preload = [p for p in re.split(r"[: ]", env.get("LD_PRELOAD", "")) if "libvramguard" in p]
    for p in preload:
        r.check(p.startswith("/") and under(p, mounts), f"{w}: LD_PRELOAD library {p} is on a mounted volume",
                "mount the library the node's DaemonSet installed (hostPath), or use the image's own copy")
    runs_vramguard = opts is not None or "NVIDIA_GPU_MEMORY_LIMITS" in env or bool(quota_devs) or bool(preload)
    limit = (opts or {}).get("limit") or env.get("NVIDIA_GPU_MEMORY_LIMITS") or (quota_devs or [None])[0]
    if wants_gpu:
        r.check(isinstance(gpus, int) and gpus > 0, f"{w}: resources.limits nvidia.com/gpu is a positive integer")
        r.check(limit is not None, f"{w}: sets NVIDIA_GPU_MEMORY_LIMITS (env, vramguard run --limit or a "
                f"{CDI_KIND} CDI device)",
                "a GPU container without a quota is not guarded")
    if limit is not None:
        why = limit_problem(limit)
        r.check(why is None, f"{w}: quota '{limit}' is well-formed", why or "")
    if runs_vramguard and not wants_gpu:
        r.check(False, f"{w}: resources.limits nvidia.com/gpu present",
                "it runs under vramguard but asks for no GPU")
    if opts is not None:
        r.check(opts["--"], f"{w}: vramguard run ends its options with --")
    report = (opts or {}).get("report") or env.get("VRAMGUARD_REPORT")
    if report and report.startswith("/"):
        r.check(under(os.path.dirname(report), mounts), f"{w}: report file {report} is on a mounted volume",
                "reports written to the container's own filesystem are lost with it")
    return wants_gpu


def check_device_plugin_config(r, where, data):
    for key, text in (data or {}).items():
        try:
            cfg = yaml.safe_load(text)
        except yaml.YAMLError as e:
            r.check(False, f"{where}: data.{key} parses as YAML", str(e).splitlines()[0])
            continue
        if not isinstance(cfg, dict) or "sharing" not in cfg:
            continue
        r.check(cfg.get("version") == "v1", f"{where}: data.{key} is a version v1 device-plugin config")
        sharing = cfg.get("sharing") or {}
        for mode, body in sharing.items():
            res = (body or {}).get("resources") or []
            r.check(mode in ("timeSlicing", "mps") and len(res) > 0,
                    f"{where}: data.{key} sharing.{mode} is timeSlicing or mps with resources")
            for x in res:
                r.check(isinstance(x, dict) and isinstance(x.get("name"), str) and
                        isinstance(x.get("replicas"), int) and x["replicas"] >= 2,
                        f"{where}: data.{key} {mode} resource {x.get('name') if isinstance(x, dict) else x} "
                        "has a name and replicas >= 2")


def check_manifest(r, path, root, cdi_sizes, cdi_asked):
    rel = os.path.relpath(path, root)
    try:
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
    except yaml.YAMLError as e:
        r.check(False, f"{rel}: parses as YAML", str(e).replace("\n", " "))
        return
    configmaps = {(d.get("metadata") or {}).get("name"): d.get("data") or {} for d in docs
                  if isinstance(d, dict) and d.get("kind") == "ConfigMap"}
    netpols = [d for d in docs if isinstance(d, dict) and d.get("kind") == "NetworkPolicy"]
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict) or "kind" not in doc:
            r.check(False, f"{rel} document {i + 1}: is a Kubernetes object (apiVersion, kind)")
            continue
        kind = doc.get("kind")
        name = (doc.get("metadata") or {}).get("name")
        where = f"{rel} {kind}/{name}"
        r.check(isinstance(doc.get("apiVersion"), str), f"{where}: has apiVersion")
        if kind in API_VERSIONS:
            r.check(doc.get("apiVersion") == API_VERSIONS[kind], f"{where}: apiVersion is {API_VERSIONS[kind]}",
                    f"found {doc.get('apiVersion')}")
        r.check(isinstance(name, str) and DNS_SUBDOMAIN.match(name) is not None and len(name) <= 253,
                f"{where}: metadata.name is a DNS subdomain")
        if kind == "ConfigMap":
            check_device_plugin_config(r, where, doc.get("data"))
            continue
        spec = pod_spec(doc)
        if spec is None:
            continue
        containers = spec.get("containers") or []
        inits = spec.get("initContainers") or []
        if not r.check(isinstance(containers, list) and len(containers) > 0, f"{where}: has containers"):
            continue
        vols = {}
        for v in spec.get("volumes") or []:
            vn = v.get("name") if isinstance(v, dict) else None
            r.check(vn is not None and vn not in vols, f"{where}: volume {vn} has a unique name")
            vols[vn] = v
        names = [c.get("name") for c in containers + inits if isinstance(c, dict)]
        r.check(len(names) == len(set(names)), f"{where}: container names are unique")
        tmeta = doc.get("metadata") if kind == "Pod" else (pod_spec_meta(doc) or {})
        cdi = cdi_requests(r, where, tmeta, names)
        for devs in cdi.values():
            cdi_asked.extend((where, d) for d in devs if d.startswith(CDI_KIND + "="))
        if kind in ("Job", "CronJob"):
            r.check(spec.get("restartPolicy") in ("Never", "OnFailure"),
                    f"{where}: restartPolicy is Never or OnFailure")
        if kind == "DaemonSet" and any(vramguard_cdi_options((c.get("command") or []) + (c.get("args") or []))
                                       is not None for c in containers + inits):
            check_node_installer(r, where, spec, vols, cdi_sizes)
        elif kind == "DaemonSet" and any(vramguard_command(c)[0] in NODE_AGENTS for c in containers):
            # The exporter and the receiver: node agents beside the jobs, never a job themselves.
            labels = ((pod_spec_meta(doc) or {}).get("labels")) or {}
            for c in inits + containers:
                check_container(r, where, c, vols, init=c in inits)
                w = f"{where} container {c.get('name')}"
                r.check("nvidia.com/gpu" not in ((c.get("resources") or {}).get("limits") or {}),
                        f"{w}: asks for no nvidia.com/gpu", "a node agent must not take a GPU from the jobs")
                if vramguard_command(c)[0] == "autoscale":
                    check_receiver(r, w, c, spec, labels, vols, configmaps, netpols)
        else:
            gpu = False
            for c in inits:
                gpu |= check_container(r, where, c, vols, init=True, cdi=cdi.get(c.get("name"), []))
            for c in containers:
                gpu |= check_container(r, where, c, vols, init=False, cdi=cdi.get(c.get("name"), []))
            r.check(gpu, f"{where}: at least one container requests nvidia.com/gpu")
        used = {m.get("name") for c in containers + inits for m in (c.get("volumeMounts") or [])}
        for vn in vols:
            r.check(vn in used, f"{where}: volume {vn} is mounted somewhere")


# ---- Compose ----

def compose_env(env):
    if isinstance(env, dict):
        return {str(k): (None if v is None else str(v)) for k, v in env.items()}
    out = {}
    for item in env or []:
        k, _, v = str(item).partition("=")
        out[k] = v
    return out


def cdi_size_problem(name):
    """What is wrong with a vramguard.dev/quota device name, or None: `vramguard cdi` names a device after its
    SPEC with ',' as '_' and '%' as 'pct'."""
    return limit_problem(name.replace("_", ",").replace("pct", "%"))


def check_compose(r, path, root):
    rel = os.path.relpath(path, root)
    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except yaml.YAMLError as e:
        r.check(False, f"{rel}: parses as YAML", str(e).replace("\n", " "))
        return
    services = (doc or {}).get("services")
    if not r.check(isinstance(services, dict) and len(services) > 0, f"{rel}: has services"):
        return
    declared = set(((doc or {}).get("volumes")) or {})
    for sname, s in services.items():
        w = f"{rel} service {sname}"
        s = s or {}
        r.check(isinstance(s.get("image"), str) or "build" in s, f"{w}: has an image or a build")
        env = compose_env(s.get("environment"))
        cdi = [str(d) for d in s.get("devices") or [] if "/" in str(d).split("=", 1)[0] and "=" in str(d)]
        quota_devs = [d.split("=", 1)[1] for d in cdi if d.startswith("vramguard.dev/quota=")]
        limit = env.get("NVIDIA_GPU_MEMORY_LIMITS")
        if r.check((limit is not None) != (len(quota_devs) == 1),
                   f"{w}: one quota: NVIDIA_GPU_MEMORY_LIMITS in environment or one vramguard.dev/quota=SIZE device"):
            why = limit_problem(limit) if limit is not None else cdi_size_problem(quota_devs[0])
            r.check(why is None, f"{w}: quota '{limit or quota_devs[0]}' is well-formed", why or "")
        devices = (((s.get("deploy") or {}).get("resources") or {}).get("reservations") or {}).get("devices") or []
        gpus = s.get("gpus")
        nv = [d for d in devices + (gpus if isinstance(gpus, list) else []) if isinstance(d, dict)
              and d.get("driver") == "nvidia"]
        r.check((len(nv) > 0 and all("gpu" in (d.get("capabilities") or []) for d in nv)) or gpus == "all"
                or any(d.startswith("nvidia.com/gpu=") for d in cdi),
                f"{w}: asks for a GPU (deploy.resources.reservations.devices or gpus: driver nvidia, capabilities "
                "[gpu]; gpus: all; or a CDI device nvidia.com/gpu=...)")
        for d in nv:
            r.check(not ("count" in d and "device_ids" in d), f"{w}: GPU reservation has count or device_ids, not both")
        mounts = []
        for v in s.get("volumes") or []:
            if isinstance(v, dict):
                src, dst = v.get("source", ""), v.get("target", "")
                named = v.get("type", "volume") == "volume"
            else:
                parts = str(v).split(":")
                src, dst = (parts[0], parts[1]) if len(parts) > 1 else ("", parts[0])
                named = src != "" and not src.startswith((".", "/", "~", "$"))
            if named and src:
                r.check(src in declared, f"{w}: volume {src} is declared under top-level volumes")
            r.check(str(dst).startswith("/"), f"{w}: volume target {dst} is absolute")
            mounts.append(str(dst))
        preload = env.get("LD_PRELOAD")
        if preload:
            r.check(all(lib in mounts for lib in preload.replace(":", " ").split()),
                    f"{w}: the library in LD_PRELOAD ({preload}) is mounted into the container", f"mounts: {mounts}")
        report = env.get("VRAMGUARD_REPORT")
        if report and report.startswith("/"):
            r.check(under(os.path.dirname(report), mounts), f"{w}: report file {report} is on a volume")
        cmd = s.get("command")
        if isinstance(cmd, str):
            r.check(False, f"{w}: command is a list", "a string is split by Compose, not by a shell")


# ---- Dockerfiles ----

INSTRUCTIONS = {"FROM", "RUN", "CMD", "LABEL", "MAINTAINER", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT",
                "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}
VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::[-+][^}]*)?\}|([A-Za-z_][A-Za-z0-9_]*))")
STAGE_NAME = re.compile(r"^[a-z][a-z0-9_.-]*$")
IMAGE_REF = re.compile(r"^[a-z0-9]+(?:[._/-][a-z0-9]+|__)*(?::\d+)?(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*"
                       r"(?::[\w][\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$")


def parse_dockerfile(text):
    """[(line number, INSTRUCTION, arguments)] with continuations joined and comments dropped, and a list of
    problems. Parser directives (# syntax=, # escape=) are comments here; only the default escape is supported."""
    out, problems = [], []
    lines = text.rstrip("\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"^\s*#\s*escape\s*=\s*`", line) and not out:
            problems.append("`# escape=`` is not supported by this checker")
        if not line.strip() or line.lstrip().startswith("#"):
            i += 1
            continue
        start, buf = i + 1, line
        while buf.rstrip().endswith("\\"):
            buf = buf.rstrip()[:-1]
            i += 1
            while i < len(lines) and lines[i].lstrip().startswith("#"):   # comments inside a continuation
                i += 1
            if i >= len(lines):
                problems.append(f"line {start}: the file ends inside a continued line")
                break
            buf += " " + lines[i]
        i += 1
        m = re.match(r"^\s*([A-Za-z]+)(?:\s+(.*))?$", buf)
        if not m:
            problems.append(f"line {start}: cannot read an instruction in '{buf.strip()[:40]}'")
            continue
        word, args = m.group(1).upper(), (m.group(2) or "").strip()
        if "<<" in args and word in ("RUN", "COPY", "ADD"):
            problems.append(f"line {start}: heredocs are not supported by this checker")
        out.append((start, word, args))
    return out, problems


def exec_form(args):
    """The list if args is a JSON array of strings, else None."""
    try:
        v = json.loads(args)
    except ValueError:
        return None
    return v if isinstance(v, list) and all(isinstance(a, str) for a in v) else None


def check_dockerfile(r, path, root):
    rel = os.path.relpath(path, root)
    with open(path) as f:
        instrs, problems = parse_dockerfile(f.read())
    r.check(not problems, f"{rel}: parses (continuations, comments)", "; ".join(problems))
    unknown = [f"line {n}: {w}" for n, w, _ in instrs if w not in INSTRUCTIONS]
    r.check(not unknown, f"{rel}: every instruction is a known Dockerfile instruction", ", ".join(unknown))
    if not r.check(len(instrs) > 0 and instrs[0][1] in ("FROM", "ARG"), f"{rel}: starts with FROM or ARG"):
        return
    global_args, used_global = {}, set()
    arg_deps = {}               # a global ARG -> the earlier global ARGs its default uses (Docker expands them)
    stages, stage_ix = [], -1
    copied = {}                 # stage index -> destinations copied into it
    for n, word, args in instrs:
        where = f"{rel}:{n} {word}"
        if word == "ARG" and stage_ix < 0:
            k, _, default = args.partition("=")
            k, default = k.strip(), default.strip().strip('"')
            arg_deps[k] = {m.group(1) or m.group(2) for m in VAR.finditer(default)} & set(global_args)
            global_args[k] = VAR.sub(lambda m: global_args.get(m.group(1) or m.group(2), m.group(0)), default)
            continue
        if word == "FROM":
            toks = [t for t in args.split() if not t.startswith("--platform=")]
            ok = len(toks) == 3 and toks[1].upper() == "AS"
            r.check(ok, f"{where}: names its stage (FROM image AS name)", f"'{args}'")
            image = toks[0] if toks else ""
            name = toks[2] if ok else None
            if name is not None:
                r.check(STAGE_NAME.match(name) is not None, f"{where}: stage name {name} is lower case")
                r.check(name not in stages, f"{where}: stage name {name} is unique")
            for m in VAR.finditer(image):
                var = m.group(1) or m.group(2)
                todo = [var]
                while todo:                 # an ARG used in a FROM uses the ARGs its default expands
                    v = todo.pop()
                    if v not in used_global:
                        used_global.add(v)
                        todo.extend(arg_deps.get(v, ()))
                r.check(var in global_args, f"{where}: ${var} is an ARG declared before the first FROM")
            resolved = VAR.sub(lambda m: global_args.get(m.group(1) or m.group(2), ""), image)
            r.check(resolved in stages or IMAGE_REF.match(resolved) is not None,
                    f"{where}: '{resolved}' is an image reference or an earlier stage")
            stages.append(name or f"#{len(stages)}")
            stage_ix = len(stages) - 1
            copied[stage_ix] = set()
            continue
        if word in ("COPY", "ADD"):
            flags = re.findall(r"--([a-z-]+)(?:=(\S+))?", args)
            rest = re.sub(r"--[a-z-]+(?:=\S+)?\s*", "", args).strip()
            paths = exec_form(rest) if rest.startswith("[") else rest.split()
            if not r.check(paths is not None and len(paths) >= 2, f"{where}: has sources and a destination"):
                continue
            if len(paths) > 2:
                r.check(paths[-1].endswith("/"), f"{where}: several sources go to a directory ending in /")
            copied[stage_ix].add(paths[-1])
            for flag, value in flags:
                if flag == "from":
                    earlier = stages[:stage_ix]
                    r.check(value in earlier or (value.isdigit() and int(value) < stage_ix),
                            f"{where}: --from={value} names an earlier stage", f"earlier stages: {earlier}")
        if word in ("ENTRYPOINT", "CMD"):
            argv = exec_form(args)
            if r.check(argv is not None and len(argv) > 0, f"{where}: exec form, a JSON array of strings",
                       "the shell form runs the job under /bin/sh -c, which does not pass on signals"
                       if not args.startswith("[") else f"'{args}' is not a valid JSON array of strings"):
                if word == "ENTRYPOINT" and vramguard_run_options(argv) is not None:
                    r.check(argv[-1] == "--", f"{where}: `vramguard run` ends with -- so CMD is the job")
        if word in ("RUN", "SHELL", "HEALTHCHECK") and args.startswith("["):
            r.check(exec_form(args) is not None, f"{where}: a JSON array of strings", f"'{args[:60]}'")
        if word == "RUN" and "/etc/ld.so.preload" in args:
            libs = set(re.findall(r"(?<![\w/.-])(\S*\.so(?:\.\d+)*)\b", args.replace("/etc/ld.so.preload", "")))
            r.check(len(libs) > 0 and all(lib.startswith("/") for lib in libs),
                    f"{where}: /etc/ld.so.preload gets an absolute path", f"{sorted(libs)}")
            for lib in libs:
                r.check(lib in copied[stage_ix], f"{where}: {lib} is copied into this stage first")
    unused = sorted(set(global_args) - used_global)
    r.check(not unused, f"{rel}: every ARG before the first FROM is used in a FROM", f"unused: {unused}")
    r.check(len(stages) > 0, f"{rel}: has a FROM")


# ---- driver ----

def is_dockerfile(name):
    return (name == "Dockerfile" or name.startswith("Dockerfile.") or name.endswith(".Dockerfile")) \
        and not name.endswith(".dockerignore")


def check_tree(r, root):
    ex = os.path.join(root, "examples")
    yamls, dockerfiles = [], []
    for d, _, files in sorted(os.walk(ex)):
        for f in sorted(files):
            p = os.path.join(d, f)
            if f.endswith((".yml", ".yaml")):
                yamls.append(p)
            elif is_dockerfile(f):
                dockerfiles.append(p)
    r.check(len(yamls) > 0 and len(dockerfiles) > 0, f"found {len(yamls)} YAML files and {len(dockerfiles)} "
            "Dockerfiles under examples/")
    run_yamllint(r, yamls, root)
    cdi_sizes, cdi_asked = set(), []
    for p in yamls:
        base = os.path.basename(p)
        if base in ("docker-compose.yml", "docker-compose.yaml", "compose.yml", "compose.yaml"):
            check_compose(r, p, root)
        elif os.path.relpath(p, ex).startswith("prometheus" + os.sep):
            continue   # Prometheus configs and rules, not manifests: tests/lint/check_prometheus.py
        else:
            check_manifest(r, p, root, cdi_sizes, cdi_asked)
    for where, dev in cdi_asked:
        r.check(dev.split("=", 1)[1] in cdi_sizes, f"{where}: CDI device {dev} is one a DaemonSet's vramguard cdi "
                "generates", f"generated: {sorted(cdi_sizes) or 'none'}")
    for p in dockerfiles:
        check_dockerfile(r, p, root)


# ---- self-test: broken fixtures, each with the failures it must produce ----

GOOD_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: good
spec:
  containers:
    - name: job
      image: example/job:1
      args: ["python3", "train.py"]
      env:
        - name: NVIDIA_GPU_MEMORY_LIMITS
          value: "4G"
      resources:
        limits:
          nvidia.com/gpu: 1
"""

FIXTURES = [
    ("a good Pod passes", "examples/kubernetes/good.yaml", GOOD_POD, []),
    ("a Pod with no quota, an undefined volume and a bad name", "examples/kubernetes/pod.yaml", """\
apiVersion: v1
kind: Pod
metadata:
  name: Bad_Name
spec:
  containers:
    - name: trainer
      image: example/job:1
      args: ["python3", "train.py"]
      resources:
        limits:
          nvidia.com/gpu: 1
      volumeMounts:
        - name: reports
          mountPath: /reports
    - name: sidecar
      image: example/job:1
""", ["metadata.name is a DNS subdomain", "sets NVIDIA_GPU_MEMORY_LIMITS", "volumeMount reports names a volume",
      "container sidecar: has command or args"]),
    ("a Job with a malformed quota, no GPU and a report on the container's disk", "examples/kubernetes/job.yaml", """\
apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  template:
    spec:
      restartPolicy: Always
      containers:
        - name: train
          image: example/job:1
          command: [vramguard, run, --limit, 8XB, --report, /tmp/vg-%p.json, python3, train.py]
""", ["restartPolicy is Never or OnFailure", "resources.limits nvidia.com/gpu present", "quota '8XB' is well-formed",
      "ends its options with --", "report file /tmp/vg-%p.json is on a mounted volume",
      "at least one container requests nvidia.com/gpu"]),
    ("a manifest yamllint rejects", "examples/kubernetes/lint.yaml",
     GOOD_POD.replace("  name: good", "  name: good   ").replace("kind: Pod", "kind: Pod\nkind: Pod"),
     ["yamllint examples/kubernetes/lint.yaml"]),
    ("a node installer and CDI Pods that do not match", "examples/kubernetes/cdi.yaml", """\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: node
spec:
  template:
    spec:
      containers:
        - name: cdi
          image: example/vramguard:1
          command: [/usr/local/bin/vramguard, cdi, --limit, 4XB, --limit, 8G, --output, /var/run/cdi]
          resources:
            limits:
              nvidia.com/gpu: 1
          volumeMounts:
            - name: specs
              mountPath: /var/run/cdi
      volumes:
        - name: specs
          emptyDir: {}
---
apiVersion: v1
kind: Pod
metadata:
  name: cdi-pod
  annotations:
    cdi.k8s.io/vramguard: vramguard.dev/quota=8G
    cdi-devices.noderesource.dev/container.trian: |
      - vramguard.dev/quota=16G
spec:
  containers:
    - name: train
      image: example/job:1
      args: ["python3", "train.py"]
      env:
        - name: LD_PRELOAD
          value: /usr/lib/vramguard/libvramguard.so
      resources:
        limits:
          nvidia.com/gpu: 1
""", ["container cdi: asks for no nvidia.com/gpu", "vramguard cdi --limit '4XB' is well-formed",
      "writes /var/run/cdi to the host's /var/run/cdi", "runs the command installed on the host",
      "annotation cdi.k8s.io/vramguard reaches the runtime", "container.trian names a container of the Pod",
      "LD_PRELOAD library /usr/lib/vramguard/libvramguard.so is on a mounted volume",
      "CDI device vramguard.dev/quota=16G is one a DaemonSet's vramguard cdi generates"]),
    ("a receiver whose token others can read, run as root, on 0.0.0.0 without allow-remote",
     "examples/kubernetes/autoscale.yaml", """\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: node
spec:
  selector:
    matchLabels:
      app: node
  template:
    metadata:
      labels:
        app: node
    spec:
      containers:
        - name: autoscale
          image: example/vramguard:1
          command: [vramguard, autoscale, --ceiling, 16G, --listen, "0.0.0.0:9848", --token-file, /run/tok/token]
          securityContext:
            runAsUser: 0
          resources:
            limits:
              nvidia.com/gpu: 1
          volumeMounts:
            - name: tok
              mountPath: /run/tok
      volumes:
        - name: tok
          secret:
            secretName: tok
            defaultMode: 0644
""", ["container autoscale: asks for no nvidia.com/gpu",
      "listens on 0.0.0.0:9848, not a loopback address, only with allow-remote",
      "the token /run/tok/token lies in a memory emptyDir (copied there from a Secret)",
      "does not run as root"]),
    ("a receiver whose token copy belongs to root, mounted writable",
     "examples/kubernetes/autoscale.yaml", """\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: node
spec:
  selector:
    matchLabels:
      app: node
  template:
    metadata:
      labels:
        app: node
    spec:
      securityContext:
        runAsUser: 1000
        runAsNonRoot: true
      initContainers:
        - name: token
          image: example/vramguard:1
          command: [install, -o, "0", -m, "0400", /run/secret/token, /run/tok/token]
          securityContext:
            runAsUser: 0
            runAsNonRoot: false
          volumeMounts:
            - name: secret
              mountPath: /run/secret
            - name: tok
              mountPath: /run/tok
      containers:
        - name: autoscale
          image: example/vramguard:1
          command: [vramguard, autoscale, --ceiling, 16G, --token-file, /run/tok/token]
          volumeMounts:
            - name: tok
              mountPath: /run/tok
      volumes:
        - name: secret
          secret:
            secretName: tok
        - name: tok
          emptyDir:
            medium: Memory
""", ["the token's emptyDir is mounted readOnly",
      "an init container copies the token from a Secret with install, owned by the receiver's user (1000), mode 0400 "
      "or 0600"]),
    ("a receiver with allow-remote in its --config and no NetworkPolicy, its token in a ConfigMap",
     "examples/kubernetes/autoscale.yaml", """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: policy
data:
  autoscale.conf: |
    listen = 0.0.0.0:9848
    allow-remote = true
    token-file = /etc/vramguard/token
    ceiling = 16G
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: other
spec:
  podSelector:
    matchLabels:
      app: something-else
  ingress:
    - from:
        - podSelector: {}
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: node
spec:
  selector:
    matchLabels:
      app: node
  template:
    metadata:
      labels:
        app: node
    spec:
      securityContext:
        runAsUser: 1000
      containers:
        - name: autoscale
          image: example/vramguard:1
          command: [vramguard, autoscale, --config, /etc/vramguard/autoscale.conf]
          volumeMounts:
            - name: policy
              mountPath: /etc/vramguard
      volumes:
        - name: policy
          configMap:
            name: policy
""", ["the token /etc/vramguard/token lies in a memory emptyDir (copied there from a Secret)",
      "allow-remote: a NetworkPolicy selects the pod and admits only named peers to port 9848"]),
    ("a compose file with no quota and an undeclared volume", "examples/docker/docker-compose.yml", """\
services:
  a:
    image: example/job:1
    environment:
      NVIDIA_GPU_MEMORY_LIMITS: "4 G"
    volumes:
      - reports:/reports
  b:
    image: example/job:1
    command: python3 train.py
""", ["quota '4 G' is well-formed", "service b: one quota",
      "volume reports is declared", "service b: asks for a GPU", "command is a list"]),
    ("a compose file with two quotas, a bad CDI size and a preload not mounted", "examples/compose.yaml", """\
services:
  a:
    image: example/job:1
    gpus: all
    devices: [vramguard.dev/quota=4G]
    environment:
      NVIDIA_GPU_MEMORY_LIMITS: "4G"
      LD_PRELOAD: /opt/vramguard/libvramguard.so
  b:
    image: example/job:1
    devices: [nvidia.com/gpu=0, vramguard.dev/quota=4XB]
""", ["service a: one quota", "service a: the library in LD_PRELOAD", "service b: quota '4XB' is well-formed"]),
    ("a Dockerfile with every mistake the parser knows", "examples/docker/Dockerfile", """\
ARG CUDA_VERSION=13.0.0
ARG UNUSED=1
FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu${UBUNTU} AS build
RUN make \\
 # a comment inside a continuation is fine
 && make install
FROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu24.04
COPY --from=builder /out/lib/libvramguard.so /usr/local/lib/
COPY --from=later /x /y
RUNN echo typo
RUN echo lib/libvramguard.so > /etc/ld.so.preload
ENTRYPOINT vramguard run -- python3
CMD ["python3", "train.py",]
FROM scratch AS later
""", ["$UBUNTU is an ARG declared before the first FROM", "names its stage (FROM image AS name)",
      "--from=builder names an earlier stage", "--from=later names an earlier stage",
      "every instruction is a known Dockerfile instruction", "ENTRYPOINT: exec form",
      "CMD: exec form", "every ARG before the first FROM is used", "/etc/ld.so.preload gets an absolute path"]),
    ("a Dockerfile ending inside a continued line, FROM an ARG without a default", "examples/pytorch/Dockerfile", """\
ARG BASE
FROM ${BASE} AS app
RUN apt-get update && \\
""", ["the file ends inside a continued line", "'' is an image reference or an earlier stage"]),
    ("a vramguard ENTRYPOINT without --", "examples/docker/ld.so.preload/Dockerfile", """\
FROM vramguard:latest AS app
ENTRYPOINT ["vramguard", "run", "--limit", "4G"]
""", ["`vramguard run` ends with --"]),
]


def self_test():
    r = Results()
    tmp = tempfile.mkdtemp(prefix="vg-lint-")
    try:
        for title, rel, text, expect in FIXTURES:
            case = os.path.join(tmp, str(FIXTURES.index((title, rel, text, expect))))
            os.makedirs(os.path.dirname(os.path.join(case, rel)), exist_ok=True)
            with open(os.path.join(case, rel), "w") as f:
                f.write(text)
            inner = Results(quiet=True)
            check_tree(inner, case)
            bad = [ln for ln in inner.lines if ln.startswith("not ok")
                   and not ln.startswith("not ok - found ")]   # a one-file fixture has no Dockerfile or no YAML
            for ln in bad:
                print(f"#   {ln}")
            if not expect:
                r.check(not bad, f"self-test: {title}", f"{len(bad)} checks failed")
                continue
            missing = [e for e in expect if not any(e in ln for ln in bad)]
            r.check(not missing, f"self-test: {title}: fails as expected ({len(bad)} failing checks)",
                    f"no failure mentioning {missing}")
    finally:
        shutil.rmtree(tmp)
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--self-test", action="store_true", help="check that broken fixtures fail")
    ap.add_argument("--root", default=REPO, help="the tree whose examples/ to check (default: this repository)")
    a = ap.parse_args()
    r = self_test() if a.self_test else Results()
    if not a.self_test:
        check_tree(r, os.path.abspath(a.root))
    print(f"{len(r.lines) - r.failed} passed, {r.failed} failed")
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
