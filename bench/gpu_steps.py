"""gpu_steps.py: what bench/gpu_torch_step.py and bench/gpu_jax_step.py share (standard library only): the
command line, the "preload" line and the timing of a training step."""
import sys
import time


def preloaded():
    with open("/proc/self/maps") as f:
        return "libvramguard" in f.read()


def start():
    """(WARMUP, STEPS) from the command line (default 30, 300), after printing "preload 0|1"."""
    warmup, steps = (int(a) for a in sys.argv[1:3]) if len(sys.argv) >= 3 else (30, 300)
    print(f"preload {int(preloaded())}", flush=True)
    return warmup, steps


def time_steps(name, step, sync, warmup, steps):
    """Run step() WARMUP times untimed, then sync(); then STEPS times, each timed up to the end of sync().
    Prints "figure NAME MEDIAN_MS MIN_MS" (the median taken as the upper middle one)."""
    for _ in range(warmup):
        step()
    sync()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter_ns()
        step()
        sync()
        times.append(time.perf_counter_ns() - t0)
    times.sort()
    print(f"figure {name} {times[len(times) // 2] / 1e6:.4f} {times[0] / 1e6:.4f}", flush=True)
