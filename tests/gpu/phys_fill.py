"""phys_fill.py: fill the GPU from one framework until the framework raises its out-of-memory error, hold the memory,
and see what the GPU really holds for this process (nvidia-smi --query-compute-apps, run without the preload).

  phys_fill.py torch|cupy|cupy-async|jax [--quota-mib N] [--warm WARM START] [--hold READY GO] [--cap-mib N]

With vramguard counting device memory (the default), the quota covers all the GPU holds for the process: its
allocations, what stream-ordered pools keep, and the driver's own memory (context, modules, kernels loaded lazily).
So the figure nvidia-smi shows for a job filled to its quota must not exceed the quota.

PyTorch's allocator is chosen by PYTORCH_CUDA_ALLOC_CONF and JAX's preallocation by XLA_PYTHON_CLIENT_PREALLOCATE;
cupy-async is CuPy's MemoryAsyncPool (cudaMallocAsync, a pool that keeps freed memory). Steps: warm up like a real job
(a matmul: cuBLAS loaded; JAX: a jitted op), fill in chunks of 256 MiB, then 64, 16 and 2 MiB, each size until the
framework's OOM error (big chunks first keep the fill fast), hold, measure, free everything, allocate again.

Without --hold the script measures itself: nvidia-smi's line for its pid must be <= --quota-mib. With --hold READY
GO it creates READY once it holds, waits for GO and leaves the measuring to its caller (processes of a shared region,
or one in its own PID namespace, whose pid there is not the one nvidia-smi lists). With --warm WARM START it creates
WARM once warmed up and waits for START before filling, so that several processes fill against warm neighbours.

Prints "ready pid=P", "holding: filled N MiB; ..." and ok/BAD lines, then a figures: line. Exit 0 when all is ok,
1 when something is BAD, 3 after a line "skip: REASON" when the framework or nvidia-smi is not on this machine.
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

MiB = 1 << 20
CHUNKS_MIB = (256, 64, 16, 2)
T0 = time.time()
bad = []


def check(ok, msg):
    print(("ok " if ok else "BAD ") + msg, flush=True)
    if not ok:
        bad.append(msg)


def skip(reason):
    print(f"skip: {reason}", flush=True)
    sys.exit(3)


def first_line(e):
    return (str(e).strip().splitlines() or [""])[0][:200]


def touch(path):
    open(path, "w").close()


def wait_for(path, seconds=100):
    end = time.time() + seconds
    while not os.path.exists(path):
        if time.time() > end:
            check(False, f"{path} never appeared")
            return False
        time.sleep(0.05)
    return True


class Torch:
    def __init__(self):
        try:
            import torch
        except Exception as e:
            skip(f"import torch failed: {e!r}")
        if not torch.cuda.is_available():
            skip(f"torch.cuda.is_available() is False (torch {torch.__version__})")
        self.t = torch
        self.label = "torch " + os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "default allocator")
        self.oom_name = "torch.OutOfMemoryError"

    def warm(self):
        a = self.t.randn(2048, 2048, device="cuda")
        float((a @ a).sum())  # cuBLAS loaded and its workspace taken, as in any real job

    def alloc(self, n):
        return self.t.empty(n, dtype=self.t.uint8, device="cuda")

    def is_oom(self, e):
        return isinstance(e, self.t.OutOfMemoryError)

    def sync(self):
        self.t.cuda.synchronize()

    def held(self):
        c = self.t.cuda
        return f"memory_reserved {c.memory_reserved() // MiB} MiB, memory_allocated {c.memory_allocated() // MiB} MiB"

    def total(self):
        return f"mem_get_info total {self.t.cuda.mem_get_info()[1] // MiB} MiB"

    def release(self, chunks):
        chunks.clear()
        self.sync()
        self.t.cuda.empty_cache()

    def use(self, x):
        x.fill_(1)
        return int(x[-1].item()) == 1


class Cupy:
    def __init__(self, use_async):
        try:
            import cupy as cp
        except Exception as e:
            skip(f"import cupy failed: {e!r}")
        self.cp = cp
        if use_async:
            # cudaMallocAsync through the device's pool; CuPy sets its release threshold to the maximum, so freed
            # memory stays in the pool (reserved on the GPU) until free_all_blocks() trims it
            self.pool = cp.cuda.MemoryAsyncPool()
            cp.cuda.set_allocator(self.pool.malloc)
            self.label = "cupy MemoryAsyncPool"
        else:
            self.pool = cp.get_default_memory_pool()
            self.label = "cupy default MemoryPool"
        self.oom_name = "cupy.cuda.memory.OutOfMemoryError"

    def warm(self):
        a = self.cp.ones((2048, 2048), dtype=self.cp.float32)
        float((a @ a).sum())  # cuBLAS loaded

    def alloc(self, n):
        return self.cp.empty(n, dtype=self.cp.uint8)

    def is_oom(self, e):
        return isinstance(e, self.cp.cuda.memory.OutOfMemoryError)

    def sync(self):
        self.cp.cuda.Device().synchronize()

    def held(self):
        return f"pool total_bytes {self.pool.total_bytes() // MiB} MiB, used_bytes {self.pool.used_bytes() // MiB} MiB"

    def total(self):
        return f"memGetInfo total {self.cp.cuda.runtime.memGetInfo()[1] // MiB} MiB"

    def release(self, chunks):
        chunks.clear()
        self.pool.free_all_blocks()  # synchronizes and gives the pool's memory back to the device
        self.sync()

    def use(self, x):
        x.fill(1)
        return int(x[-1]) == 1


class Jax:
    def __init__(self):
        # Without this JAX silently falls back to the CPU when the GPU backend fails.
        os.environ.setdefault("JAX_PLATFORMS", "cuda")
        try:
            import jax
            import jax.numpy as jnp
        except Exception as e:
            skip(f"import jax failed: {e!r}")
        self.jax, self.jnp = jax, jnp
        try:
            self.dev = jax.devices()[0]
        except Exception as e:
            print(f"BAD jax.devices() failed: {type(e).__name__}: {first_line(e)}\nfigures: no GPU backend", flush=True)
            sys.exit(1)
        pre = os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "true (default)")
        self.label = f"jax {jax.__version__} XLA_PYTHON_CLIENT_PREALLOCATE={pre}"
        self.oom_name = "RESOURCE_EXHAUSTED (JaxRuntimeError)"

    def warm(self):
        f = self.jax.jit(lambda a: (a @ a).sum())
        float(f(self.jnp.ones((2048, 2048), self.jnp.float32)))  # compiled, cuBLAS(Lt) loaded

    def alloc(self, n):
        return self.jnp.zeros((n,), self.jnp.uint8).block_until_ready()

    def is_oom(self, e):
        # jax.errors.JaxRuntimeError, called XlaRuntimeError in older jaxlib: match by name, both ways
        names = {c.__name__ for c in type(e).__mro__}
        return bool(names & {"JaxRuntimeError", "XlaRuntimeError"}) and "RESOURCE_EXHAUSTED" in str(e)

    def sync(self):
        pass  # every allocation above blocks until ready

    def stats(self):
        return self.dev.memory_stats() or {}

    def held(self):
        s = self.stats()
        pool = s.get("pool_bytes", s.get("bytes_reserved"))
        return (f"bytes_in_use {s.get('bytes_in_use', 0) // MiB} MiB, pool_bytes "
                f"{'n/a' if pool is None else pool // MiB} MiB")

    def total(self):
        return f"bytes_limit {self.stats().get('bytes_limit', 0) // MiB} MiB"

    def release(self, chunks):
        for x in chunks:
            x.delete()
        chunks.clear()

    def use(self, x):
        return int(x[-1]) == 0


def fill(fw, cap):
    """Chunks of 256, 64, 16, 2 MiB, each size until the framework's OOM error. Returns the chunks, how many of each
    size, the first OOM message, and whether every size ended with the framework's own OOM error."""
    chunks, counts, filled, msg, clean = [], [], 0, "", True
    for mib in CHUNKS_MIB:
        n = 0
        while True:
            if filled + mib * MiB > cap:
                check(False, f"filled {filled // MiB} MiB (the cap) without an out-of-memory error")
                clean = False
                break
            try:
                chunks.append(fw.alloc(mib * MiB))
            except Exception as e:
                if fw.is_oom(e):
                    msg = msg or first_line(e)
                else:
                    check(False, f"{mib} MiB chunk raised {type(e).__name__}: {first_line(e)} (want {fw.oom_name})")
                    clean = False
                break
            n += 1
            filled += mib * MiB
        counts.append(n)
        if not clean:
            break
    return chunks, counts, filled, msg, clean


