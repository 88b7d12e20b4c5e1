"""jax_quota.py: JAX under a 4 GiB vramguard quota, with its default preallocation (75% of what the driver reports).

JAX/XLA reaches cuMemGetInfo_v2 / cuDeviceTotalMem_v2 / cuMemCreate through dlopen + dlsym; unvirtualized, it would
preallocate 75% of the whole card and ignore the quota. bytes_limit must therefore stay within 4 GiB.
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


# Without this JAX silently falls back to the CPU when the GPU backend fails, and the check would pass on the CPU.
os.environ.setdefault("JAX_PLATFORMS", "cuda")
try:
    import numpy as np
    import jax
    import jax.numpy as jnp
except Exception as e:
    print(f"BAD import jax failed: {e!r}\nfigures: jax unavailable", flush=True)
    sys.exit(2)

try:
    dev = jax.devices()[0]
except Exception as e:
    print(f"BAD jax.devices() failed: {type(e).__name__}: {str(e)[:300]}\nfigures: no GPU backend", flush=True)
    sys.exit(2)
check(dev.platform == "gpu", f"device {dev} platform {dev.platform} (jax {jax.__version__})")

rng = np.random.default_rng(0)
a = rng.standard_normal((1024, 1024), dtype=np.float32)
b = rng.standard_normal((1024, 1024), dtype=np.float32)
rel = float("nan")
try:
    c = np.asarray(jnp.dot(jnp.asarray(a), jnp.asarray(b), precision=jax.lax.Precision.HIGHEST))
    ref = a.astype(np.float64) @ b.astype(np.float64)
    rel = float(np.linalg.norm(c - ref) / np.linalg.norm(ref))
    check(rel < 1e-2, f"jnp.dot 1024^2 vs numpy: relative error {rel:.2e}")
except Exception as e:
    check(False, f"jnp.dot raised {type(e).__name__}: {str(e)[:300]}")

stats = dev.memory_stats() or {}
limit, in_use = stats.get("bytes_limit"), stats.get("bytes_in_use")
check(limit is not None and 0 < limit <= QUOTA,
      f"memory_stats bytes_limit {limit} = {(limit or 0) / MiB:.0f} MiB (want <= 4096)")
print(f"figures: bytes_limit {(limit or 0) / MiB:.0f} MiB, bytes_in_use {(in_use or 0) / MiB:.1f} MiB, "
      f"peak {stats.get('peak_bytes_in_use', 0) / MiB:.1f} MiB, dot rel err {rel:.1e}", flush=True)
sys.exit(1 if bad else 0)
