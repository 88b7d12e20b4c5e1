"""train_with_limit.py: a PyTorch job that meets its VRAM quota and recovers, instead of dying.

A small MLP learns a synthetic classification task. Its first batch is sized to need about four times the memory
the process is allowed; vramguard denies the allocation past the quota, PyTorch raises torch.OutOfMemoryError, and
the job frees its cache, halves the batch and carries on. Halfway through it asks vramguard for a report by sending
itself the report signal, and says where the report went. At the end it prints the final loss.

Run it (from the repository root; the `vramguard` command is installed by `make install`):

    vramguard run --limit 2G --report /tmp/vg-%p-%n.json --format json -- python3 examples/pytorch/train_with_limit.py

or with the library directly:

    NVIDIA_GPU_MEMORY_LIMITS=2G VRAMGUARD_REPORT=/tmp/vg-%p-%n.json VRAMGUARD_REPORT_FORMAT=json \\
    LD_PRELOAD=$PWD/build/libvramguard.so python3 examples/pytorch/train_with_limit.py

Options: --steps N (default 200), --start-batch N (default: from the memory the process is told it has),
--device cuda:0. Without vramguard loaded it still runs, but skips the signal (SIGUSR1 would kill it).
"""
import argparse
import glob
import os
import signal
import socket
import sys
import time

try:
    import torch
except ImportError:
    sys.exit("train_with_limit.py needs PyTorch with CUDA (pip install torch)")

# torch >= 2.5 has torch.OutOfMemoryError; older releases only torch.cuda.OutOfMemoryError (the same class).
OOM = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError

IN, HID, CLASSES = 512, 4096, 16
# Bytes a training step keeps per sample (float32): the input, two hidden layers before and after ReLU, the
# logits, and about as much again for their gradients. An estimate, only used to pick a first batch that is
# certainly too large.
BYTES_PER_SAMPLE = 2 * 4 * (IN + 4 * HID + CLASSES)


def vramguard_loaded():
    """True if libvramguard.so is mapped into this process (LD_PRELOAD or /etc/ld.so.preload)."""
    try:
        with open("/proc/self/maps") as f:
            return any("libvramguard" in line for line in f)
    except OSError:
        return False


def report_signal():
    """The signal vramguard listens on (VRAMGUARD_SIGNAL, default USR1), or None if reports on signal are off."""
    name = os.environ.get("VRAMGUARD_SIGNAL", "").strip().upper() or "USR1"
    if name == "OFF":
        return None
    name = name[3:] if name.startswith("SIG") else name
    if name.startswith("RTMIN+"):
        return signal.SIGRTMIN + int(name[6:])
    return getattr(signal, "SIG" + name, None)


def report_destination(pid):
    """Where vramguard writes reports, as a glob for files (or 'stderr'/'off')."""
    where = os.environ.get("VRAMGUARD_REPORT", "").strip() or "stderr"
    if where in ("stderr", "off"):
        return where
    host = socket.gethostname()
    return where.replace("%%", "\0").replace("%p", str(pid)).replace("%h", host) \
        .replace("%n", "*").replace("%r", "*").replace("\0", "%")


def dump_report():
    """Ask vramguard for a report now (what `vramguard dump PID` does from outside) and say where it went."""
    sig = report_signal()
    if not vramguard_loaded():
        print("report: vramguard is not loaded in this process; not sending a signal (it would kill us)")
        return
    if sig is None:
        print("report: VRAMGUARD_SIGNAL=off; no report on signal")
        return
    pid = os.getpid()
    where = report_destination(pid)
    before = set(glob.glob(where)) if where not in ("stderr", "off") else set()
    os.kill(pid, sig)       # the handler only wakes vramguard's reporter thread; training goes on meanwhile
    if where in ("stderr", "off"):
        print(f"report: sent {signal.Signals(sig).name}; the report goes to {where} (VRAMGUARD_REPORT)", flush=True)
        return
    deadline = time.time() + 5
    new = set()
    while time.time() < deadline and not new:
        time.sleep(0.05)
        new = set(glob.glob(where)) - before
    for path in sorted(new):
        print(f"report: sent {signal.Signals(sig).name}; written to {path}", flush=True)
    if not new:
        print(f"report: sent {signal.Signals(sig).name}; nothing matching {where} yet (see vramguard's warnings)")
    print(f"report: the exit report will be another file matching {where}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=200, help="training steps (default 200)")
    ap.add_argument("--start-batch", type=int, default=0, help="first batch size (default: too large on purpose)")
    ap.add_argument("--device", default="cuda", help="default: cuda")
    a = ap.parse_args()

    dev = torch.device(a.device)
    torch.manual_seed(0)
    free, total = torch.cuda.mem_get_info(dev)  # under vramguard: the quota, not the card
    print(f"device {torch.cuda.get_device_name(dev)}: told {total / 2**30:.2f} GiB total, "
          f"{free / 2**30:.2f} GiB free (under vramguard: the quota, NVIDIA_GPU_MEMORY_LIMITS="
          f"{os.environ.get('NVIDIA_GPU_MEMORY_LIMITS', 'unset')})", flush=True)

    if not vramguard_loaded():
        print("vramguard is not loaded: nothing limits this process, and the first batch may well fit", flush=True)

    teacher = torch.randn(IN, CLASSES, device=dev)    # the task: which of 16 directions x points to most
    model = torch.nn.Sequential(
        torch.nn.Linear(IN, HID), torch.nn.ReLU(),
        torch.nn.Linear(HID, HID), torch.nn.ReLU(),
        torch.nn.Linear(HID, CLASSES),
    ).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)

    batch = a.start_batch
    if batch <= 0:                     # a power of two needing about 4x what is free: certainly too large
        batch = 1 << max(10, min(18, (4 * free // BYTES_PER_SAMPLE).bit_length()))   # at most ~33 GiB
    print(f"first batch {batch} (about {batch * BYTES_PER_SAMPLE / 2**30:.1f} GiB of activations): "
          f"too large on purpose", flush=True)

    step, loss_value, t0 = 0, float("nan"), time.time()
    while step < a.steps:
        try:
            x = torch.randn(batch, IN, device=dev)
            y = (x @ teacher).argmax(dim=1)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        except OOM as e:
            what = str(e).split(". GPU")[0] or "out of memory"    # "CUDA out of memory. Tried to allocate ..."
            print(f"step {step}: batch {batch}: torch.OutOfMemoryError: {what}", flush=True)
            oom = True
        else:
            oom = False
        if oom:
            # Outside the except block, so the traceback (and the tensors its frames hold) is already gone.
            x = y = loss = None
            opt.zero_grad(set_to_none=True)
            torch.cuda.empty_cache()    # hand the caching allocator's blocks back: vramguard uncharges them
            if batch == 1:
                sys.exit("even a batch of 1 does not fit: raise the limit")
            batch //= 2
            print(f"        emptied the cache, halved the batch to {batch}", flush=True)
            continue
        loss_value = loss.item()
        step += 1
        if step == 1 or step % 50 == 0:
            print(f"step {step}: batch {batch}, loss {loss_value:.4f}, "
                  f"{torch.cuda.memory_reserved(dev) / 2**20:.0f} MiB reserved by PyTorch", flush=True)
        if step == a.steps // 2:
            dump_report()

    print(f"done: {step} steps in {time.time() - t0:.1f} s at batch {batch}, final loss {loss_value:.4f}",
          flush=True)


if __name__ == "__main__":
    main()