def smi_used_mib(pid):
    """What nvidia-smi lists for pid, in MiB (summed over GPUs), run without the preload; None if not listed."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                             env=env, capture_output=True, text=True, timeout=30).stdout
    except Exception as e:
        return None, f"nvidia-smi failed: {e!r}"
    mib = None
    for line in out.splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) == 2 and f[0] == str(pid) and f[1].isdigit():
            mib = (mib or 0) + int(f[1])
    return mib, out.strip().replace("\n", "; ")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("framework", choices=["torch", "cupy", "cupy-async", "jax"])
    ap.add_argument("--quota-mib", type=int, default=0, help="the per-process quota nvidia-smi is held to")
    ap.add_argument("--warm", nargs=2, metavar=("WARM", "START"))
    ap.add_argument("--hold", nargs=2, metavar=("READY", "GO"))
    ap.add_argument("--cap-mib", type=int, default=24576, help="stop filling here (nothing enforced a quota)")
    a = ap.parse_args()
    measure = a.hold is None
    if measure and not shutil.which("nvidia-smi"):
        skip("nvidia-smi not found")
    if measure and a.quota_mib <= 0:
        ap.error("--quota-mib is needed unless --hold")
    fw = {"torch": Torch, "cupy": lambda: Cupy(False), "cupy-async": lambda: Cupy(True), "jax": Jax}[a.framework]()
    print(f"ready pid={os.getpid()} {fw.label}", flush=True)

    fw.warm()
    fw.sync()
    if a.warm:
        touch(a.warm[0])
        wait_for(a.warm[1])
    chunks, counts, filled, oom_msg, clean = fill(fw, a.cap_mib * MiB)
    fw.sync()
    held, total = fw.held(), fw.total()
    sizes = ", ".join(f"{m} MiB x {n}" for m, n in zip(CHUNKS_MIB, counts))
    print(f"holding: filled {filled // MiB} MiB ({sizes}); {held}; {total}; OOM: '{oom_msg}'", flush=True)
    check(clean and oom_msg != "", f"every chunk size ended with {fw.oom_name}")

    smi = None
    if measure:
        smi, raw = smi_used_mib(os.getpid())
        print(f"nvidia-smi --query-compute-apps (no preload): {raw}", flush=True)
        if smi is None:
            check(False, f"nvidia-smi lists no memory for pid {os.getpid()}")
        else:
            check(smi <= a.quota_mib, f"nvidia-smi: the GPU holds {smi} MiB for this process (want <= quota "
                  f"{a.quota_mib})")
            # a check that passes by taking little would prove nothing
            check(smi >= a.quota_mib // 2, f"nvidia-smi {smi} MiB is at least half the quota (the fill reached it)")
    else:
        touch(a.hold[0])
        wait_for(a.hold[1])

    # After freeing, the framework must allocate again (in a shared region at most what this process gave back).
    again = 256 * MiB if measure else min(256 * MiB, filled)
    again_text = "nothing held, nothing to allocate again"
    fw.release(chunks)
    if again:
        try:
            x = fw.alloc(again)
            check(fw.use(x), f"after freeing, {again // MiB} MiB allocates and holds its values")
            again_text = f"after freeing, {again // MiB} MiB allocated again"
            del x
        except Exception as e:
            check(False, f"after freeing, {again // MiB} MiB raised {type(e).__name__}: {first_line(e)}")
            again_text = f"after freeing, {again // MiB} MiB FAILED"
    count = os.environ.get("VRAMGUARD_COUNT", "default")
    smi_text = f"nvidia-smi {smi} MiB (quota {a.quota_mib}); " if measure else ""
    print(f"figures: {smi_text}{fw.label}: {held}; {total}; filled {filled // MiB} MiB ({sizes}) until "
          f"{fw.oom_name}; {again_text}; VRAMGUARD_COUNT {count}; {time.time() - T0:.0f} s", flush=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
