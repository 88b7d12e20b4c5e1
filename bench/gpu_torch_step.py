"""gpu_torch_step.py WARMUP STEPS [MODEL...]: step time of PyTorch training loops, for bench/run_gpu.sh, which runs
it in alternating processes with and without the preload. MODELs (default: mlp conv):

  mlp   784-1024-1024-10, ReLU, batch 128
  conv  3 conv layers (32, 64, 128 channels, 3x3) with ReLU and max-pooling, global average pool, linear; 32x32 RGB
        images, batch 64
  gpt2  GPT-2 small (124M parameters: 12 layers, 12 heads, 768 wide, vocabulary 50257, tied embedding), sequences
        of 1024 tokens, batch 4, bf16 autocast, fused AdamW (written here in plain torch: no transformers package)
mlp and conv: cross-entropy, SGD with momentum, fixed seed, fixed random data already on the GPU, gradients set to None
each step (so the caching allocator frees and reuses them, as in a real loop), cuDNN autotuning off (the same
algorithms in every process). Each timed step ends with torch.cuda.synchronize(); WARMUP steps are not timed.
Prints "preload 0|1", "info ...", and "figure torch-MODEL-step MEDIAN_MS MIN_MS" over the STEPS steps.
Exit status 3 with a "skip REASON" line when torch or a CUDA device is missing.
"""
import sys

from gpu_steps import start, time_steps


def gpt2_step(torch, nn, F, dev, warmup, steps, layers=12, heads=12, width=768, vocab=50257, seq=1024, batch=4):
    """GPT-2 small's training step: "figure torch-gpt2-step MEDIAN_MS MIN_MS"."""

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.fc, self.out = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in self.qkv(self.ln1(x)).split(c, 2))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, c)
            x = x + self.proj(y)
            return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT2(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(seq, width)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.ln = nn.LayerNorm(width)
            self.head = nn.Linear(width, vocab, bias=False)
            self.head.weight = self.wte.weight

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.ln(x))

    torch.manual_seed(0)
    model = GPT2().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    idx = torch.randint(0, vocab, (batch, seq + 1), device=dev)
    x, y = idx[:, :-1], idx[:, 1:]

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        loss.backward()
        opt.step()

    print(f"info gpt2: {sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters, batch {batch} x {seq}",
          flush=True)
    time_steps("torch-gpt2-step", step, torch.cuda.synchronize, warmup, steps)


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

    models = sys.argv[3:] or ["mlp", "conv"]
    for m in models:
        if m not in ("mlp", "conv", "gpt2"):
            print(f"gpu_torch_step.py: unknown model {m!r} (mlp, conv, gpt2)", file=sys.stderr)
            return 2
    if "gpt2" in models:
        gpt2_step(torch, nn, F, dev, warmup, steps)
    if "mlp" not in models and "conv" not in models:
        return 0
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                        nn.Linear(1024, 10)).to(dev)
    if "mlp" in models:
        timed("mlp", mlp, torch.randn(128, 784, device=dev), torch.randint(0, 10, (128,), device=dev))

    torch.manual_seed(0)
    conv = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10)).to(dev)
    if "conv" in models:
        timed("conv", conv, torch.randn(64, 3, 32, 32, device=dev), torch.randint(0, 10, (64,), device=dev))
    return 0


if __name__ == "__main__":
    sys.exit(main())
