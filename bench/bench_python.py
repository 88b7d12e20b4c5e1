"""Python capture cost (docs/PERFORMANCE.md): ns per cuMemAlloc_v2 + cuMemFree_v2 pair called through ctypes from
a Python stack DEPTH frames deep, best of 5 runs of ITERS pairs. bench/run_python.sh runs it with and without
vramguard and with VRAMGUARD_PYTHON on and off: the difference between the last two is the capture's cost.
Usage: python3 bench/bench_python.py LIBCUDA DEPTH ITERS"""
import ctypes
import sys
import time


def pairs(lib, n):
    p = ctypes.c_uint64()
    alloc, free, ref, size = lib.cuMemAlloc_v2, lib.cuMemFree_v2, ctypes.byref(p), ctypes.c_size_t(1 << 20)
    t = time.perf_counter_ns()
    for _ in range(n):
        alloc(ref, size)
        free(p)
    return time.perf_counter_ns() - t


def nest(k, lib, n):
    return nest(k - 1, lib, n) if k > 1 else pairs(lib, n)


def main():
    lib = ctypes.CDLL(sys.argv[1])
    depth, iters = int(sys.argv[2]), int(sys.argv[3])
    lib.cuInit(0)
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    lib.cuDeviceGet(ctypes.byref(dev), 0)
    lib.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev)
    nest(depth - 1, lib, 1000)     # warm: the site exists, the unwinder's cache is full
    best = min(nest(depth - 1, lib, iters) for _ in range(5))   # depth - 1: pairs() is the innermost frame
    print(f"{best / iters:.0f}")


if __name__ == "__main__":
    main()
