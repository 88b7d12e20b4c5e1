"""ddp_compute.py PORT STEPS: data-parallel training over NCCL on GPUs 0 and 1 (one rank each, started here with
multiprocessing's spawn, so that each rank is a new process with this one's environment: LD_PRELOAD and
VRAMGUARD_COMPUTE_LIMIT reach both). For tests/gpu/compute.sh (issue 28: no deadlock or hang in DDP over NCCL with
caps on both ranks): a compute share holds a rank's launches, never NCCL's kernels, so a collective that one rank
has entered is never held back on the other.

Each rank: a 2-layer 4096-wide MLP under DistributedDataParallel (its gradients all-reduced by NCCL every step), a
batch of its own, SGD; 5 warm-up steps, then STEPS steps, each synchronized (a fixed count: both ranks must make
the same collectives in the same order). Then an explicit all_reduce of
rank + 1 (must give 3 everywhere) and a checksum of the parameters (must be equal on both ranks: DDP keeps them in
step). Prints one line:
  ddp ok steps_per_s S0 S1 allreduce 3.0 3.0 checksums C0 C1 preload P0 P1
or "ddp fail REASON" (exit 1), or "skip REASON" (exit 3) with fewer than 2 GPUs or no torch.
"""
import multiprocessing as mp
import os
import sys
import time


def rank_main(rank, port, steps, q):
    try:
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        torch.cuda.set_device(rank)
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 4096)).cuda()
        ddp = DDP(model, device_ids=[rank])
        opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
        g = torch.Generator(device="cuda").manual_seed(rank + 1)
        x = torch.randn(512, 4096, device="cuda", generator=g)

        def step():
            opt.zero_grad(set_to_none=True)
            ddp(x).square().mean().backward()
            opt.step()
            torch.cuda.synchronize()

        for _ in range(5):
            step()
        dist.barrier()
        t0 = time.monotonic()
        for _ in range(steps):
            step()
        rate = steps / (time.monotonic() - t0)
        t = torch.full((1 << 20,), float(rank + 1), device="cuda")
        dist.all_reduce(t)
        total = float(t[0].item()) if bool((t == t[0]).all()) else float("nan")
        checksum = float(sum(p.double().sum().item() for p in model.parameters()))
        with open("/proc/self/maps") as f:
            preload = int("libvramguard" in f.read())
        dist.destroy_process_group()
        q.put((rank, "ok", rate, total, checksum, preload))
    except Exception as e:  # one line for the parent
        q.put((rank, "fail", f"{type(e).__name__}: {e}"[:300]))


def main():
    port, steps = int(sys.argv[1]), int(sys.argv[2])
    try:
        import torch
    except Exception as e:
        print(f"skip torch not importable ({type(e).__name__})")
        return 3
    if torch.cuda.device_count() < 2:
        print(f"skip {torch.cuda.device_count()} GPU(s) visible: DDP over NCCL needs 2")
        return 3
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=rank_main, args=(r, port, steps, q)) for r in range(2)]
    for p in procs:
        p.start()
    got = {}
    for _ in range(2):
        try:
            item = q.get(timeout=100)
        except Exception:
            print("ddp fail a rank gave no answer within the time limit (a hang?)", flush=True)
            for p in procs:
                p.kill()
            return 1
        got[item[0]] = item
    for p in procs:
        p.join(30)
    bad = [f"rank {r}: {it[2]}" for r, it in sorted(got.items()) if it[1] != "ok"]
    if bad:
        print("ddp fail " + "; ".join(bad))
        return 1
    a, b = got[0], got[1]
    print(f"ddp ok steps_per_s {a[2]:.2f} {b[2]:.2f} allreduce {a[3]} {b[3]} checksums {a[4]:.6f} {b[4]:.6f} "
          f"preload {a[5]} {b[5]}", flush=True)
    return 0 if a[3] == b[3] == 3.0 and a[4] == b[4] else 1


if __name__ == "__main__":
    os.environ.setdefault("NCCL_DEBUG", "WARN")
    sys.exit(main())
