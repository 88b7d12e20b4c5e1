#!/usr/bin/env python3
"""Scrape latency of `vramguard exporter --listen` while clients idle or trickle at it (issue 25, item 5).

    python3 bench/http_latency.py [--scrapes N] [--every S] [--timeout S] [--idle 0,8,64] NAME=PATH/vramguard...

For each command given (e.g. old=build-old/vramguard new=build/vramguard) and each count K of --idle: an exporter
on 127.0.0.1 (port 0) over an empty directory; K clients kept connected to it, half idle (nothing sent) and half
trickling (a request line, then a header a byte every 0.1 s), each reconnected as soon as the server drops it, as
a local user would keep the attack up; then N scrapes one after the other, one every --every seconds (default 0.05, so that
200 scrapes span several of the clients' 2 s deadlines), each GET /metrics timed from connect to the last byte and
given at most --timeout seconds (default 20; a scrape past it counts as that long and as timed out). Prints one line per
command and count: p50, p99 and max in milliseconds, and how many scrapes timed out. Standard library only."""
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time

GET = b"GET /metrics HTTP/1.1\r\nHost: bench\r\n\r\n"


def scrape(port, timeout):
    t0 = time.monotonic()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        s.sendall(GET)
        n = 0
        while True:
            s.settimeout(max(0.001, timeout - (time.monotonic() - t0)))
            c = s.recv(1 << 16)
            if not c:
                break
            n += len(c)
        s.close()
        return time.monotonic() - t0, n > 0
    except OSError:
        return timeout, False


class Attack:
    """K connections kept up: half idle, half trickling; a dropped one is opened again at once."""

    def __init__(self, port, k):
        self.port, self.k, self.stop, self.socks = port, k, threading.Event(), {}
        self.reconnects = 0
        for i in range(k):
            self.open(i)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def open(self, i):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", self.port))
        self.socks[i] = (s, i % 2 == 1, False)     # socket, trickling, request line sent

    def run(self):
        last = time.monotonic()
        while not self.stop.is_set():
            fds = {s: i for i, (s, _, _) in self.socks.items()}
            r, w, _ = select.select(list(fds), [s for s, t, sent in self.socks.values() if t and not sent], [], 0.05)
            for s in w:
                i = fds[s]
                try:
                    s.send(b"GET /metrics HTTP/1.1\r\nX-Slow: ")
                    self.socks[i] = (s, True, True)
                except OSError:
                    pass
            for s in r:     # readable: the server closed it (or answered): open it again
                i = fds[s]
                try:
                    if s.recv(1 << 16):
                        continue
                except BlockingIOError:
                    continue
                except OSError:
                    pass
                s.close()
                self.reconnects += 1
                self.open(i)
            if time.monotonic() - last >= 0.1:
                last = time.monotonic()
                for s, t, sent in list(self.socks.values()):
                    if t and sent:
                        try:
                            s.send(b"a")
                        except OSError:
                            pass

    def close(self):
        self.stop.set()
        self.thread.join()
        for s, _, _ in self.socks.values():
            s.close()


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def main(argv):
    scrapes, every, timeout, idle, cmds = 200, 0.05, 20.0, [0, 8, 64], []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--scrapes", "--every", "--timeout", "--idle"):
            v = argv[i + 1]
            i += 2
            if a == "--scrapes":
                scrapes = int(v)
            elif a == "--every":
                every = float(v)
            elif a == "--timeout":
                timeout = float(v)
            else:
                idle = [int(x) for x in v.split(",")]
            continue
        if "=" not in a:
            sys.exit(__doc__)
        cmds.append(a.split("=", 1))
        i += 1
    if not cmds:
        sys.exit(__doc__)
    print("%-6s %6s %8s %10s %10s %10s %9s %11s" % ("server", "idle", "scrapes", "p50 ms", "p99 ms", "max ms",
                                                   "timed out", "reconnects"))
    for name, path in cmds:
        for k in idle:
            d = tempfile.mkdtemp(prefix="vg-bench-http.")
            err = open(os.path.join(d, "err"), "w+")
            p = subprocess.Popen([path, "exporter", "--listen", "127.0.0.1:0", "--dir", d], stderr=err)
            port = None
            for _ in range(200):
                err.seek(0)
                t = err.read()
                if "listening on http://127.0.0.1:" in t:
                    port = int(t.split("http://127.0.0.1:")[1].split("/")[0])
                    break
                time.sleep(0.05)
            if port is None:
                sys.exit("bench: %s did not start: %s" % (path, t))
            attack = Attack(port, k)
            time.sleep(0.5 if k else 0)     # the attack under way before the first scrape
            took, bad = [], 0
            for _ in range(scrapes):
                s, ok = scrape(port, timeout)
                took.append(s * 1000)
                bad += not ok
                time.sleep(max(0.0, every - s))
            attack.close()
            p.terminate()
            p.wait()
            err.close()
            for f in os.listdir(d):
                os.unlink(os.path.join(d, f))
            os.rmdir(d)
            print("%-6s %6d %8d %10.1f %10.1f %10.1f %9d %11d" % (name, k, scrapes, pct(took, 50), pct(took, 99),
                                                                 max(took), bad, attack.reconnects))
            sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
