"""A training loop that keeps one more device buffer every step, under the preload (tests/sections/growth.sh): the
CPU stand-in for a PyTorch loop that appends an activation to a list. The growth report must name the line marked
"site: append" (its file, line and function) as the growing site, and not the one marked "site: steady".

Run as: python3 leak.py LIBCUDA STEP_MS. Allocates 1 MiB every STEP_MS on a schedule of its own (a late step is
caught up) until the quota refuses one; prints "denied at NS" (CLOCK_REALTIME).
"""
import ctypes
import sys
import time

MIB = 1 << 20


def weights(lib):
    p = ctypes.c_uint64()
    return lib.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(32 * MIB))  # site: steady


def train_step(lib, kept):
    p = ctypes.c_uint64()
    rc = lib.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(MIB))  # site: append
    kept.append(p.value)
    return rc


def main():
    lib = ctypes.CDLL(sys.argv[1])
    step = int(sys.argv[2]) / 1000
    ctx = ctypes.c_void_p()
    dev = ctypes.c_int()
    if lib.cuInit(0) or lib.cuDeviceGet(ctypes.byref(dev), 0) or lib.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev):
        print("not ok - cuInit, cuDeviceGet, cuCtxCreate_v2")
        return 1
    if weights(lib):
        print("not ok - the steady 32 MiB")
        return 1
    kept = []
    deadline = time.monotonic()
    while train_step(lib, kept) == 0:
        deadline += step
        time.sleep(max(0.0, deadline - time.monotonic()))
    print(f"denied at {time.time_ns()} after {len(kept) - 1} steps")
    print(f"ok - the loop kept {len(kept) - 1} MiB until the quota refused one")
    return 0


if __name__ == "__main__":
    sys.exit(main())
