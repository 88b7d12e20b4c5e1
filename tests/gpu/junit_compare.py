"""junit_compare.py WITHOUT.xml WITH.xml: compare two pytest --junitxml runs of the same tests (for run.sh's
cupy_suite: CuPy's cuda_tests without vramguard's preload, then with it).

Prints the counts of each run and every test that passed without the preload and did not pass with it, then a
figures: line. Exit 0 when no test regressed (and the run without the preload ran tests), 1 otherwise.
"""
import sys
import xml.etree.ElementTree as ET

WATCH = "test_memory.py::TestMemoryAsyncPool::test_free_all_blocks_large_chunk"  # the pool case (CUDA-NOTES §11)


def outcomes(path):
    """{test id: (outcome, message)}; outcome passed, failed (failure or error) or skipped (incl. xfail)."""
    res = {}
    for tc in ET.parse(path).iter("testcase"):
        # classname cupy_tests.cuda_tests.test_memory.TestMemoryAsyncPool -> pytest's node id,
        # cupy_tests/cuda_tests/test_memory.py::TestMemoryAsyncPool
        parts = tc.get("classname", "").split(".")
        mod = [i for i, p in enumerate(parts) if p.startswith("test_")]
        if mod:
            k = mod[-1]
            tid = "::".join(["/".join(parts[:k] + [parts[k] + ".py"])] + parts[k + 1:] + [tc.get("name", "")])
        else:
            tid = f"{tc.get('classname', '')}::{tc.get('name', '')}"
        kind, msg = "passed", ""
        for child in tc:
            if child.tag in ("failure", "error"):
                kind, msg = "failed", (child.get("message") or child.text or "").strip()
                break
            if child.tag == "skipped":
                kind, msg = "skipped", (child.get("message") or "").strip()
        res[tid] = (kind, msg.splitlines()[0][:160] if msg else "")
    return res


def counts(res):
    k = [v[0] for v in res.values()]
    return f"{k.count('passed')} passed, {k.count('failed')} failed, {k.count('skipped')} skipped"


def main():
    try:
        base, vg = outcomes(sys.argv[1]), outcomes(sys.argv[2])
    except Exception as e:
        print(f"BAD cannot read the JUnit files: {type(e).__name__}: {e}\nfigures: no per-test outcomes", flush=True)
        return 1
    lost = sorted(t for t, (k, _) in base.items() if k == "passed" and vg.get(t, ("missing", ""))[0] != "passed")
    gained = sorted(t for t, (k, _) in vg.items() if k == "passed" and base.get(t, ("missing", ""))[0] != "passed")
    for t in lost:
        k, msg = vg.get(t, ("missing", ""))
        print(f"BAD passes without the preload, {k} with it: {t}: {msg}", flush=True)
    for t in gained:
        print(f"note: passes with the preload only: {t} (without: {base.get(t, ('missing', ''))[0]})", flush=True)
    watch = [t for t in base if t.endswith(WATCH)] or [WATCH]
    w = "; ".join(f"{t.split('::')[-1]}: {base.get(t, ('not run',))[0]} without, {vg.get(t, ('not run',))[0]} with"
                  for t in watch)
    names = ", ".join(f"{t} ({vg.get(t, ('missing', ''))[0]}: {vg.get(t, ('', ''))[1][:100]})" for t in lost)
    print(f"figures: without the preload {counts(base)}; with it {counts(vg)}; passed without and not with: "
          f"{len(lost)}{': ' + names if names else ''}; {w}", flush=True)
    if not any(k == "passed" for k, _ in base.values()):
        print("BAD no test passed without the preload", flush=True)
        return 1
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
