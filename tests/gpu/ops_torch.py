"""PyTorch jobs for tests/gpu/ops.sh (the operations checks: denial and threshold reports, the exporter).

  ops_torch.py denial             fill 256 MiB tensors from fill_until_oom() until torch.OutOfMemoryError, hold 2 s
                                  (the reporter thread writes the denial report meanwhile), free, allocate again
  ops_torch.py threshold          grow in 128 MiB steps to 85 % of the total cudaMemGetInfo reports (the quota),
                                  crossing VRAMGUARD_WARN_AT=80% once, then hover: 4 times free two steps (and
                                  empty the cache) and take them again, never below 90 % of the line
  ops_torch.py hold GO_FILE       hold 1 GiB, be refused one 8 GiB tensor, print "ready PID", wait for GO_FILE (60 s)

Lines: "ok ..." / "BAD ..." and a last "figures: ..." line (tests/gpu/run.sh's program protocol). Exit 0 unless BAD.
"""
import os
import sys
import time

try:
    import torch
except Exception as e:
    print(f"BAD import torch failed: {e!r}\nfigures: torch unavailable", flush=True)
    sys.exit(2)

MiB = 1 << 20
bad = []


def used_total():
    free, total = torch.cuda.mem_get_info()
    return total - free, total


def warm_up():
    a = torch.randn(1024, 1024, device="cuda")
    (a @ a).sum().item()


def fill_until_oom(chunk_mib, held):
    """Allocate chunk_mib tensors into held until the quota refuses one; the refused allocation's call site is this
    function's, through PyTorch's caching allocator. Returns the error's first line, or None if none came."""
    for _ in range(4096):
        try:
            held.append(torch.empty(chunk_mib * MiB, dtype=torch.uint8, device="cuda"))
        except torch.OutOfMemoryError as e:
            return str(e).splitlines()[0][:120]
    return None


def denial():
    warm_up()
    held = []
    err = fill_until_oom(256, held)
    if err is None:
        bad.append("no torch.OutOfMemoryError after 4096 x 256 MiB")
    else:
        print(f"ok torch.OutOfMemoryError after {len(held)} x 256 MiB", flush=True)
    time.sleep(2.0)
    n = len(held)
    held.clear()
    torch.cuda.empty_cache()
    try:
        again = torch.empty(256 * MiB, dtype=torch.uint8, device="cuda")
        del again
        print("ok 256 MiB allocated again after freeing", flush=True)
    except torch.OutOfMemoryError as e:
        bad.append(f"256 MiB refused after freeing: {str(e)[:100]}")
    print(f"figures: held {n} x 256 MiB = {n * 256} MiB at the refusal; error '{err}'", flush=True)


def threshold():
    warm_up()
    held = []
    used, total = used_total()
    start = used
    line = 0.80 * total
    steps = 0
    while used < 0.85 * total and steps < 1000:
        held.append(torch.empty(128 * MiB, dtype=torch.uint8, device="cuda"))
        steps += 1
        used, _ = used_total()
    top = used
    low = []
    for _ in range(4):
        del held[-2:]
        torch.cuda.empty_cache()
        time.sleep(0.3)
        u, _ = used_total()
        low.append(u)
        if u < 0.9 * line:
            bad.append(f"hovering went to {u / MiB:.0f} MiB, below 90 % of the line ({0.9 * line / MiB:.0f} MiB)")
        held.append(torch.empty(128 * MiB, dtype=torch.uint8, device="cuda"))
        held.append(torch.empty(128 * MiB, dtype=torch.uint8, device="cuda"))
        time.sleep(0.3)
    time.sleep(1.5)
    print(f"figures: total {total / MiB:.0f} MiB, line {line / MiB:.0f} MiB (80 %); used {start / MiB:.0f} MiB "
          f"after warm-up, {top / MiB:.0f} MiB after {steps} x 128 MiB; hovering down to "
          f"{', '.join(f'{u / MiB:.0f}' for u in low)} MiB and back 4 times", flush=True)


def hold(go):
    warm_up()
    keep = torch.empty(1024 * MiB, dtype=torch.uint8, device="cuda")
    try:
        torch.empty(8192 * MiB, dtype=torch.uint8, device="cuda")
        bad.append("an 8 GiB tensor was allowed under the 4 GiB quota")
    except torch.OutOfMemoryError:
        print("ok 8 GiB refused", flush=True)
    used, total = used_total()
    print(f"ready {os.getpid()}", flush=True)
    t0 = time.time()
    while not os.path.exists(go) and time.time() - t0 < 60:
        time.sleep(0.1)
    print(f"figures: holding {keep.numel() / MiB:.0f} MiB; cudaMemGetInfo used {used / MiB:.0f} of "
          f"{total / MiB:.0f} MiB; waited {time.time() - t0:.1f} s", flush=True)


mode = sys.argv[1] if len(sys.argv) > 1 else ""
if mode == "denial":
    denial()
elif mode == "threshold":
    threshold()
elif mode == "hold" and len(sys.argv) == 3:
    hold(sys.argv[2])
else:
    print(f"BAD usage: {sys.argv[0]} denial|threshold|hold GO_FILE\nfigures: none", flush=True)
    sys.exit(2)
for b in bad:
    print(f"BAD {b}", flush=True)
sys.exit(1 if bad else 0)
