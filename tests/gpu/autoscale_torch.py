"""A PyTorch job for tests/gpu/autoscale.sh: its "batch" grows in 128 MiB tensors to 85 % of its quota (what
cudaMemGetInfo reports under vramguard), prints "high PID", and trains on at that size until cudaMemGetInfo's total
grows (the receiver has raised its quota: the job sees it as a framework that sizes itself would) or GO_FILE appears,
90 s at most; then it grows on to GOAL_MIB without an OutOfMemoryError and without a restart.

  autoscale_torch.py GO_FILE GOAL_MIB

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
STEP = 128


def main():
    go, goal = sys.argv[1], int(sys.argv[2])
    a = torch.randn(1024, 1024, device="cuda")
    (a @ a).sum().item()
    held = []
    free, total0 = torch.cuda.mem_get_info()
    try:
        while (total0 - torch.cuda.mem_get_info()[0]) < 0.85 * total0:
            held.append(torch.empty(STEP * MiB, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError as e:
        print(f"BAD refused before 85 % of the quota: {str(e).splitlines()[0][:200]}", flush=True)
        return 1
    used0 = total0 - torch.cuda.mem_get_info()[0]
    print(f"high {os.getpid()} used={used0 // MiB} total={total0 // MiB}", flush=True)
    t = time.monotonic()
    steps = 0
    while not os.path.exists(go) and time.monotonic() - t < 90:
        (a @ a).sum().item()    # a training step at the size it has
        steps += 1
        if torch.cuda.mem_get_info()[1] > total0:
            break
        time.sleep(0.1)
    waited = time.monotonic() - t
    try:
        while len(held) * STEP < goal:
            held.append(torch.empty(STEP * MiB, dtype=torch.uint8, device="cuda"))
            held[-1].fill_(1)
    except torch.OutOfMemoryError as e:
        print(f"BAD OutOfMemoryError at {len(held) * STEP} MiB of {goal}: {str(e).splitlines()[0][:200]}", flush=True)
        return 1
    torch.cuda.synchronize()
    total1 = torch.cuda.mem_get_info()[1]
    print(f"ok grew from {len(held) and used0 // MiB} MiB (85 % of {total0 // MiB}) to {len(held) * STEP} MiB of "
          f"tensors without OutOfMemoryError or a restart; cudaMemGetInfo's total now {total1 // MiB} MiB", flush=True)
    print(f"figures: quota_before_mib={total0 // MiB} high_mib={used0 // MiB} waited_s={waited:.1f} steps={steps} "
          f"tensors_mib={len(held) * STEP} quota_after_mib={total1 // MiB}", flush=True)
    return 0


sys.exit(main())
