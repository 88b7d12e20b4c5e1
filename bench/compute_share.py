"""compute_share.py WORKLOAD [options]: one process of the compute-share benchmark (bench/run_compute.sh, issue 28).

  matmul  4096x4096 fp16 matmuls into a preallocated output, torch.cuda.synchronize() after every 10;
          an iteration is one matmul
  graph   the matmul loop captured once as a CUDA graph of 10 matmuls, replayed (cuGraphLaunch), synchronize
          after each replay; an iteration is one matmul (a cap must hold through graph launches too)
  mlp     a batch-1 training step of small kernels: 4 x (Linear 1024->1024 + ReLU), a sum-of-squares loss,
          backward, SGD (lr 1e-4), gradients set to None; synchronize after each step; an iteration is one step

The loop runs for at least --warmup seconds, then waits for --start-at (an epoch time in seconds, so that processes
started one after another measure the same interval), then counts iterations for --seconds, reading the clock only
after a synchronize. Prints one JSON line:
  {"workload", "label", "pid", "iters", "seconds" (the measured interval), "ips" (iterations per second),
   "start", "end" (epoch seconds), "late_s" (how far past --start-at the measurement began; 0 when on time),
   "setup_s" (process start to the end of the warm-up), "nvml_sm_util" (mean smUtil of this pid's NVML process
   samples taken during the interval, or null), "nvml_samples", "device", "torch"}
"GPU time used" comes from NVML's per-process samples, read once at the end by a child process without the preload
(no thread, nothing on the loop): the driver's own estimate, coarse (a percentage per sample period), printed as
information beside the throughput.
Exit status 3 with a "skip: REASON" line when torch or a CUDA device is missing; 2 on bad arguments.
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import time

T0 = time.time()


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("workload", choices=tuple(LOOPS))
    p.add_argument("--seconds", type=float, default=8.0, help="measured interval (default 8)")
    p.add_argument("--warmup", type=float, default=2.0, help="warm-up before the interval (default 2)")
    p.add_argument("--start-at", type=float, default=0.0, help="epoch time at which the interval begins")
    p.add_argument("--label", default="", help="copied into the JSON line")
    p.add_argument("--device", type=int, default=0)
    a = p.parse_args(argv)
    if not (a.seconds > 0 and a.warmup >= 0):
        p.error("--seconds must be > 0 and --warmup >= 0")
    return a


def matmul_loop(torch, dev):
    a = torch.randn(4096, 4096, device=dev, dtype=torch.float16)
    b = torch.randn(4096, 4096, device=dev, dtype=torch.float16)
    c = torch.empty(4096, 4096, device=dev, dtype=torch.float16)

    def chunk():
        for _ in range(10):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize(dev)
        return 10
    return chunk


def graph_loop(torch, dev):
    a = torch.randn(4096, 4096, device=dev, dtype=torch.float16)
    b = torch.randn(4096, 4096, device=dev, dtype=torch.float16)
    c = torch.empty(4096, 4096, device=dev, dtype=torch.float16)
    side = torch.cuda.Stream(dev)
    side.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(side):  # cuBLAS's handle and workspace exist before the capture, as PyTorch advises
        for _ in range(3):
            torch.matmul(a, b, out=c)
    torch.cuda.current_stream(dev).wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(10):
            torch.matmul(a, b, out=c)

    def chunk():
        g.replay()
        torch.cuda.synchronize(dev)
        return 10
    return chunk


def mlp_loop(torch, dev):
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(1, 1024, device=dev)

    def chunk():
        opt.zero_grad(set_to_none=True)
        model(x).square().sum().backward()
        opt.step()
        torch.cuda.synchronize(dev)
        return 1
    return chunk


LOOPS = {"matmul": matmul_loop, "mlp": mlp_loop, "graph": graph_loop}


class ProcSample(ctypes.Structure):  # nvmlProcessUtilizationSample_t
    _fields_ = [("pid", ctypes.c_uint), ("timeStamp", ctypes.c_ulonglong), ("smUtil", ctypes.c_uint),
                ("memUtil", ctypes.c_uint), ("encUtil", ctypes.c_uint), ("decUtil", ctypes.c_uint)]


def nvml_sm_util(index, since_us):
    """Mean smUtil of this pid's samples newer than since_us (NVML's CPU timestamps, µs), and their count, read by
    a child process without the preload: an interposer that wraps NVML (HAMi-core does) cannot change the reading,
    nor lose the result line by crashing in it. NVML's index is taken to be CUDA's."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    try:
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--nvml-of", str(os.getpid()),
                              str(since_us), str(index)], env=env, capture_output=True, text=True, timeout=30)
        util, n = json.loads(out.stdout.strip().splitlines()[-1])
        return util, n
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None, 0


def nvml_read(pid, since_us, index):
    """The child's part of nvml_sm_util: [mean smUtil or null, number of samples] of PID on one line."""
    try:
        nv = ctypes.CDLL("libnvidia-ml.so.1")
        if nv.nvmlInit_v2() != 0:
            return None, 0
        dev = ctypes.c_void_p()
        if nv.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(index), ctypes.byref(dev)) != 0:
            return None, 0
        buf = (ProcSample * 1024)()
        n = ctypes.c_uint(1024)
        rc = nv.nvmlDeviceGetProcessUtilization(dev, buf, ctypes.byref(n), ctypes.c_ulonglong(since_us))
        if rc != 0:
            return None, 0
        mine = [buf[i].smUtil for i in range(n.value) if buf[i].pid == pid]
        return (sum(mine) / len(mine) if mine else None), len(mine)
    except (OSError, AttributeError):
        return None, 0


def main(argv):
    if argv[:1] == ["--nvml-of"] and len(argv) == 4:
        print(json.dumps(nvml_read(int(argv[1]), int(argv[2]), int(argv[3]))))
        return 0
    a = parse_args(argv)
    try:
        import torch
    except Exception as e:  # a broken install raises more than ImportError
        print(f"skip: torch not importable ({type(e).__name__}: {e})"[:300], flush=True)
        return 3
    if not torch.cuda.is_available():
        print("skip: torch sees no CUDA device", flush=True)
        return 3
    dev = torch.device("cuda", a.device)
    torch.manual_seed(0)
    chunk = LOOPS[a.workload](torch, dev)
    w_end = time.time() + a.warmup
    chunk()  # the first call loads cuBLAS and the kernels: warm-up time starts counting after it
    w_end = max(w_end, time.time() + a.warmup / 2)
    while time.time() < w_end:
        chunk()
    setup_s = time.time() - T0
    if a.start_at > time.time():
        time.sleep(a.start_at - time.time())
    start = time.time()
    late = max(0.0, start - a.start_at) if a.start_at else 0.0
    end_at = start + a.seconds
    iters = 0
    now = start
    while now < end_at:
        iters += chunk()
        now = time.time()
    util, nsamples = nvml_sm_util(a.device, int(start * 1e6))
    print(json.dumps({
        "workload": a.workload, "label": a.label, "pid": os.getpid(), "iters": iters,
        "seconds": round(now - start, 4), "ips": round(iters / (now - start), 3), "start": round(start, 4),
        "end": round(now, 4), "late_s": round(late, 3), "setup_s": round(setup_s, 3),
        "nvml_sm_util": None if util is None else round(util, 1), "nvml_samples": nsamples,
        "device": torch.cuda.get_device_name(dev), "torch": torch.__version__}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
