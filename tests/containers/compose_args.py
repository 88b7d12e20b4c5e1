#!/usr/bin/env python3
"""A Compose file's service settings as `podman run` options, for the container tests (no compose engine here).
Standard library and python3-yaml; run from the repository root.

  compose_args.py FILE                      the services' names, one a line, in the file's order
  compose_args.py FILE SERVICE PREFIX       that service's options, one a line: --hostname, --env, --volume (a
                                            named volume becomes PREFIX + the project name + _ + its name, the way
                                            Compose names it, so a test's volumes do not collide with anyone's)
  compose_args.py FILE --unrun              the settings this does not turn into options, one a line, each with
                                            why (the test runs its own image and command; no GPU, no engine)

Only what the examples use is understood: a mapping or a list for environment, "name:path" or "dir:path"
volumes; anything else is an error (exit 1), so a new setting in the file is noticed, not silently dropped.
"""
import sys

import yaml

# Settings the test replaces or cannot have, with the reason the notes give.
UNRUN = {
    "image": "the test runs the image it built (the file names vramguard-pytorch, whose Python job needs a GPU)",
    "command": "the test runs a CUDA test program against the test double instead of the Python job",
    "deploy": "no GPU and no compose engine: the test double of libcuda.so.1 is mounted instead of a device "
              "reservation",
}
RUN = {"hostname", "environment", "volumes"}


def fail(msg):
    print(f"compose_args.py: {msg}", file=sys.stderr)
    sys.exit(1)


def service_options(doc, name, prefix):
    svc = doc["services"].get(name)
    if svc is None:
        fail(f"no service {name!r}")
    unknown = sorted(set(svc) - RUN - set(UNRUN))
    if unknown:
        fail(f"service {name!r}: settings not understood: {unknown}")
    opts = []
    if "hostname" in svc:
        opts.append(f"--hostname={svc['hostname']}")
    env = svc.get("environment") or {}
    items = env.items() if isinstance(env, dict) else (e.partition("=")[::2] for e in env)
    for k, v in items:
        opts.append(f"--env={k}={v}")
    project = doc.get("name", "")
    for vol in svc.get("volumes") or []:
        if not isinstance(vol, str) or vol.count(":") not in (1, 2):
            fail(f"service {name!r}: volume {vol!r} is not SOURCE:PATH[:MODE]")
        src, rest = vol.split(":", 1)
        if not src.startswith(("/", ".")):
            if src not in (doc.get("volumes") or {}):
                fail(f"service {name!r}: volume {src!r} is not declared under volumes:")
            src = f"{prefix}{project}_{src}"
        opts.append(f"--volume={src}:{rest}")
    return opts


def main(argv):
    if len(argv) not in (2, 3, 4) or (len(argv) == 3 and argv[2] != "--unrun"):
        fail("usage: compose_args.py FILE [SERVICE PREFIX | --unrun]")
    with open(argv[1]) as f:
        doc = yaml.safe_load(f)
    if len(argv) == 2:
        print("\n".join(doc["services"]))
    elif len(argv) == 3:
        for name, svc in doc["services"].items():
            for key in sorted(set(svc) & set(UNRUN)):
                print(f"{name}.{key}: {UNRUN[key]}")
    else:
        print("\n".join(service_options(doc, argv[2], argv[3])))


if __name__ == "__main__":
    main(sys.argv)
