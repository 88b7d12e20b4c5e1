"""ctx_overhead.py: how much device memory a PyTorch process uses outside what it allocates (CUDA context, kernels
loaded from modules, cuBLAS), for the docs. Quota 4096; the process allocates 1 GiB, then runs a matmul. NVML's
per-process figure (the driver's own accounting, incl. the context) is read for this pid; vramguard does not
interpose NVML. PASS when the figure was read: it is a measurement, not an assertion."""
import os
import subprocess
import sys

MiB = 1 << 20
GiB = 1 << 30


def process_used():
    """Device memory the driver attributes to this pid, in bytes, and where the number came from."""
    pid = os.getpid()
    try:
        import pynvml
        pynvml.nvmlInit()
        total = None
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h):
                if p.pid == pid and p.usedGpuMemory is not None:
                    total = (total or 0) + p.usedGpuMemory
        if total is not None:
            return total, "NVML"
    except Exception as e:
        print(f"note: NVML failed: {e!r}", flush=True)
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=30).stdout
        print(f"note: nvidia-smi compute apps: {out.strip()!r}", flush=True)
        mib = [int(f[1]) for f in (l.split(",") for l in out.splitlines()) if len(f) == 2 and int(f[0]) == pid]
        if mib:
            return sum(mib) * MiB, "nvidia-smi"
    except Exception as e:
        print(f"note: nvidia-smi failed: {e!r}", flush=True)
    return None, "not found (PID namespace?)"


try:
    import torch
except Exception as e:
    print(f"BAD import torch failed: {e!r}\nfigures: torch unavailable", flush=True)
    sys.exit(2)

x = torch.empty(GiB, dtype=torch.uint8, device="cuda")
x.fill_(1)
torch.cuda.synchronize()
alloc1, res1 = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
used1, src1 = process_used()

a = torch.randn(1024, 1024, device="cuda")
(a @ a).sum().item()  # loads cuBLAS and its workspace, as any real workload does
alloc2, res2 = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
used2, src2 = process_used()
free, total = torch.cuda.mem_get_info()


def m(b):
    return "n/a" if b is None else f"{b / MiB:.0f} MiB"


def outside(used, res):
    return "n/a" if used is None else f"{(used - res) / MiB:.0f} MiB"


print(f"ok 1 GiB tensor: allocated {m(alloc1)}, reserved {m(res1)}, process total ({src1}) {m(used1)}, "
      f"outside torch's reservation {outside(used1, res1)}", flush=True)
print(f"ok after a matmul: allocated {m(alloc2)}, reserved {m(res2)}, process total ({src2}) {m(used2)}, "
      f"outside {outside(used2, res2)}; quota view free {m(free)} of {m(total)}", flush=True)
if used1 is None and used2 is None:
    print("BAD per-process device memory could not be read", flush=True)
print(f"figures: 1 GiB tensor: allocated {m(alloc1)} reserved {m(res1)} process {m(used1)} (outside quota "
      f"{outside(used1, res1)}); +matmul: reserved {m(res2)} process {m(used2)} (outside {outside(used2, res2)})",
      flush=True)
sys.exit(0 if used1 is not None or used2 is not None else 1)
