#!/usr/bin/env python3
"""Clients for the command's HTTP server (cli/http.c), as tests/sections/http.sh and bench/http_latency.py use them.
Standard library only.

    http_clients.py flood HOST PORT [--idle N] [--trickle N] [--noread N] [--within S] [--token FILE] [--post BODY]
                          [--target PATH] [--noread-target PATH] [--drops]
        N clients that never finish their request (idle: connected, nothing sent; trickling: a request line and a
        header that never ends, a byte every 0.1 s) and N that send a whole GET (of --noread-target, default
        /metrics) and never read the answer (a receive buffer of 4 KiB). Then one real request (GET of --target,
        default /metrics, or POST / with BODY and the bearer token of FILE) must be answered within S seconds
        (default 5): the line "answered: STATUS, N bytes, in S s; ..." or "not answered within S s: WHY; ...". Then,
        with --drops, how each idle and trickling client ended ("dropped: ..."): the server must close each; with
        --resets, each that never read must be reset ("not reading: ..."), for an answer larger than the socket
        buffers whose 2 s were up.
    http_clients.py replay HOST PORT KIND DIR... [--token FILE] [--every N]
        Every file of the DIRs sent at the server over its own connection, all of them in flight together (KIND http:
        the file is tests/fuzz/fuzz_http.c's input, two bytes then the raw request; KIND webhook: the file is the
        body of a POST / with the token), and after every
        N of them (default 8) one real request (GET /metrics; for webhook also a POST of a valid payload), which
        must get its answer. Prints "replayed N inputs: M answered, K closed without an answer; real requests R of R
        answered" and each real request that was not, with why.

Exit status 0 when the real requests were answered as expected, 1 otherwise. A bound of 30 s on each wait only
stops a hang; the one figure asserted is flood's --within, the looser bound of issue 25 item 5."""
import os
import select
import socket
import sys
import threading
import time

HANG = 30.0
GET = b"GET /metrics HTTP/1.1\r\nHost: vramguard\r\n\r\n"


def get(target):
    return b"GET " + target.encode() + b" HTTP/1.1\r\nHost: vramguard\r\n\r\n"
GOOD_PAYLOAD = (b'{"version":"4","status":"firing","alerts":[{"status":"firing","labels":'
                b'{"alertname":"Replay","region":"replay-none","gpu":"0"}}]}')


