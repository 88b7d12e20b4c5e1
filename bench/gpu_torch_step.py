"""gpu_torch_step.py WARMUP STEPS: step time of two small PyTorch training loops, for bench/run_gpu.sh, which runs
it in alternating processes with and without the preload.

  mlp   784-1024-1024-10, ReLU, batch 128
  conv  3 conv layers (32, 64, 128 channels, 3x3) with ReLU and max-pooling, global average pool, linear; 32x32 RGB
        images, batch 64
Both: cross-entropy, SGD with momentum, fixed seed, fixed random data already on the GPU, gradients set to None
each step (so the caching allocator frees and reuses them, as in a real loop), cuDNN autotuning off (the same
algorithms in every process). Each timed step ends with torch.cuda.synchronize(); WARMUP steps are not timed.
Prints "preload 0|1", "info ...", and "figure torch-MODEL-step MEDIAN_MS MIN_MS" over the STEPS steps.
Exit status 3 with a "skip REASON" line when torch or a CUDA device is missing.
"""
import sys

from gpu_steps import start, time_steps


def main():
    warmup, steps = start()
    try:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
    except Exception as e:
        print(f"skip torch not importable ({type(e).__name__}: {e})"[:300], flush=True)
        return 3
    if not torch.cuda.is_available():
        print("skip torch: no CUDA device", flush=True)
        return 3
    print(f"info torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}", flush=True)
    torch.backends.cudnn.benchmark = False
    dev = torch.device("cuda")

    def timed(name, model, x, y):
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def step():
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(x), y).backward()
            opt.step()

        time_steps(f"torch-{name}-step", step, torch.cuda.synchronize, warmup, steps)

    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                        nn.Linear(1024, 10)).to(dev)
    timed("mlp", mlp, torch.randn(128, 784, device=dev), torch.randint(0, 10, (128,), device=dev))

    torch.manual_seed(0)
    conv = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10)).to(dev)
    timed("conv", conv, torch.randn(64, 3, 32, 32, device=dev), torch.randint(0, 10, (64,), device=dev))
    return 0


if __name__ == "__main__":
    sys.exit(main())
