"""A short, deterministic PyTorch training loop for run.sh's sigusr1_torch check.

A small MLP learns a fixed function of random inputs (seed 0, deterministic algorithms, data made on the CPU), for
a fixed number of steps. --pace sleeps between steps so the loop lasts long enough to receive signals; it does not
change the numbers. After the first step (CUDA is up, vramguard's SIGUSR1 handler is in place) it prints
"ready pid=N"; at the end "result: loss_first=A loss_last=B checksum=C" (C: the sum of every parameter, in float64),
which must be the same with and without the preload.
"""
import argparse
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")   # deterministic cuBLAS; before torch loads it
try:
    import torch  # noqa: E402
except Exception as e:  # a missing framework is a FAIL with a reason
    print(f"BAD import torch failed: {e!r}\nfigures: torch unavailable", flush=True)
    sys.exit(2)

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=300)
ap.add_argument("--pace", type=float, default=0.0, help="seconds to sleep after each step")
a = ap.parse_args()

t0 = time.time()
torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
g = torch.Generator().manual_seed(0)
X = torch.randn(8192, 128, generator=g)
W = torch.randn(128, 1, generator=g) / 128 ** 0.5
Y = torch.tanh(2 * X @ W) + 0.1 * torch.cos(X[:, :1])
model = torch.nn.Sequential(torch.nn.Linear(128, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
                            torch.nn.Linear(512, 1))
dev = torch.device("cuda")
model.to(dev)
X, Y = X.to(dev), Y.to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
batch = 1024
with torch.no_grad():
    loss_first = torch.nn.functional.mse_loss(model(X), Y).item()     # the whole set, before training
for step in range(a.steps):
    i = (step * batch) % X.shape[0]
    xb, yb = X[i:i + batch], Y[i:i + batch]
    loss = torch.nn.functional.mse_loss(model(xb), yb)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if step == 0:
        torch.cuda.synchronize()
        print(f"ready pid={os.getpid()}", flush=True)
    if a.pace > 0:
        time.sleep(a.pace)
with torch.no_grad():
    loss_last = torch.nn.functional.mse_loss(model(X), Y).item()
checksum = sum(p.detach().double().sum().item() for p in model.parameters())
torch.cuda.synchronize()
print(f"result: loss_first={loss_first!r} loss_last={loss_last!r} checksum={checksum!r}")
print(f"figures: {a.steps} steps in {time.time() - t0:.1f} s, loss on the whole set {loss_first:.4f} -> "
      f"{loss_last:.4f}, "
      f"checksum {checksum:.12g}, reserved {torch.cuda.memory_reserved() / 2**20:.0f} MiB, pid {os.getpid()}")
sys.exit(0 if loss_last < loss_first else 1)
