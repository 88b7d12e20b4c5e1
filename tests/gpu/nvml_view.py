"""nvml_view.py: NVML's view of GPU memory inside a job under vramguard's quota (--quota-mib, NVIDIA_GPU_MEMORY_LIMITS).

Monitoring code and schedulers inside a job read NVML, not cuMemGetInfo: under the preload nvmlDeviceGetMemoryInfo
(and _v2) must report the quota as the card's total, as cudaMemGetInfo does, with used <= total. NVML is read through
ctypes (dlopen of libnvidia-ml.so.1, then dlsym on that handle: the route nvidia-smi and pynvml take) and through
pynvml (nvidia-ml-py) when it is installed; first before any CUDA use (as in nvidia-smi), then with a 1 GiB PyTorch
tensor held (skipped, with a note, if torch is missing), where torch.cuda.mem_get_info() must agree.

Prints ok/BAD lines and a figures: line; exit 0 when all is ok, 1 when something is BAD, 3 after "skip: REASON" when
NVML cannot be loaded here.
"""
import argparse
import ctypes
import sys

MiB = 1 << 20
GiB = 1 << 30
bad = []


def check(ok, msg):
    print(("ok " if ok else "BAD ") + msg, flush=True)
    if not ok:
        bad.append(msg)


class Memory(ctypes.Structure):  # nvmlMemory_t
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class MemoryV2(ctypes.Structure):  # nvmlMemory_v2_t
    _fields_ = [("version", ctypes.c_uint), ("total", ctypes.c_ulonglong), ("reserved", ctypes.c_ulonglong),
                ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


MEMORY_V2 = ctypes.sizeof(MemoryV2) | (2 << 24)  # NVML_STRUCT_VERSION(Memory, 2) = 0x02000028

ap = argparse.ArgumentParser()
ap.add_argument("--quota-mib", type=int, required=True)
quota = ap.parse_args().quota_mib

try:
    nvml = ctypes.CDLL("libnvidia-ml.so.1")
except OSError as e:
    print(f"skip: libnvidia-ml.so.1 cannot be loaded: {e}", flush=True)
    sys.exit(3)
rc = nvml.nvmlInit_v2()
if rc != 0:
    print(f"BAD nvmlInit_v2 -> {rc}\nfigures: NVML did not initialize", flush=True)
    sys.exit(1)
count = ctypes.c_uint(0)
rc = nvml.nvmlDeviceGetCount_v2(ctypes.byref(count))
check(rc == 0 and count.value > 0, f"nvmlDeviceGetCount_v2 -> rc {rc}, {count.value} GPU(s)")
handles = []
for i in range(count.value):
    h = ctypes.c_void_p()
    check(nvml.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(h)) == 0, f"nvmlDeviceGetHandleByIndex_v2({i})")
    handles.append(h)
has_v2 = hasattr(nvml, "nvmlDeviceGetMemoryInfo_v2")  # a dlsym on the handle, like any NVML symbol

try:
    import pynvml  # nvidia-ml-py
    pynvml.nvmlInit()
except Exception as e:  # not installed here: ctypes alone covers the route
    print(f"note: pynvml unavailable ({e!r}): NVML through ctypes only", flush=True)
    pynvml = None


def read(when, min_used_mib=0):
    """Every route's (total, used, free) per device, checked; returns a short text for the figures."""
    views = []
    for i, h in enumerate(handles):
        m = Memory()
        rc = nvml.nvmlDeviceGetMemoryInfo(h, ctypes.byref(m))
        views.append((f"GPU {i} nvmlDeviceGetMemoryInfo", rc, m.total, m.used, m.free))
        if has_v2:
            m2 = MemoryV2(version=MEMORY_V2)
            rc = nvml.nvmlDeviceGetMemoryInfo_v2(h, ctypes.byref(m2))
            views.append((f"GPU {i} nvmlDeviceGetMemoryInfo_v2", rc, m2.total, m2.used, m2.free))
        if pynvml is not None:
            try:
                ph = pynvml.nvmlDeviceGetHandleByIndex(i)
                p = pynvml.nvmlDeviceGetMemoryInfo(ph)
                views.append((f"GPU {i} pynvml.nvmlDeviceGetMemoryInfo", 0, p.total, p.used, p.free))
            except Exception as e:
                check(False, f"{when}: pynvml on GPU {i} raised {type(e).__name__}: {e}")
                continue
            try:  # nvidia-ml-py's _v2 form, where this version has it
                p = pynvml.nvmlDeviceGetMemoryInfo(ph, version=pynvml.nvmlMemory_v2)
                views.append((f"GPU {i} pynvml.nvmlDeviceGetMemoryInfo(version=v2)", 0, p.total, p.used, p.free))
            except (AttributeError, TypeError) as e:
                print(f"note: this pynvml has no nvmlDeviceGetMemoryInfo(version=...) ({e!r})", flush=True)
            except Exception as e:
                if getattr(e, "value", None) == 25:  # NVML_ERROR_ARGUMENT_VERSION_MISMATCH: some nvidia-ml-py
                    # releases never set the struct's version field; ctypes above has already called _v2 correctly
                    print(f"note: this pynvml's _v2 call passes no struct version ({e}): skipped", flush=True)
                else:
                    check(False, f"{when}: pynvml _v2 on GPU {i} raised {type(e).__name__}: {e}")
    for name, rc, total, used, free in views:
        t, u, f = total // MiB, used // MiB, free // MiB
        check(rc == 0 and t == quota and u <= t and f <= t and u >= min_used_mib,
              f"{when}: {name} -> rc {rc}, total {t} MiB, used {u}, free {f} (want total {quota}, used <= total"
              f"{f', used >= {min_used_mib}' if min_used_mib else ''})")
    # the figures quote GPU 0's views: one per route
    return ", ".join(f"{n.split(' ', 2)[2]} {t // MiB}/{u // MiB}" for n, _, t, u, _ in views if n.startswith("GPU 0 "))


before = read("before any CUDA use")
torch_text = "torch n/a"
try:
    import torch
    have_torch = torch.cuda.is_available()
except Exception as e:
    print(f"note: torch unavailable ({e!r}): NVML read before CUDA use only", flush=True)
    have_torch = False
if have_torch:
    x = torch.ones(GiB, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    check(total // MiB == quota, f"torch.cuda.mem_get_info total {total // MiB} MiB, free {free // MiB} (want total "
          f"{quota})")
    torch_text = f"torch mem_get_info total {total // MiB} MiB free {free // MiB} MiB"
    held = read("with a 1 GiB tensor held", min_used_mib=1024)
else:
    held = "n/a (no torch)"
print(f"figures: NVML total/used MiB before CUDA: {before}; with 1 GiB held: {held}; {torch_text}; pynvml "
      f"{'used' if pynvml else 'not installed'}", flush=True)
sys.exit(1 if bad else 0)
