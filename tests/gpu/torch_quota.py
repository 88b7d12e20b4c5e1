"""torch_quota.py: PyTorch under a 4 GiB vramguard quota (NVIDIA_GPU_MEMORY_LIMITS=4096).

run.sh runs it once per allocator: default, expandable_segments:True (cuMemCreate pieces reached through
cudaGetDriverEntryPoint) and backend:cudaMallocAsync (cuMemAllocAsync). In each, a denial must surface as a clean
torch.OutOfMemoryError that PyTorch survives, and the caching allocator must never hold more than the quota.
"""
import os
import sys

MiB = 1 << 20
GiB = 1 << 30
QUOTA = 4 * GiB
bad = []


def check(ok, msg):
    print(("ok " if ok else "BAD ") + msg, flush=True)
    if not ok:
        bad.append(msg)


def first_line(e):
    return (str(e).strip().splitlines() or [""])[0][:220]


try:
    import torch
except Exception as e:  # a missing framework is a FAIL with a reason, not a crash of run.sh
    print(f"BAD import torch failed: {e!r}\nfigures: torch unavailable", flush=True)
    sys.exit(2)

conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "default")
if not torch.cuda.is_available():
    print(f"BAD torch.cuda.is_available() is False (torch {torch.__version__})\nfigures: no CUDA", flush=True)
    sys.exit(2)

free, total = torch.cuda.mem_get_info()
check(total == QUOTA, f"mem_get_info total {total / MiB:.0f} MiB, free {free / MiB:.0f} MiB (want total 4096)")

# One request larger than the quota: a clean OutOfMemoryError, not an "unrecognized error" RuntimeError.
oom6 = "none"
try:
    x = torch.empty(6 * GiB, dtype=torch.uint8, device="cuda")
    check(False, "torch.empty 6 GiB succeeded")
    del x
except torch.OutOfMemoryError as e:
    oom6 = first_line(e)
    check(True, f"torch.empty 6 GiB -> OutOfMemoryError: {oom6}")
except Exception as e:
    oom6 = f"{type(e).__name__}: {first_line(e)}"
    check(False, f"torch.empty 6 GiB raised {oom6} (want torch.OutOfMemoryError)")

# Fill the quota in 256 MiB steps; the cap (64 = 16 GiB) keeps an unenforced run from filling the card.
chunks, stopped = [], False
try:
    for _ in range(64):
        chunks.append(torch.empty(256 * MiB, dtype=torch.uint8, device="cuda"))
except torch.OutOfMemoryError:
    stopped = True
except Exception as e:
    check(False, f"fill loop raised {type(e).__name__}: {first_line(e)} (want torch.OutOfMemoryError)")
count, reserved = len(chunks), torch.cuda.memory_reserved()
check(stopped, f"fill loop stopped by OutOfMemoryError after {count} x 256 MiB")
check(count >= 12, f"{count} x 256 MiB fit (want >= 12: most of the 4 GiB is usable)")
check(reserved <= QUOTA, f"memory_reserved at OOM {reserved / MiB:.0f} MiB (want <= 4096)")

# After freeing, PyTorch must recover: a fresh 1 GiB tensor and a correct matmul.
del chunks
torch.cuda.empty_cache()
rel = float("nan")
try:
    y = torch.empty(GiB, dtype=torch.uint8, device="cuda")
    y.fill_(7)
    check(int(y[:: 1 << 16].sum()) == 7 * (GiB >> 16), "1 GiB tensor after empty_cache allocates and fills")
    del y
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(1024, 1024, generator=g), torch.randn(1024, 1024, generator=g)
    c = (a.cuda() @ b.cuda()).cpu()
    ref = a.double() @ b.double()
    rel = float((c.double() - ref).norm() / ref.norm())
    check(rel < 1e-3, f"1024^2 matmul on GPU vs CPU: relative error {rel:.2e}")
except Exception as e:
    check(False, f"recovery after OOM raised {type(e).__name__}: {first_line(e)}")

maxres = torch.cuda.max_memory_reserved()
check(maxres <= QUOTA, f"max_memory_reserved {maxres / MiB:.0f} MiB (want <= 4096)")
print(f"figures: conf={conf}, total {total / MiB:.0f} MiB, 6 GiB -> '{oom6[:120]}', fill {count} x 256 MiB "
      f"reserved {reserved / MiB:.0f} MiB, max reserved {maxres / MiB:.0f} MiB, matmul rel err {rel:.1e}", flush=True)
sys.exit(1 if bad else 0)
