"""torch_sigusr1.py: ask a running PyTorch job what holds its GPU memory, without stopping it.

A tiny MLP trains on random data for about 25 seconds (or --steps N). While it runs, send it SIGUSR1 and vramguard
writes a report: per-device use and every live allocation grouped by call site (the caching allocator's segments,
made in c10's CUDACachingAllocator), plus the streams PyTorch created. Another report is written at exit.

Run it (from the repository root, after `make`):

    VRAMGUARD_REPORT=/tmp/vg-%p-%n.json VRAMGUARD_REPORT_FORMAT=json \\
    LD_PRELOAD=$PWD/build/libvramguard.so python3 examples/torch_sigusr1.py

It prints its pid; from another shell:

    kill -USR1 <pid>                # one report per signal: /tmp/vg-<pid>-1.json, -2.json, ...
    python3 -m json.tool /tmp/vg-<pid>-1.json | less

%p is the pid and %n the report's number (the exit report takes the next one). Leave out VRAMGUARD_REPORT and
VRAMGUARD_REPORT_FORMAT to get the text form on stderr instead. VRAMGUARD_SIGNAL=USR2 picks another signal;
vramguard only takes the signal over if the program has not installed a handler for it (this one has not).
Without the preload, SIGUSR1 kills the process: that is the signal's default action.

Options: --seconds S (default 25), --steps N (stop after N steps instead), --device cuda:0.
"""
import argparse
import os
import sys
import time

try:
    import torch
except ImportError:
    sys.exit("torch_sigusr1.py needs PyTorch with CUDA (pip install torch)")

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("--seconds", type=float, default=25.0, help="train for this long (default 25)")
ap.add_argument("--steps", type=int, default=0, help="train for this many steps instead")
ap.add_argument("--device", default="cuda", help="default: cuda")
a = ap.parse_args()

dev = torch.device(a.device)
torch.manual_seed(0)
X = torch.randn(65536, 256, device=dev)
Y = torch.tanh(X @ torch.randn(256, 1, device=dev) / 16)
model = torch.nn.Sequential(
    torch.nn.Linear(256, 1024), torch.nn.ReLU(),
    torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
    torch.nn.Linear(1024, 1),
).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)

pid = os.getpid()
print(f"pid {pid}: training for {f'{a.steps} steps' if a.steps else f'{a.seconds:.0f} s'}; "
      f"get a report with: kill -USR1 {pid}", flush=True)
t0 = time.time()
step = 0
loss = None
while (step < a.steps) if a.steps else (time.time() - t0 < a.seconds):
    i = (step * 2048) % X.shape[0]
    loss = torch.nn.functional.mse_loss(model(X[i:i + 2048]), Y[i:i + 2048])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    step += 1
    if step % 500 == 0:
        print(f"step {step}: loss {loss.item():.5f}", flush=True)
    time.sleep(0.005)      # a slower loop: the point is to be running when the signal comes

final = loss.item() if loss is not None else float("nan")
print(f"done: {step} steps in {time.time() - t0:.1f} s, final loss {final:.5f}, "
      f"{torch.cuda.memory_reserved(dev) / 2**20:.0f} MiB reserved by PyTorch's caching allocator", flush=True)
