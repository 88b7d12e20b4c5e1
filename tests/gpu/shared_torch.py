"""For run.sh's shared_region and live_limit checks: a PyTorch process that takes GPU memory in 1 GiB tensors.

  shared_torch.py hold N READY GO    take N GiB, print it, create READY, wait for GO, exit
  shared_torch.py once               take 1 GiB tensors until torch.OutOfMemoryError, print the count, exit
  shared_torch.py stall READY GO     try one 1 GiB tensor and print whether it was had, create READY, wait for GO,
                                     try again and print it (run.sh holds the region's lock during the first try)
  shared_torch.py fill READY GO [GO2 fill|lower]
                                     take 1 GiB tensors until torch.OutOfMemoryError, print the count, create READY,
                                     wait for GO, then take more until OutOfMemoryError again and print that count;
                                     with GO2: create READY2, wait for GO2, then "fill" takes more again, "lower"
                                     tries one more tensor (a lowered quota must refuse it and free nothing), then
                                     frees everything and fills again

Prints "ready pid=P", lines "took N GiB ..." with torch.cuda.mem_get_info() (free/total in MiB), and a final
figures: line. Exits 0 unless something other than an out-of-memory error happened."""
import os
import sys
import time

try:
    import torch
except Exception as e:
    print(f"BAD import torch failed: {e!r}\nfigures: torch unavailable", flush=True)
    sys.exit(2)

GIB = 1 << 30
held = []


def info():
    free, total = torch.cuda.mem_get_info()
    return f"mem_get_info free={free >> 20} MiB total={total >> 20} MiB, reserved={torch.cuda.memory_reserved() >> 20} MiB"


def take(limit=None):
    n = 0
    while limit is None or n < limit:
        try:
            held.append(torch.ones(GIB, dtype=torch.uint8, device="cuda"))
        except torch.OutOfMemoryError:
            break
        n += 1
    torch.cuda.synchronize()
    return n


def intact():
    # .item() of single elements copies to the host without allocating on the (full) GPU
    return all(int(t[0].item()) == 1 and int(t[GIB // 2].item()) == 1 and int(t[-1].item()) == 1 for t in held)


def wait_for(path, seconds=90):
    end = time.time() + seconds
    while not os.path.exists(path):
        if time.time() > end:
            print(f"BAD {path} never appeared", flush=True)
            sys.exit(1)
        time.sleep(0.05)


role = sys.argv[1]
torch.cuda.init()
print(f"ready pid={os.getpid()} {info()}", flush=True)
if role == "stall":
    n1 = take(1)
    print(f"while the lock was held took {n1} GiB; {info()}", flush=True)
    open(sys.argv[2], "w").close()
    wait_for(sys.argv[3])
    n2 = take(1)
    print(f"after the lock was released took {n2} GiB; {info()}", flush=True)
    print(f"figures: {n1} GiB while stuck, {n2} GiB after", flush=True)
elif role == "once":
    n = take()
    print(f"took {n} GiB until OutOfMemoryError; {info()}", flush=True)
    print(f"figures: took {n} GiB", flush=True)
elif role == "hold":
    n = take(int(sys.argv[2]))
    print(f"took {n} GiB; {info()}", flush=True)
    open(sys.argv[3], "w").close()
    wait_for(sys.argv[4])
    print(f"figures: held {n} GiB", flush=True)
elif role == "fill":
    n1 = take()
    print(f"took {n1} GiB until OutOfMemoryError; {info()}", flush=True)
    open(sys.argv[2], "w").close()
    wait_for(sys.argv[3])
    n2 = take()
    print(f"then took {n2} GiB more until OutOfMemoryError; {info()}", flush=True)
    ok = intact()
    print(("ok" if ok else "BAD") + f" {len(held)} tensors hold their values", flush=True)
    if len(sys.argv) > 5:
        # A third phase after GO2: "fill" takes more again (a raised budget); "lower" expects a lowered quota to
        # refuse the next tensor without freeing anything, then frees everything and fills the new quota.
        go2, action = sys.argv[4], sys.argv[5]
        open(sys.argv[2] + "2", "w").close()
        wait_for(go2)
        if action == "fill":
            n3 = take()
            print(f"after the change took {n3} GiB more; {info()}", flush=True)
        else:
            before = len(held)
            n3 = take(1)
            kept = len(held) == before and intact()
            print(f"after the lower took {n3} GiB; still holding {len(held)} GiB, values "
                  f"{'intact' if kept else 'CHANGED'}; {info()}", flush=True)
            ok = ok and kept
            held.clear()
            torch.cuda.empty_cache()
            n4 = take()
            print(f"after freeing everything took {n4} GiB; {info()}", flush=True)
    print(f"figures: first {n1} GiB, then {n2} GiB more, total {len(held)} GiB", flush=True)
    sys.exit(0 if ok else 1)
else:
    print(f"BAD unknown role {role}")
    sys.exit(2)
