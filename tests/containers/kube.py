#!/usr/bin/env python3
"""Turns a manifest of examples/kubernetes into a Pod that `podman kube play` runs here (tests/containers/sections/
40-kube.sh). Only what cannot run here changes; env, volumes, mounts, securityContext and annotations stay as
written:

  - the workload's Pod template becomes a Pod named vg-kube-NAME (podman 4.3 plays no Job or DaemonSet);
  - images: the vramguard images become VG_IMAGE (the host-built library and command, the test double of
    libcuda.so.1 at the driver's path); any other image (PyTorch) becomes PLAIN_IMAGE, which has no vramguard;
  - commands: the job (python3 ..., torchrun ...) becomes /usr/local/bin/quota_demo; `vramguard run ... --` and
    shell / sleep commands keep their words with absolute paths (images made by `podman import` have no PATH);
  - a native sidecar (an init container with restartPolicy Always) is dropped: podman runs init containers to
    their end before the Pod's containers;
  - restartPolicy Always (a DaemonSet's) becomes Never: podman 4.3 restarts an Always Pod's init containers
    after they end, and the play takes 20 s;
  - hostPath paths move under --host-root, so the test writes nothing to the machine's /opt or /var/run/cdi;
  - with --cdi-edits, the CDI devices that a cdi-devices.noderesource.dev annotation names are applied the way a
    runtime would (podman kube play ignores the annotation): each device's containerEdits (env, mounts) from the
    spec file --cdi-spec, or from the interface `vramguard cdi` documents when there is no spec file.

usage: kube.py MANIFEST OUT --vg-image IMG --plain-image IMG --host-root DIR [--cdi-edits] [--cdi-spec FILE]
"""
import argparse
import os
import sys

import yaml

JOB = ["/usr/local/bin/quota_demo"]
LIB_IN_CONTAINER = "/usr/lib/vramguard/libvramguard.so"
CDI_ANNOTATION = "cdi-devices.noderesource.dev/"


def pod_template(doc):
    kind, spec = doc["kind"], doc.get("spec") or {}
    if kind == "Pod":
        return doc.get("metadata") or {}, spec
    tmpl = spec.get("template") or {}
    return tmpl.get("metadata") or {}, tmpl.get("spec") or {}


def absolute(word):
    known = {"vramguard": "/usr/local/bin/vramguard", "sh": "/bin/sh", "sleep": "/bin/sleep"}
    return known.get(word, word)


def rewrite_command(c):
    cmd, args = c.get("command"), c.get("args")
    if cmd:
        if os.path.basename(cmd[0]) == "vramguard" and len(cmd) > 1 and cmd[1] == "run" and "--" in cmd:
            c["command"] = [absolute(cmd[0])] + cmd[1:cmd.index("--") + 1] + JOB
        elif os.path.basename(cmd[0]) in ("vramguard", "sh", "sleep"):
            c["command"] = [absolute(cmd[0])] + cmd[1:]
            return
        else:
            c["command"] = JOB
        c.pop("args", None)
    elif args:                  # the image's ENTRYPOINT (vramguard run --) stays; the job is the args
        c["args"] = JOB


def cdi_devices(meta, name):
    """The CDI device names the NRI device-injector annotation gives container `name`."""
    ann = meta.get("annotations") or {}
    val = ann.get(CDI_ANNOTATION + "container." + name) or ann.get(CDI_ANNOTATION + "pod") or \
        ann.get(CDI_ANNOTATION.rstrip("/"))
    return yaml.safe_load(val) if val else []


def edits_for(device, spec, host_root):
    """(env, mounts) of a CDI device, from the spec file or from the interface of `vramguard cdi`."""
    kind, _, name = device.partition("=")
    if spec is not None:
        if spec.get("kind") != kind:
            sys.exit(f"kube.py: {device}: the spec's kind is {spec.get('kind')}")
        dev = [d for d in spec.get("devices") or [] if d.get("name") == name]
        if not dev:
            sys.exit(f"kube.py: {device}: no such device in the spec")
        env, mounts = [], []
        for edits in (spec.get("containerEdits") or {}, dev[0].get("containerEdits") or {}):
            env += edits.get("env") or []
            mounts += edits.get("mounts") or []
        return env, mounts
    return ([f"NVIDIA_GPU_MEMORY_LIMITS={name}", f"LD_PRELOAD={LIB_IN_CONTAINER}"],
            [{"hostPath": os.path.join(host_root, "opt/vramguard/lib/libvramguard.so"),
              "containerPath": LIB_IN_CONTAINER, "options": ["ro", "nosuid", "nodev", "bind"]}])


def apply_cdi(meta, spec, c, cdi, host_root):
    for device in cdi_devices(meta, c["name"]):
        env, mounts = edits_for(device, cdi, host_root)
        have = {e["name"]: e for e in c.setdefault("env", [])}
        for kv in env:
            k, _, v = kv.partition("=")
            if k in have:
                have[k]["value"] = v
            else:
                c["env"].append({"name": k, "value": v})
        for i, m in enumerate(mounts):
            vname = f"cdi-{c['name']}-{i}"
            spec.setdefault("volumes", []).append({"name": vname, "hostPath": {"path": m["hostPath"]}})
            c.setdefault("volumeMounts", []).append({"name": vname, "mountPath": m["containerPath"],
                                                     "readOnly": "ro" in (m.get("options") or [])})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest")
    ap.add_argument("out")
    ap.add_argument("--vg-image", required=True)
    ap.add_argument("--plain-image", required=True)
    ap.add_argument("--host-root", required=True)
    ap.add_argument("--cdi-edits", action="store_true")
    ap.add_argument("--cdi-spec")
    a = ap.parse_args()
    with open(a.manifest) as f:
        docs = [d for d in yaml.safe_load_all(f) if isinstance(d, dict) and d.get("kind") in
                ("Pod", "Job", "DaemonSet", "Deployment", "StatefulSet")]
    cdi = None
    if a.cdi_spec:
        with open(a.cdi_spec) as f:
            cdi = yaml.safe_load(f)
    meta, spec = pod_template(docs[0])
    name = "vg-kube-" + (docs[0].get("metadata") or {}).get("name", "pod")
    if spec.get("restartPolicy", "Always") == "Always":
        spec["restartPolicy"] = "Never"
    spec["initContainers"] = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") != "Always"]
    for c in spec["initContainers"] + spec.get("containers") or []:
        c["image"] = a.vg_image if "vramguard" in c["image"] else a.plain_image
        rewrite_command(c)
        if a.cdi_edits:
            apply_cdi(meta, spec, c, cdi, a.host_root)
    for v in spec.get("volumes") or []:
        if "hostPath" in v:
            v["hostPath"]["path"] = os.path.join(a.host_root, v["hostPath"]["path"].lstrip("/")) \
                if not v["hostPath"]["path"].startswith(a.host_root) else v["hostPath"]["path"]
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "labels": meta.get("labels") or {},
                        "annotations": meta.get("annotations") or {}},
           "spec": spec}
    with open(a.out, "w") as f:
        yaml.safe_dump(pod, f, sort_keys=False)
    print(name)


if __name__ == "__main__":
    main()
