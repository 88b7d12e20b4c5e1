"""A PyTorch training loop with a real slow leak, for tests/gpu/growth.sh (issue 29's GPU acceptance).

    python3 growth_torch.py run STEP_S        the job, under the preload with a quota and VRAMGUARD_REPORT_ON=growth
    python3 growth_torch.py check DIR OUT     judges the reports in DIR against the job's output OUT

The job trains a small MLP with SGD (PyTorch's caching allocator on, as users run it) and, every step, appends the
activation of a 8192-row batch (32 MiB) to a list that nobody reads: the leak of a model that keeps its history.
The kept activation is larger than any block of the training step (2 to 4 MiB, in 20 MiB segments), so the caching
allocator takes a new 32 MiB segment from the driver for it at every step, at the line marked "the leak"; the
training's own segments are reused. The step runs on a schedule of its own (a late step is caught up), so the
leak's rate is steady, until the quota refuses a segment and PyTorch raises OutOfMemoryError.

The job prints "leak_line N" (the line that appends), "oom_at NS" (CLOCK_REALTIME when OutOfMemoryError came) and
"steps N", and "start_at NS" first. check finds the first report with reason "growth" and passes when:
- its fastest growing site on GPU 0 has this file's leak line as its innermost Python frame;
- no site of the training step (its other lines) is growing;
- its forecast for GPU 0 is within 20 % of the time from the report to the OutOfMemoryError.
It prints one "figures:" line, and "BAD ..." lines for what failed.
"""
import glob
import json
import os
import sys
import time

MIB = 1 << 20


def run(step_s):
    print(f"start_at {time.time_ns()}", flush=True)
    import torch

    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(512, 1024, device=dev)
    y = torch.randn(512, 1024, device=dev)
    probe = torch.randn(8192, 1024, device=dev)         # the batch whose activation is kept: 32 MiB a step
    first = model[0]
    kept = []
    leak_line = None
    steps = 0
    deadline = time.monotonic()
    try:
        while True:
            opt.zero_grad(set_to_none=False)
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            leak_line = sys._getframe().f_lineno + 1
            kept.append(torch.relu(torch.addmm(first.bias.detach(), probe, first.weight.detach().t())))  # the leak
            torch.cuda.synchronize()
            steps += 1
            deadline += step_s
            time.sleep(max(0.0, deadline - time.monotonic()))
    except torch.OutOfMemoryError as e:
        oom = time.time_ns()
        print(f"oom_at {oom}")
        print(f"oom_message {str(e).splitlines()[0][:200]}")
    print(f"leak_line {leak_line}")
    print(f"steps {steps}")
    print(f"kept_mib {len(kept) * 32}")
    sys.stdout.flush()
    return 0


def field(text, key):
    for line in text.splitlines():
        if line.startswith(key + " "):
            return line[len(key) + 1:]
    return None


def check(folder, out_file):
    bad = []
    with open(out_file, encoding="utf-8", errors="replace") as f:
        out = f.read()
    oom, line, start = field(out, "oom_at"), field(out, "leak_line"), field(out, "start_at")
    if oom is None or line is None:
        print("BAD the job printed no oom_at or leak_line: no OutOfMemoryError came")
        return 1
    oom_ns, line = int(oom), int(line)
    reports = []
    for p in glob.glob(os.path.join(folder, "*.json")):
        with open(p, encoding="utf-8") as f:
            reports.append(json.load(f))
    growth = sorted((r for r in reports if r.get("reason") == "growth"), key=lambda r: r["time_ns"])
    if not growth:
        print(f"BAD no report with reason growth among {len(reports)} reports")
        return 1
    r = growth[0]
    d = next(d for d in r["devices"] if d["ordinal"] == 0)
    sites = {s["id"]: s for s in r["sites"]}
    gsites = [g for g in d.get("growth", {}).get("sites", []) if g.get("growing")]
    if not gsites:
        print("BAD the growth report's GPU 0 has no growing site")
        return 1
    top = max(gsites, key=lambda g: g.get("bytes_per_hour") or 0)
    py = sites.get(top["site"], {}).get("python") or []
    here = os.path.basename(__file__)
    named = f"{os.path.basename(py[0]['file'])}:{py[0]['line']} in {py[0]['function']}" if py else "no Python frame"
    if not py or os.path.basename(py[0]["file"]) != here or py[0]["line"] != line:
        bad.append(f"the fastest growing site is {named}, not {here}:{line}")
    for g in gsites:
        p = sites.get(g["site"], {}).get("python") or []
        if g is not top and p and os.path.basename(p[0]["file"]) == here and p[0]["line"] != line:
            bad.append(f"a line of the training step grows too: {here}:{p[0]['line']}")
    fc = d.get("forecast_seconds")
    actual = (oom_ns - r["time_ns"]) / 1e9
    if fc is None:
        bad.append("the growth report has no forecast for GPU 0")
        err = None
    else:
        err = (fc - actual) / actual
        if abs(err) > 0.20:
            bad.append(f"forecast {fc} s against {actual:.1f} s to the OutOfMemoryError: {err * 100:+.1f} %")
    rate = top.get("bytes_per_hour") or 0
    print(f"figures: growth report {len(growth)} of {len(reports)} reports, written "
          f"{(r['time_ns'] - int(start or 0)) / 1e9:.1f} s after the job started; site {top['site']} "
          f"({named}) growing at {rate / MIB / 3600:.1f} MiB/s; used {d['used_bytes'] / MIB:.0f} MiB of "
          f"{(d.get('quota_bytes') or 0) / MIB:.0f} MiB; forecast {fc} s, OutOfMemoryError {actual:.1f} s after "
          f"the report" + (f" ({err * 100:+.1f} %)" if err is not None else ""))
    for b in bad:
        print("BAD " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "run":
        sys.exit(run(float(sys.argv[2])))
    if len(sys.argv) == 4 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3]))
    print(__doc__, file=sys.stderr)
    sys.exit(2)
