"""Soak under a tight quota: random tensor sizes, OOMs caught and recovered, periodic SIGUSR1 reports from a
helper thread, for --steps steps paced to last --seconds. The numbers it computes do not depend on which
allocations failed, so a run without vramguard must print the same checksum. Prints:
  step ... lines, then "result: checksum=... ooms=N steps=N" and "reserved_at_end=BYTES" last."""
import argparse
import os
import signal
import sys
import threading
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=2000)
ap.add_argument("--seconds", type=float, default=180)
ap.add_argument("--signal-every", type=float, default=15, help="seconds between SIGUSR1 (0: none)")
a = ap.parse_args()

torch.manual_seed(1234)
torch.backends.cuda.matmul.allow_tf32 = False
torch.use_deterministic_algorithms(True)
rng = torch.Generator().manual_seed(42)
dev = torch.device("cuda")
W = torch.randn(512, 512, generator=rng).to(dev)
checksum = 0.0
ooms = 0
keep = []               # some pressure tensors live on for a while, like activations and caches
stop = threading.Event()
sent = 0


def signaller():
    global sent
    while not stop.wait(a.signal_every):
        os.kill(os.getpid(), signal.SIGUSR1)
        sent += 1


if a.signal_every > 0:
    threading.Thread(target=signaller, daemon=True).start()
pace = a.seconds / a.steps
t0 = time.time()
for step in range(a.steps):
    # pressure: a random size from 16 MiB to 1.5 GiB; may exceed the quota
    mib = int(torch.randint(16, 1536, (1,), generator=rng))
    hold = int(torch.randint(0, 4, (1,), generator=rng))
    try:
        t = torch.empty(mib << 20, dtype=torch.uint8, device=dev)
        t[:: 1 << 20].fill_(1)
        keep.append((step + hold, t))
    except torch.OutOfMemoryError:
        ooms += 1
        keep.clear()
        torch.cuda.empty_cache()
    keep = [(until, t) for until, t in keep if until > step]
    # the computation: independent of the pressure above
    x = torch.randn(256, 512, generator=rng).to(dev)
    y = torch.tanh(x @ W) @ W.T
    checksum += float(y.double().sum().item())
    if step % 200 == 0:
        print(f"step {step}: ooms {ooms}, reserved {torch.cuda.memory_reserved() >> 20} MiB, signals {sent}",
              flush=True)
    time.sleep(max(0.0, t0 + pace * (step + 1) - time.time()))
stop.set()
keep.clear()
torch.cuda.synchronize()
print(f"result: checksum={checksum:.10e} ooms={ooms} steps={a.steps} signals={sent} "
      f"seconds={time.time() - t0:.1f}", flush=True)
print(f"reserved_at_end={torch.cuda.memory_reserved()}", flush=True)
sys.exit(0)
