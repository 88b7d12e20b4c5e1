#!/usr/bin/env python3
"""Keeps docs/install.md true to the tests (run by `make test`, section docs). One line per check, "ok - ..." or
"not ok - ...", and exit status 1 if any check failed.

  commands   every command the page shows (each line of a ```sh block, and each inline span that starts with one of
             INLINE_WORDS: `docker ...`, `vramguard ...`, `apt ...`, `python ...`) is a row of RUNS below, and every
             row's test file still holds the line that runs it (a regular expression). A command the page gains,
             or a test that stops running one, fails here: the page cannot promise what no test does.
  artifacts  the artifact names carry this build's version (config/config.h), the .deb's Depends is the one
             scripts/deb.sh computes for glibc 2.17, the Docker row's "+N MB on its base" is docs/containers.md's
             measured figure (tests/containers 60-docker.sh checks that one against the image), and every test file
             the "checked by" column names exists. The wheel's and the .deb's "about N" sizes are compared with the
             built files by the sections that build them (wheel, containers 55-deb).

  --self-test  runs the checks on broken copies of the page and passes only if each fails as expected
  --root DIR   check DIR instead of the repository
"""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PAGE = "docs/install.md"

# (the command as the page shows it, with VERSION for the version; the test that runs it; a regular expression
# that the test file must match: the line that runs the same command with the test's own names and sizes)
RUNS = [
    # pip
    ("python3 -m venv venv && venv/bin/pip install --no-index vramguard-VERSION-py3-none-manylinux2014_x86_64.whl",
     "tests/sections/wheel.sh", r'"\$PY" -m venv "\$V" .*"\$V/bin/pip" install -q --no-index "\$WHL"'),
    ("venv/bin/vramguard check", "tests/sections/wheel.sh", r'"\$\{VENV\[@\]\}" vramguard check'),
    ("venv/bin/python -m vramguard run --limit 4G -- venv/bin/python train.py", "tests/sections/wheel.sh",
     r'"\$\{VENV\[@\]\}" python -m vramguard run --limit 1G -- '),
    ("venv/bin/python -c 'import vramguard; print(vramguard.library_path())'", "tests/sections/wheel.sh",
     r"python -c 'import vramguard; print\(vramguard.library_path\(\)\)'"),
    # apt
    ("sudo apt install ./vramguard_VERSION-1_amd64.deb", "tests/containers/sections/55-deb.sh",
     r'deb_exec "cd /pkg && apt install -y \./\$deb_name'),
    ("vramguard check", "tests/containers/sections/55-deb.sh", r'deb_exec "vramguard check"'),
    ("vramguard run --limit 1G -- ./quota_demo", "tests/containers/sections/55-deb.sh",
     r'deb_exec "vramguard run --limit 1G -- /opt/vg-test/quota_demo"'),
    ("sudo apt purge vramguard", "tests/containers/sections/55-deb.sh", r'deb_exec "apt purge -y vramguard"'),
    # on a GPU machine (tests/gpu/install.sh, VG_ONLY=install)
    ("apt install", "tests/gpu/install.sh", r"apt install -y '\./\$\(basename \"\$deb\"\)'"),
    ("vramguard run --limit 4096M", "tests/gpu/install.sh", r'/usr/bin/vramguard run --limit 4096M -- '),
    ("python -m vramguard run --limit 4096M", "tests/gpu/install.sh", r'"\$PY" -m vramguard run --limit 4096M -- '),
    ("make deb", "tests/containers/sections/55-deb.sh", r'make -s BUILD="\$B" deb'),
    ("make wheel", "Makefile", r'^wheel: '),
    # Docker
    ("docker build -f examples/docker/Dockerfile -t vramguard .", "tests/containers/sections/60-docker.sh",
     r'"\$dk_bin" build --network=host "\$\{args\[@\]\}" -f "\$file" -t "\$tag" \.'),
    ("docker run --gpus all -e NVIDIA_GPU_MEMORY_LIMITS=4G vramguard python3 train.py",
     "tests/containers/sections/60-docker.sh", r'dk_run .*-e NVIDIA_GPU_MEMORY_LIMITS=2G'),
    ("docker kill --signal=USR1 CONTAINER", "tests/containers/sections/60-docker.sh",
     r'dk kill --signal=USR1 "\$c"'),
    ("docker exec CONTAINER vramguard dump 1", "tests/containers/sections/60-docker.sh",
     r'dk exec "\$c" vramguard dump 1'),
    ("vramguard limit set", "tests/containers/sections/60-docker.sh", r'"\$VG" limit set 2G --pid "\$hpid"'),
    ("docker update", "tests/containers/sections/60-docker.sh", r'not `docker update`'),
    # podman and CDI
    ("vramguard cdi --limit 4G --limit 8G --output /etc/cdi", "tests/containers/sections/20-cdi.sh",
     r'"\$VG" cdi --limit 4G --limit 0:2G,1:8G --lib "\$LIB" --output "\$priv"'),
    ("podman run --device vramguard.dev/quota=4G IMAGE python3 train.py", "tests/containers/sections/20-cdi.sh",
     r'--device vramguard.dev/quota=4G$'),
    # Kubernetes: no cluster here; podman kube play runs the DaemonSet's Pod (the same manifest)
    ("kubectl apply -f examples/kubernetes/daemonset.yaml", "tests/containers/sections/40-kube.sh",
     r'kube_play examples/kubernetes/daemonset.yaml'),
    # the Docker build's first step (examples/docker/Dockerfile), which keeps host build outputs out
    ("make clean", "examples/docker/Dockerfile", r'make clean'),
]

