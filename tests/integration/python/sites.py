"""Allocations from known Python lines under the preload (tests/run.sh, python section; docs/python.md).

Run as: python3 sites.py LIBCUDA LIBCTHREAD. Each allocation's line ends with a "site:" comment naming it, which
tests/lib/report_check.py's `pysites` reads back: the report must name this file, that line and the function.
"""
import ctypes
import sys
import threading

MIB = 1 << 20


def check(rc, what):
    if rc != 0:
        print(f"not ok - {what}: CUresult {rc}")
        sys.exit(1)
    print(f"ok - {what}")


def alloc_cdll(lib, n):
    p = ctypes.c_uint64()
    return lib.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(n))  # site: cdll


def alloc_pydll(lib, n):
    p = ctypes.c_uint64()
    return lib.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(n))  # site: pydll


def alloc_twice(lib):
    p = ctypes.c_uint64()
    a = lib.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(4 * MIB))  # site: line_a
    b = lib.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(5 * MIB))  # site: line_b
    return a or b


class Trainer:
    def step(self, lib):
        p = ctypes.c_uint64()
        return lib.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(7 * MIB))  # site: method


# Function names of each str kind (PEP 393): Latin-1, UCS-2 and UCS-4 text, read and copied as UTF-8.
def größe(lib):
    p = ctypes.c_uint64()
    return lib.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(8 * MIB))  # site: latin1


def 確保(lib):
    p = ctypes.c_uint64()
    return lib.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(9 * MIB))  # site: ucs2


def 𠀀(lib):
    p = ctypes.c_uint64()
    return lib.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(10 * MIB))  # site: ucs4


def thread_body(lib, out):
    p = ctypes.c_uint64()
    out.append(lib.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(6 * MIB)))  # site: thread


def main():
    cdll = ctypes.CDLL(sys.argv[1])
    pydll = ctypes.PyDLL(sys.argv[1])
    check(cdll.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    check(cdll.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    ctx = ctypes.c_void_p()
    check(cdll.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev), "cuCtxCreate_v2")
    check(alloc_cdll(cdll, 1 * MIB), "CDLL (GIL released)")  # caller: cdll
    check(alloc_pydll(pydll, 2 * MIB), "PyDLL (GIL held)")
    check(alloc_twice(cdll), "the same stack from two lines")
    check(Trainer().step(cdll), "a method")
    check(größe(cdll) or 確保(cdll) or 𠀀(cdll), "functions named in Latin-1, UCS-2 and UCS-4 text")
    out = []
    t = threading.Thread(target=thread_body, args=(cdll, out))
    t.start()
    t.join()
    check(out[0] if out else -1, "a threading.Thread")
    cthread = ctypes.CDLL(sys.argv[2])
    check(cthread.vg_test_cthread_alloc(ctypes.c_long(3 * MIB)), "a C thread without Python frames")


if __name__ == "__main__":
    main()
