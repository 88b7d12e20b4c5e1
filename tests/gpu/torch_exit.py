"""A short PyTorch job whose memory is still held at exit, for run.sh's torch_exit_report and report_cost checks.

It allocates, multiplies, and keeps the result in a module global until the interpreter exits, so vramguard's exit
report (an atexit handler registered at the first CUDA use, which runs while the driver is alive) shows the caching
allocator's pool as live allocations. Its last line, "done T", is the wall-clock time (time.time()) at which the
Python code finished: run.sh measures from there to the process's end (interpreter teardown plus the report).
"""
import sys
import time

try:
    import torch
except Exception as e:
    print(f"BAD import torch failed: {e!r}\nfigures: torch unavailable", flush=True)
    sys.exit(2)

t0 = time.time()
g = torch.Generator().manual_seed(0)
a = torch.randn(4096, 4096, generator=g).cuda()
keep = a @ a                                   # alive until exit
keep += 1
torch.cuda.synchronize()
check = keep[0, :8].double().sum().item()
ref = (a[0:1].cpu().double() @ a.cpu().double()[:, :8]).sum().item() + 8
ok = abs(check - ref) <= 1e-2 * max(1.0, abs(ref))
del a
print(("ok" if ok else "BAD") + f" matmul row check {check:.4f} vs CPU {ref:.4f}", flush=True)
print(f"figures: allocated {torch.cuda.memory_allocated() / 2**20:.0f} MiB, reserved "
      f"{torch.cuda.memory_reserved() / 2**20:.0f} MiB at exit, {time.time() - t0:.2f} s of work", flush=True)
print(f"done {time.time():.6f}", flush=True)
if not ok:
    sys.exit(1)