INLINE_WORDS = ("docker", "vramguard", "podman", "apt", "pip", "python", "python3", "kubectl", "make", "sudo")


def page_commands(text):
    """The page's commands: ```sh block lines (comments after two spaces and '#' dropped) and inline spans that
    start with a command word. Returns [(line number, command)]."""
    out, in_sh = [], False
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            in_sh = (not in_sh) and line.strip() == "```sh"
            continue
        if in_sh:
            cmd = re.sub(r"\s+#.*$", "", line).strip()
            if cmd:
                out.append((n, cmd))
            continue
        if line.startswith("| "):
            continue  # the table's "checked by" column names suites, not commands (check_artifacts reads it)
        for span in re.findall(r"`([^`]+)`", line):
            if span.split(" ", 1)[0] in INLINE_WORDS and " " in span:
                out.append((n, span))
    return out


class Results:
    def __init__(self, quiet=False):
        self.lines, self.failed, self.quiet = [], 0, quiet

    def check(self, cond, what, why=""):
        line = f"ok - {what}" if cond else f"not ok - {what}" + (f": {why}" if why else "")
        self.failed += 0 if cond else 1
        self.lines.append(line)
        if not self.quiet:
            print(line, flush=True)
        return cond


def read(root, path):
    try:
        with open(os.path.join(root, path), encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        return e


def version(root):
    text = read(root, "config/config.h")
    m = re.search(r'^#define VG_VERSION "([^"]+)"', text if isinstance(text, str) else "", re.M)
    return m.group(1) if m else None


def check_commands(r, root, text, ver):
    rows = {cmd.replace("VERSION", ver or "?"): (test, rx) for cmd, test, rx in RUNS}
    seen = set()
    for n, cmd in page_commands(text):
        seen.add(cmd)
        row = rows.get(cmd)
        if not r.check(row is not None, f"{PAGE}:{n}: `{cmd}` is run by a test",
                       "no row in tests/lint/check_install_doc.py's RUNS: make a test run it, then add the row"):
            continue
        test, rx = row
        body = read(root, test)
        found = isinstance(body, str) and re.search(rx, body, re.M)
        r.check(bool(found), f"{PAGE}:{n}: `{cmd}`: {test} runs it",
                f"{test} has no line matching /{rx}/" if isinstance(body, str) else f"{test}: {body}")
    for cmd in rows:
        r.check(cmd in seen, f"RUNS row `{cmd}` is on the page", f"{PAGE} no longer shows it: drop the row")


def check_artifacts(r, root, text, ver):
    r.check(ver is not None, "config/config.h defines VG_VERSION")
    names = re.findall(r"vramguard[-_]([0-9][0-9.]*)(?:-1_amd64\.deb|-py3-none-manylinux2014_x86_64\.whl)", text)
    r.check(bool(names), f"{PAGE} names the wheel and the .deb")
    for v in sorted(set(names)):
        r.check(v == ver, f"{PAGE}: artifact version {v} is this build's", f"config/config.h says {ver}")
    deb = read(root, "scripts/deb.sh")
    m = re.search(r"`Depends: ([^`]+)`", text)
    r.check(bool(m) and isinstance(deb, str) and "libc6 (>= 2.17)" in m.group(1),
            f"{PAGE}: the .deb's Depends is libc6 (>= 2.17), the glibc the binaries need",
            m.group(1) if m else "no `Depends: ...` on the page")
    ctr = read(root, "docs/containers.md")
    want = re.search(r"^\| `examples/docker/Dockerfile` \|.*the base \+ ([0-9.]+) MB", ctr if isinstance(ctr, str) else "",
                     re.M)
    got = re.search(r"`examples/docker/Dockerfile` \(\+([0-9.]+) MB on its base\)", text)
    r.check(bool(want and got and want.group(1) == got.group(1)),
            f"{PAGE}: the Docker image adds what docs/containers.md measured",
            f"page {got.group(1) if got else '(none)'} MB, docs/containers.md {want.group(1) if want else '(none)'} MB")
    table = "\n".join(line for line in text.splitlines() if line.startswith("| "))
    for path in sorted(set(re.findall(r"((?:tests|docs)/[\w./-]+\.(?:sh|txt|md))", table))):
        r.check(os.path.exists(os.path.join(root, path)), f"{PAGE}: the table's {path} exists")
    for short in sorted(set(re.findall(r"\b(\d\d-[a-z]+\.sh)\b", table))):
        r.check(os.path.exists(os.path.join(root, "tests/containers/sections", short)),
                f"{PAGE}: the table's containers section {short} exists")


def run(root, quiet=False, text=None):
    r = Results(quiet)
    page = text if text is not None else read(root, PAGE)
    if not r.check(isinstance(page, str), f"{PAGE} is readable", str(page)):
        return r
    ver = version(root)
    check_commands(r, root, page, ver)
    check_artifacts(r, root, page, ver)
    return r


def self_test():
    """Each mutation of the real page must make the checks fail, each with the failure it names."""
    r = Results()
    page = read(REPO, PAGE)
    ver = version(REPO)
    base = run(REPO, quiet=True)
    r.check(base.failed == 0, "the page as it is passes", "; ".join(x for x in base.lines if x.startswith("not ok")))
    mutations = [
        ("a command no test runs", page.replace("venv/bin/vramguard check", "venv/bin/vramguard check --verbose", 1),
         "is run by a test"),
        ("a command dropped from the page", page.replace("sudo apt purge vramguard", "sudo dpkg -r vramguard", 1),
         "is on the page"),
        ("an inline command no test runs", page + "\nThen `docker update --memory 4G CONTAINER`.\n",
         "is run by a test"),
        ("an old version", page.replace(f"vramguard_{ver}-1_amd64.deb", "vramguard_0.0.1-1_amd64.deb", 1),
         "artifact version"),
        ("a Docker size not measured", re.sub(r"\(\+[0-9.]+ MB on its base\)", "(+9.9 MB on its base)", page, 1),
         "adds what docs/containers.md measured"),
        ("a test file that is not there", page.replace("10-images.sh", "11-images.sh", 1), "11-images.sh exists"),
        ("a newer glibc", page.replace("libc6 (>= 2.17)", "libc6 (>= 2.34)", 1), "libc6 (>= 2.17)"),
    ]
    for what, text, expect in mutations:
        got = run(REPO, quiet=True, text=text)
        bad = [x for x in got.lines if x.startswith("not ok") and expect in x]
        r.check(text != page and bool(bad), f"self-test: {what} fails ({expect})",
                "the mutation changed nothing" if text == page else "no failure named it")
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--root", default=REPO)
    a = ap.parse_args()
    r = self_test() if a.self_test else run(a.root)
    sys.exit(1 if r.failed else 0)


if __name__ == "__main__":
    main()
