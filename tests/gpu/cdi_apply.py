"""cdi_apply.py: run a command with a CDI device's container edits applied by hand, where no CDI runtime is installed.

  cdi_apply.py SPEC DEVICE -- COMMAND [ARGS...]

SPEC is the spec `vramguard cdi` wrote (YAML, read with PyYAML) or the same as JSON (run.sh converts it where the
job's python has no PyYAML). The edits a runtime would apply for kind=DEVICE: the spec's own containerEdits, then
the device's (a later value of a variable wins, as in a runtime). A container sees each mount's hostPath at its
containerPath; here there is no container, so a variable's colon-separated entries naming a containerPath are
replaced by the hostPath (LD_PRELOAD=/usr/lib/vramguard/libvramguard.so becomes the host's library). Every hostPath
must exist. Prints "cdi: VAR=value" for each variable it sets and "cdi: mount HOST -> CONTAINER", then execs COMMAND.
Exit 2 with a "BAD ..." line and a figures: line when the spec is unusable.
"""
import json
import os
import sys


def fail(msg):
    print(f"BAD {msg}\nfigures: cdi spec unusable", flush=True)
    sys.exit(2)


def main():
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        fail("usage: cdi_apply.py SPEC DEVICE -- COMMAND [ARGS...]")
    path, device, cmd = sys.argv[1], sys.argv[2], sys.argv[4:]
    with open(path) as f:
        if path.endswith(".json"):
            spec = json.load(f)
        else:
            import yaml
            spec = yaml.safe_load(f)
    kind = spec.get("kind")
    devs = [d for d in spec.get("devices", []) if d.get("name") == device]
    if len(devs) != 1:
        fail(f"{path}: {len(devs)} devices named {device!r} (kind {kind})")
    edits = [spec.get("containerEdits") or {}, devs[0].get("containerEdits") or {}]
    mounts = [m for e in edits for m in e.get("mounts", [])]
    to_host = {}
    for m in mounts:
        if not os.path.exists(m["hostPath"]):
            fail(f"mount's hostPath {m['hostPath']} does not exist")
        to_host[m["containerPath"]] = m["hostPath"]
        print(f"cdi: mount {m['hostPath']} -> {m['containerPath']} ({','.join(m.get('options', []))})", flush=True)
    env = dict(os.environ)
    for e in edits:
        for kv in e.get("env", []):
            name, _, value = kv.partition("=")
            value = ":".join(to_host.get(p, p) for p in value.split(":"))
            env[name] = value
            print(f"cdi: {name}={value}", flush=True)
    print(f"cdi: {kind}={device}: exec {' '.join(cmd)}", flush=True)
    os.execvpe(cmd[0], cmd, env)


main()