def post(body, token):
    auth = b"Authorization: Bearer " + token.encode() + b"\r\n" if token else b""
    return (b"POST / HTTP/1.1\r\nHost: vramguard\r\nContent-Type: application/json\r\n" + auth +
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def exchange(host, port, request, timeout):
    """One request on a connection of its own: (status line, body bytes, seconds) or (None, why, seconds)."""
    t0 = time.monotonic()
    try:
        s = socket.create_connection((host, port), timeout=timeout)
    except OSError as e:
        return None, "connect: %s" % e, time.monotonic() - t0
    data = b""
    try:
        s.settimeout(max(0.01, timeout - (time.monotonic() - t0)))
        s.sendall(request)
        while True:
            s.settimeout(max(0.01, timeout - (time.monotonic() - t0)))
            c = s.recv(1 << 16)
            if not c:
                break
            data += c
    except socket.timeout:
        return None, "no whole answer after %.1f s (%d bytes)" % (timeout, len(data)), time.monotonic() - t0
    except OSError as e:
        return None, "%s after %d bytes" % (e, len(data)), time.monotonic() - t0
    finally:
        s.close()
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return None, "not an HTTP answer: %r" % data[:80], time.monotonic() - t0
    return head.split(b"\r\n")[0].decode(errors="replace"), body, time.monotonic() - t0


def open_clients(host, port, n, rcvbuf=None, within=3.0):
    """n connections started at once (non-blocking): the list of those the server's side took within `within`."""
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.setblocking(False)
        s.connect_ex((host, port))
        socks.append(s)
    done, pending, end = [], list(socks), time.monotonic() + within
    while pending and time.monotonic() < end:
        _, w, _ = select.select([], pending, [], max(0.0, end - time.monotonic()))
        for s in w:
            pending.remove(s)
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                done.append(s)
            else:
                s.close()
    for s in pending:
        s.close()
    return done


def ended(s):
    """How the server ended a connection whose client sent and never read: 'reset', 'eof' (the whole answer, then
    the end) or None while it is still open."""
    try:
        while True:
            c = s.recv(1 << 16)
            if not c:
                return "eof"
    except (BlockingIOError, InterruptedError):
        return None
    except ConnectionResetError:
        return "reset"
    except OSError:
        return "reset"


def flood(args):
    host, port = args[0], int(args[1])
    opt = {"--idle": "0", "--trickle": "0", "--noread": "0", "--within": "5", "--token": None, "--post": None,
           "--target": "/metrics", "--noread-target": "/metrics"}
    drops, resets = "--drops" in args, "--resets" in args
    rest = [a for a in args[2:] if a not in ("--drops", "--resets")]
    for k, v in zip(rest[::2], rest[1::2]):
        opt[k] = v
    n_idle, n_trickle, n_noread = int(opt["--idle"]), int(opt["--trickle"]), int(opt["--noread"])
    within = float(opt["--within"])
    token = open(opt["--token"]).read().strip() if opt["--token"] else None
    want = n_idle + n_trickle + n_noread
    idle = open_clients(host, port, n_idle)
    trickle = open_clients(host, port, n_trickle)
    noread = open_clients(host, port, n_noread, rcvbuf=4096)
    for s in trickle:
        try:
            s.send(b"GET /metrics HTTP/1.1\r\nX-Slow: ")
        except OSError:
            pass
    for s in noread:
        try:
            s.send(get(opt["--noread-target"]))
        except OSError:
            pass
    stop = threading.Event()
    gone = set()

    def trickler():
        while not stop.wait(0.1):
            for s in trickle:
                if s in gone:
                    continue
                try:
                    s.send(b"a")
                except OSError:
                    gone.add(s)
    t = threading.Thread(target=trickler, daemon=True)
    t.start()
    got = len(idle) + len(trickle) + len(noread)
    request = post(opt["--post"].encode(), token) if opt["--post"] is not None else get(opt["--target"])
    status, body, took = exchange(host, port, request, within)
    ok = status is not None
    if ok:
        print("answered: %s, %d bytes, in %.2f s; %d of %d flooding clients connected" % (status, len(body), took,
                                                                                            got, want))
    else:
        print("not answered within %.0f s: %s; %d of %d flooding clients connected" % (within, body, got, want))
    if drops:
        # Each client that never finishes its request must be closed by the server (EOF or reset: its 2 s are up).
        end = time.monotonic() + HANG
        open_ = {s: None for s in idle + trickle}
        while any(v is None for v in open_.values()) and time.monotonic() < end:
            r, _, _ = select.select([s for s, v in open_.items() if v is None], [], [], 0.2)
            for s in r:
                open_[s] = ended(s) or open_[s]
        stop.set()
        n_i = sum(1 for s in idle if open_[s])
        n_t = sum(1 for s in trickle if open_[s])
        print("dropped: idle %d of %d, trickling %d of %d" % (n_i, len(idle), n_t, len(trickle)))
        ok = ok and n_i == len(idle) and n_t == len(trickle) and got == want
    if resets:
        # Those that never read are not read here either until the server has ended them: POLLERR or POLLHUP
        # (never POLLIN, which their unread answer keeps set).
        end = time.monotonic() + HANG
        poller, fds, how = select.poll(), {s.fileno(): s for s in noread}, {}
        for s in noread:
            poller.register(s, 0)
        while len(how) < len(noread) and time.monotonic() < end:
            for fd, ev in poller.poll(200):
                if ev & (select.POLLERR | select.POLLHUP) and fds[fd] not in how:
                    how[fds[fd]] = ended(fds[fd])
                    poller.unregister(fd)
        n_r = sum(1 for v in how.values() if v == "reset")
        print("not reading: %d of %d reset before their whole answer (%s)" % (
            n_r, len(noread), ", ".join(sorted({str(v) for v in how.values()})) or "none in %.0f s" % HANG))
        ok = ok and n_r == len(noread) and got == want
    stop.set()
    for s in idle + trickle + noread:
        s.close()
    return 0 if ok else 1


def replay(args):
    host, port, kind = args[0], int(args[1]), args[2]
    dirs, token, every = [], None, 8
    i = 3
    while i < len(args):
        if args[i] == "--token":
            token = open(args[i + 1]).read().strip()
            i += 2
        elif args[i] == "--every":
            every = int(args[i + 1])
            i += 2
        else:
            dirs.append(args[i])
            i += 1
    files = sorted(os.path.join(d, f) for d in dirs if os.path.isdir(d) for f in os.listdir(d)
                   if not f.startswith(".") and os.path.isfile(os.path.join(d, f)))
    inputs = [open(f, "rb").read() for f in files]
    if kind == "webhook":
        inputs = [post(b, token) for b in inputs]
    else:
        inputs = [b[2:] for b in inputs]    # fuzz_http's two bytes of choices first: the request is the rest
    socks, answered, closed, real, failed = [], 0, 0, 0, []

    def real_requests():
        out = [("GET /metrics", GET, "200")]
        if kind == "webhook":
            out.append(("POST of a valid payload", post(GOOD_PAYLOAD, token), "200"))
        for what, req, code in out:
            status, body, _ = exchange(host, port, req, HANG)
            if status is None or status.split(" ")[1:2] != [code]:
                failed.append("%s: %s" % (what, status or body))
    for n, data in enumerate(inputs, 1):
        try:
            s = socket.create_connection((host, port), timeout=HANG)
            s.setblocking(False)
            try:
                s.send(data)    # what the socket takes at once: the rest of a large input is left unsent
            except (BlockingIOError, OSError):
                pass
            socks.append(s)
        except OSError as e:
            failed.append("input %s: connect: %s" % (files[n - 1], e))
        if n % every == 0:
            real += 1
            real_requests()
    real += 1
    real_requests()
    # Every connection ends: answered (something came back) or closed by the server (its 2 s, or refused).
    end = time.monotonic() + HANG
    left = {s: b"" for s in socks}
    while left and time.monotonic() < end:
        r, _, _ = select.select(list(left), [], [], 0.2)
        for s in r:
            try:
                c = s.recv(1 << 16)
            except OSError:
                c = b""
                left[s] = left[s] or b""
            if c:
                left[s] += c
                continue
            if left[s]:
                answered += 1
            else:
                closed += 1
            del left[s]
            s.close()
    for s in left:
        failed.append("a replayed connection still open after %.0f s" % HANG)
        s.close()
    per = 2 if kind == "webhook" else 1
    print("replayed %d inputs: %d answered, %d closed without an answer; real requests %d of %d answered" %
          (len(inputs), answered, closed, real * per - len([f for f in failed if not f.startswith("a replayed")
                                                          and not f.startswith("input")]), real * per))
    for f in failed:
        print("  " + f)
    return 1 if failed or not inputs else 0


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] not in ("flood", "replay"):
        sys.exit(__doc__)
    sys.exit(flood(sys.argv[2:]) if sys.argv[1] == "flood" else replay(sys.argv[2:]))
