"""For run.sh's cli_run_torch: run as `vramguard run --limit <MiB>M -- python3 cli_torch.py <MiB>`; checks that the
limit given on the command line holds in PyTorch. Prints ok/BAD lines and a final figures: line."""
import sys

try:
    import torch
except Exception as e:
    print(f"BAD import torch failed: {e!r}\nfigures: torch unavailable", flush=True)
    sys.exit(2)

want = int(sys.argv[1]) << 20
bad = 0
free, total = torch.cuda.mem_get_info()
print(("ok" if total == want else "BAD") + f" mem_get_info total {total >> 20} MiB (want {want >> 20})")
bad |= total != want
try:
    torch.empty(want + (1 << 30), dtype=torch.uint8, device="cuda")
    print("BAD a tensor larger than the limit was allocated")
    bad = 1
    msg = "allocated"
except torch.OutOfMemoryError as e:
    msg = str(e).splitlines()[0][:90]
    print("ok over the limit: torch.OutOfMemoryError")
x = torch.ones(want // 2, dtype=torch.uint8, device="cuda")
# Check a strided sample: x.sum() would promote the whole tensor to int64 (8x its size) and rightly hit the limit.
ok = int(x[:: 1 << 20].sum().item()) == (want // 2) >> 20
print(("ok" if ok else "BAD") + " half the limit allocates and computes")
bad |= not ok
print(f"figures: total {total >> 20} MiB, over-limit tensor -> '{msg}', reserved {torch.cuda.memory_reserved() >> 20} MiB")
sys.exit(1 if bad else 0)
