"""Each framework's allocator under the preload, for tests/gpu/allocators.sh (issue 29 item 3, on a real GPU).

    python3 allocators.py torch|cupy|cupy-async|jax

Allocates 3 x 64 MiB through the framework's default allocator (cupy-async: CuPy's MemoryAsyncPool, which calls
cudaMallocAsync; PyTorch's cudaMallocAsync backend is chosen by PYTORCH_CUDA_ALLOC_CONF from outside), frees one
(CuPy: to its pool, which keeps it), asks for a report by SIGUSR1 while the rest is held, and exits without freeing:
what the frameworks' allocators keep at exit is in the exit report. Exit status 3 with "skip: ..." when the framework
is not installed.
"""
import os
import signal
import sys
import time


def main(which):
    keep = []
    try:
        if which == "torch":
            import torch
            keep = [torch.empty(64 << 20, dtype=torch.uint8, device="cuda") for _ in range(3)]
            del keep[0]
            torch.cuda.synchronize()
        elif which in ("cupy", "cupy-async"):
            import cupy as cp
            if which == "cupy-async":
                cp.cuda.set_allocator(cp.cuda.MemoryAsyncPool().malloc)
            keep = [cp.zeros(64 << 20, dtype=cp.uint8) for _ in range(3)]
            del keep[0]
            cp.cuda.Device().synchronize()
        elif which == "jax":
            import jax.numpy as jnp
            keep = [jnp.ones((64 << 20,), dtype=jnp.uint8).block_until_ready() for _ in range(3)]
            del keep[0]
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except ImportError as e:
        print(f"skip: {which}: {e}")
        return 3
    os.kill(os.getpid(), signal.SIGUSR1)
    time.sleep(3)               # the reporter thread writes the report while the memory is held
    print(f"figures: {which}: {len(keep)} x 64 MiB held")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ""))
