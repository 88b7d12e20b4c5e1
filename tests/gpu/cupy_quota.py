"""cupy_quota.py: CuPy under a 4 GiB vramguard quota. CuPy's cudart reaches the driver through cuGetProcAddress;
an over-quota request must raise cupy's OutOfMemoryError, and the pool must allocate again afterwards."""
import sys

MiB = 1 << 20
GiB = 1 << 30
QUOTA = 4 * GiB
bad = []


def check(ok, msg):
    print(("ok " if ok else "BAD ") + msg, flush=True)
    if not ok:
        bad.append(msg)


try:
    import cupy as cp
except Exception as e:
    print(f"BAD import cupy failed: {e!r}\nfigures: cupy unavailable", flush=True)
    sys.exit(2)

free, total = cp.cuda.runtime.memGetInfo()
check(total == QUOTA, f"memGetInfo total {total / MiB:.0f} MiB, free {free / MiB:.0f} MiB (want total 4096)")

msg = "none"
try:
    x = cp.empty(6 * GiB, dtype=cp.uint8)
    check(False, "cupy.empty 6 GiB succeeded")
    del x
except cp.cuda.memory.OutOfMemoryError as e:
    msg = str(e).splitlines()[0][:200]
    check(True, f"cupy.empty 6 GiB -> OutOfMemoryError: {msg}")
except Exception as e:
    msg = f"{type(e).__name__}: {str(e)[:200]}"
    check(False, f"cupy.empty 6 GiB raised {msg} (want cupy.cuda.memory.OutOfMemoryError)")

try:
    y = cp.empty(GiB, dtype=cp.uint8)
    y.fill(3)
    s = int(y[:: 1 << 16].sum())
    check(s == 3 * (GiB >> 16), f"1 GiB after the OOM allocates and fills (sample sum {s})")
    free2, _ = cp.cuda.runtime.memGetInfo()
    pool = cp.get_default_memory_pool().total_bytes()
    check(free2 <= QUOTA - GiB, f"with 1 GiB held, memGetInfo free {free2 / MiB:.0f} MiB (pool {pool / MiB:.0f} MiB)")
except Exception as e:
    free2 = 0
    check(False, f"1 GiB after the OOM raised {type(e).__name__}: {str(e)[:200]}")

print(f"figures: total {total / MiB:.0f} MiB, 6 GiB -> '{msg[:120]}', free with 1 GiB held {free2 / MiB:.0f} MiB",
      flush=True)
sys.exit(1 if bad else 0)
