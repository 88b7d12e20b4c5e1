"""Python frames in a real framework's call sites (tests/gpu/pysites.sh): leak_here() leaks device memory through
PyTorch or CuPy, then the job asks for a report with its report signal while the memory is still held (at exit the
interpreter's teardown frees the arrays before the exit report: caching off in PyTorch, no pool in CuPy). The
signal report (checked by tests/lib/report_check.py pyleak) must name leak_here, this file and the line marked
below. Prints "skip: ..." and exits 3 when the framework is missing.
Usage: python3 pysites.py torch|cupy   (VRAMGUARD_REPORT set to a file template with %p, %n and %r)"""
import glob
import os
import signal
import sys
import time

MIB = 1 << 20
kept = []


def leak_here(xp, n):
    for _ in range(n):
        if xp.__name__ == "torch":
            kept.append(xp.empty(64 * MIB, dtype=xp.uint8, device="cuda"))  # leak line: torch
        else:
            kept.append(xp.empty(64 * MIB, dtype=xp.uint8))  # leak line: cupy


def main():
    which = sys.argv[1]
    try:
        if which == "torch":
            import torch as xp
            # The caching allocator reaches the driver once per segment: cudaMalloc per block, not cached.
            assert os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") == "1"
        else:
            import cupy as xp
            xp.cuda.set_allocator(None)     # no memory pool: one driver allocation per array
    except ImportError as e:
        print(f"skip: {which} not installed ({e})")
        sys.exit(3)
    leak_here(xp, 3)
    print(f"ok {which}: leaked 3 x 64 MiB from leak_here")
    pattern = os.environ.get("VRAMGUARD_REPORT", "").replace("%p", str(os.getpid())).replace("%n", "*") \
        .replace("%r", "signal")
    os.kill(os.getpid(), signal.SIGUSR1)
    t0 = time.time()
    while not glob.glob(pattern) and time.time() - t0 < 20:
        time.sleep(0.05)
    got = glob.glob(pattern)
    print(("ok" if got else "BAD") + f" signal report {'written' if got else 'not written'} after "
          f"{time.time() - t0:.2f} s")
    print(f"figures: {len(kept)} tensors kept; signal report in {time.time() - t0:.2f} s")
    if not got:
        sys.exit(1)


if __name__ == "__main__":
    main()
