#!/usr/bin/env python3
"""Checks of `vramguard report --format folded|speedscope|html` and `diff --html` (tests/run.sh; python3, standard
library). Each subcommand prints `ok - ...` / `not ok - ...` lines (counted by tests/run.sh's `prog`) and exits 1 on a
failure.

  folded FILE REPORT.json          collapsed stacks: "frame;...;frame VALUE" per line, root first, as flamegraph.pl,
                                   inferno and speedscope read them; one line per site with live bytes, sums agree
  speedscope FILE REPORT.json      speedscope's file format, field by field (its file-format-schema.json: required
                                   keys, types, enums) and its rules (weights as long as samples, indices in range)
  html FILE [TEXT...]              static: well-formed, self-contained (no URL fetched), the expected texts present
  browser FILE OUTDIR [TEXT...]    headless Chromium renders the page: DOM (each TEXT in it; !TEXT: not in it),
                                   script errors, a screenshot not blank, the timeline's colours,
                                   the timelines' byte axes (as yticks), the growth's start line and
                                   projection where drawn (where they start and end, their colours)
  yticks FILE                      each timeline's byte axis: one unit, round ticks (0 and 1, 2 or 5 times a power
                                   of ten of the unit, evenly)
  png FILE                         print the screenshot's size and distinct colors (for docs)
"""
import decimal
import html.parser
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib

FAILED = 0


def ok(cond, name, detail=""):
    global FAILED
    if cond:
        print(f"ok - {name}")
    else:
        FAILED = 1
        print(f"not ok - {name}")
        if detail:
            for line in str(detail).splitlines()[:8]:
                print(f"# {line}")
    return cond


def report_sites(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)["sites"]


def check_folded(path, report):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    ok(lines[-1] == "", "folded: ends with a newline")
    lines = lines[:-1]
    bad = [l for l in lines if not re.fullmatch(r"[^\n;]+(;[^\n;]+)* [1-9][0-9]*", l)]
    ok(not bad, f"folded: {len(lines)} lines of 'frame;...;frame VALUE' (no empty frame, a positive integer)", bad)
    ok(not any(c < " " for l in lines for c in l), "folded: no control characters")
    sites = [s for s in report_sites(report) if s["live_bytes"]]
    ok(len(lines) == len(sites), f"folded: one line per site with live bytes ({len(sites)})")
    total = sum(int(l.rsplit(" ", 1)[1]) for l in lines)
    ok(total == sum(s["live_bytes"] for s in sites), f"folded: values sum to the live bytes ({total})")
    for s, l in zip(sites, lines):
        frames = l.rsplit(" ", 1)[0].split(";")
        py = s.get("python") or []
        if py:
            outer = py[-1]
            ok(frames[0] == f"{outer['file']}:{outer['line']} in {outer['function']}".replace(";", ","),
               f"folded: site {s['id']} starts at its outermost Python frame", frames[0])
            inner = py[0]
            want = f"{inner['file']}:{inner['line']} in {inner['function']}".replace(";", ",")
            ok(frames[len(py) - 1] == want, f"folded: site {s['id']}'s innermost Python frame comes after them",
               frames[len(py) - 1])
        elif s.get("frames"):
            f0 = s["frames"][0]
            ok(frames[-1].startswith(f0["symbol"] or f"{os.path.basename(f0['module'])}+0x{int(f0['module_offset'], 16):x}"),
               f"folded: site {s['id']} ends at its innermost native frame (module+offset without a name)",
               frames[-1])
        startup = ("_start", "__libc_start_main", "__libc_start_call_main", "start_thread", "clone", "clone3")
        ok(len(frames) == 1 or frames[0].split(" ")[0] not in startup,
           f"folded: site {s['id']}'s start-up frames folded into the root", frames[0])


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_speedscope(path, report):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    # FileFormat.File: required $schema, profiles, shared; known properties only
    ok(isinstance(doc, dict), "speedscope: the file is an object")
    for k in ("$schema", "profiles", "shared"):
        ok(k in doc, f"speedscope: File has '{k}' (required)")
    ok(doc.get("$schema") == "https://www.speedscope.app/file-format-schema.json", "speedscope: $schema is the enum value")
    extra = set(doc) - {"$schema", "shared", "profiles", "name", "activeProfileIndex", "exporter"}
    ok(not extra, "speedscope: File has only the schema's properties", extra)
    ok(isinstance(doc.get("name", ""), str) and isinstance(doc.get("exporter", ""), str), "speedscope: name, exporter strings")
    ok(is_num(doc.get("activeProfileIndex", 0)) and 0 <= doc.get("activeProfileIndex", 0) < len(doc["profiles"]),
       "speedscope: activeProfileIndex a number naming a profile")
    sh = doc["shared"]
    ok(isinstance(sh, dict) and isinstance(sh.get("frames"), list), "speedscope: shared.frames is an array (required)")
    frames = sh["frames"]
    bad = []
    for i, fr in enumerate(frames):
        if not isinstance(fr, dict) or not isinstance(fr.get("name"), str) or set(fr) - {"name", "file", "line", "col"} \
                or ("file" in fr and not isinstance(fr["file"], str)) or ("line" in fr and not is_num(fr["line"])) \
                or ("col" in fr and not is_num(fr["col"])):
            bad.append((i, fr))
    ok(not bad, f"speedscope: {len(frames)} frames, each {{name: string, file?: string, line?: number}}", bad[:3])
    keys = [json.dumps(fr, sort_keys=True) for fr in frames]
    ok(len(set(keys)) == len(keys), "speedscope: frames are shared (no duplicates)")
    ok(isinstance(doc["profiles"], list) and doc["profiles"], "speedscope: profiles is a non-empty array")
    units = {"bytes", "microseconds", "milliseconds", "nanoseconds", "none", "seconds"}
    sites = report_sites(report)
    for p in doc["profiles"]:
        req = {"endValue", "name", "samples", "startValue", "type", "unit", "weights"}
        ok(req <= set(p) and not set(p) - req, f"speedscope: profile '{p.get('name')}' has exactly the sampled keys")
        ok(p.get("type") == "sampled" and p.get("unit") in units and p.get("unit") == "bytes",
           "speedscope:   type 'sampled', unit 'bytes' (a ValueUnit)")
        ok(isinstance(p.get("name"), str) and is_num(p.get("startValue")) and is_num(p.get("endValue"))
           and p["endValue"] >= p["startValue"], "speedscope:   name a string, startValue <= endValue, numbers")
        samples, weights = p.get("samples", []), p.get("weights", [])
        ok(isinstance(samples, list) and isinstance(weights, list) and len(samples) == len(weights),
           f"speedscope:   {len(samples)} samples and as many weights")
        ok(all(isinstance(s, list) and s and all(isinstance(i, int) and 0 <= i < len(frames) for i in s)
               for s in samples), "speedscope:   every sample a non-empty stack of frame indices in range")
        ok(all(is_num(w) and w > 0 for w in weights), "speedscope:   weights positive numbers")
        ok(sum(weights) == p["endValue"] - p["startValue"], "speedscope:   the weights span startValue..endValue")
        live = p["name"].startswith("live")
        want = sum(s["live_bytes" if live else "total_bytes"] for s in sites)
        ok(sum(weights) == want, f"speedscope:   weights sum to the report's {'live' if live else 'total'} bytes")
    # root first: the first live sample's stack starts at the outermost Python frame of the largest site
    s0 = next(s for s in sites if s["live_bytes"])
    if s0.get("python"):
        root = frames[doc["profiles"][0]["samples"][0][0]]
        outer = s0["python"][-1]
        ok(root == {"name": outer["function"], "file": outer["file"], "line": outer["line"]},
           "speedscope: stacks are root first (the outermost Python frame, with file and line)", root)


class Parser(html.parser.HTMLParser):
    VOID = {"meta", "br", "hr", "img", "input", "link", "area", "base", "col", "embed", "source", "track", "wbr",
            "line", "path", "rect", "polyline"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.refs, self.scripts, self.text = [], [], [], 0, []

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k in ("src", "href", "xlink:href", "action", "srcset", "poster") and not (k == "href" and v.startswith("#")):
                self.refs.append(f"{tag} {k}={v}")
        if tag == "link":
            self.refs.append("link")
        if tag == "script":
            self.scripts += 1
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in self.VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            if tag in self.stack:
                while self.stack.pop() != tag:
                    pass
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def check_html(path, texts):
    with open(path, encoding="utf-8") as f:
        doc = f.read()
    p = Parser()
    p.feed(doc)
    p.close()
    ok(doc.startswith("<!DOCTYPE html>"), "html: a document")
    ok(not p.errors and not p.stack, "html: every element closed in order", p.errors[:3] + p.stack[:3])
    ok(not p.refs, "html: nothing fetched (no src, no href but #anchors, no <link>)", p.refs[:5])
    urls = [u for u in re.findall(r"(?:https?:)?//[\w.-]+\.[a-z]{2,}[^\s\"'<)]*", doc)
            if u not in ("http://www.w3.org/2000/svg",)]
    ok(not urls and "@import" not in doc and "url(" not in doc, "html: no URL, @import or url() in it", urls[:5])
    ok("default-src 'none'" in doc, "html: its Content-Security-Policy forbids fetching")
    ok(p.scripts == 2, f"html: only its own two inline scripts ({p.scripts})")
    text = "".join(p.text)
    for t in texts:
        ok(t in text, f"html: shows '{t}'")
    ok(os.path.getsize(path) < 4 << 20, f"html: {os.path.getsize(path)} bytes")


def check_yticks(doc, where):
    charts = re.findall(r'<svg class="timeline".*?</svg>', doc, re.S)
    ok(charts, f"{where}: a usage timeline")
    for c in charts:
        ticks = re.findall(r'<text class="ytick"[^>]*>([^<]*)</text>', c)
        name = f"{where}: the byte axis {' | '.join(ticks)}"
        m = [re.fullmatch(r"((?:0|[1-9][0-9]*)(?:\.[0-9])?) (B|KiB|MiB|GiB|TiB|PiB)", t) for t in ticks]
        if not ok(2 <= len(ticks) <= 7 and all(m), f"{name}: 2 to 7 ticks, each 'NUMBER UNIT'"):
            continue
        ok(len({x.group(2) for x in m}) == 1, f"{name}: one unit")
        v = [decimal.Decimal(x.group(1)) for x in m]
        step = v[1] - v[0]
        mant = step.scaleb(-step.adjusted()) if step > 0 else 0
        ok(v[0] == 0 and step > 0 and all(v[i] == i * step for i in range(len(v))) and mant in (1, 2, 5),
           f"{name}: from 0 in even steps of 1, 2 or 5 times a power of ten")
        ok(len({len(x.group(1).partition(".")[2]) for x in m[1:]}) == 1, f"{name}: as many decimals on each")


# Okabe and Ito's palette ("Color Universal Design"), as getComputedStyle writes it.
OKABE_ITO = {"rgb(230, 159, 0)": "orange", "rgb(86, 180, 233)": "sky blue", "rgb(0, 158, 115)": "bluish green",
             "rgb(240, 228, 66)": "yellow", "rgb(0, 114, 178)": "blue", "rgb(213, 94, 0)": "vermillion",
             "rgb(204, 121, 167)": "reddish purple", "rgb(0, 0, 0)": "black"}


def check_colors(root):
    m = re.search(r'data-selftest-colors="([^"]*)"', root)
    if not ok(m is not None, "browser: the page reported its timeline's colours", root):
        return
    v = m.group(1).split("|")
    c = dict(zip(v[0::2], v[1::2]))
    ok(c.get("quota") in OKABE_ITO and c.get("denial") in OKABE_ITO and c["quota"] != c["denial"],
       f"browser: the quota line ({OKABE_ITO.get(c.get('quota'), c.get('quota'))}) and the denial marks "
       f"({OKABE_ITO.get(c.get('denial'), c.get('denial'))}) in two colours of Okabe and Ito's palette", c)
    ok(c.get("quota-key") == c.get("quota") and c.get("denial-key") == c.get("denial") == c.get("denial-line"),
       "browser: the legend's keys in the colours of what they name", c)


def check_growth_marks(doc, where):
    """The growth drawn on each usage timeline: the start line inside the plot, the projection rising from the last
    usage point to the quota line (data-reaches="quota") or to the plot's right edge below it ("edge"), both in
    Okabe and Ito's colours that the rest of the timeline does not use, with legend keys of the same colours."""
    taken = {"#0072b2", "#d55e00", "#e69f00", "#cc79a7"}        # used, quota, soft limit, denials (report/html.c)
    hexes = {"#e69f00", "#56b4e9", "#009e73", "#f0e442", "#0072b2", "#d55e00", "#cc79a7", "#000000"}
    for c in re.findall(r'<svg class="timeline".*?</svg>\s*<p class="legend">.*?</p>', doc, re.S):
        used = re.search(r'<polyline class="used" points="([^"]*)"', c)
        quota = re.search(r'<g class="quota">.*?<line x1="([0-9.]+)" x2="([0-9.]+)" y1="([0-9.]+)"', c)
        last = [float(v) for v in used.group(1).split()[-1].split(",")] if used else None
        for m in re.finditer(r'<g class="gstart" data-site="[0-9]+"><title>[^<]*</title><line x1="([0-9.]+)" '
                             r'x2="[0-9.]+" y1="[0-9]+" y2="[0-9]+" stroke="(#[0-9A-Fa-f]{6})"', c):
            x, col = float(m.group(1)), m.group(2).lower()
            ok(82 <= x <= 940, f"{where}: the growth start line inside the plot (x {x})")
            ok(col in hexes and col not in taken, f"{where}: the growth start line in a palette colour of its own ({col})")
            ok(f'style="background:{m.group(2)}"></span>growth started' in c, f"{where}: its legend key in its colour")
        for m in re.finditer(r'<g class="proj" data-forecast-s="[0-9]+" data-reaches="(quota|edge)"><title>[^<]*'
                             r'</title><line x1="([0-9.]+)" y1="([0-9.]+)" x2="([0-9.]+)" y2="([0-9.]+)" '
                             r'stroke="(#[0-9A-Fa-f]{6})"', c):
            reaches, (x1, y1, x2, y2), col = m.group(1), map(float, m.group(2, 3, 4, 5)), m.group(6).lower()
            if not ok(last is not None and quota is not None, f"{where}: a projection needs usage and a quota"):
                continue
            qy, right = float(quota.group(3)), float(quota.group(2))
            ok(abs(x1 - last[0]) < 0.15 and abs(y1 - last[1]) < 0.15,
               f"{where}: the projection starts at the last usage point ({x1},{y1} vs {last})")
            ok(x2 > x1 and y2 < y1, f"{where}: the projection rises to the right ({x1},{y1} -> {x2},{y2})")
            if reaches == "quota":
                ok(abs(y2 - qy) < 0.15 and x2 <= right, f"{where}: the projection ends on the quota line ({y2} vs {qy})")
            else:
                ok(abs(x2 - right) < 0.15 and y2 > qy, f"{where}: the projection ends at the right edge, below the "
                   f"quota ({x2},{y2}; quota at y {qy})")
            ok(col in hexes and col not in taken, f"{where}: the projection in a palette colour of its own ({col})")
            ok(f'style="background:{m.group(6)}"></span>projection' in c, f"{where}: its legend key in its colour")


def png_info(path):
    """(width, height, distinct colors, non-white share, red share) of an 8-bit RGB(A) PNG, with zlib only."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w = 8, [], 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            if depth != 8 or ctype not in (2, 6):
                raise ValueError(f"unsupported PNG depth {depth} color type {ctype}")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + n
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    prev = bytearray(stride)
    colors, nonwhite, red, rows = set(), 0, 0, min(h, 1400)
    for y in range(rows):
        ft = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if ft == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif ft == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif ft == 3:
            for i in range(stride):
                line[i] = (line[i] + ((line[i - bpp] if i >= bpp else 0) + prev[i]) // 2) & 255
        elif ft == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        for x in range(0, stride, bpp * 2):
            px = bytes(line[x:x + 3])
            colors.add(px)
            if px != b"\xff\xff\xff":
                nonwhite += 1
            if px[0] > 170 and px[1] < 90 and px[2] < 90:
                red += 1
    total = rows * ((w + 1) // 2)
    return w, h, len(colors), nonwhite / total, red / total


def check_browser(path, outdir, texts):
    chrome = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chrome:
        print("ok - browser # SKIP chromium not installed (bash scripts/setup.sh installs Debian's chromium)")
        return
    os.makedirs(outdir, exist_ok=True)
    base = [chrome, "--headless", "--disable-gpu", "--no-first-run", "--hide-scrollbars", "--mute-audio",
            f"--user-data-dir={os.path.join(outdir, 'profile')}"]
    if os.geteuid() == 0:
        base.append("--no-sandbox")     # Chromium refuses to run as root with its sandbox
    url = "file://" + os.path.abspath(path)
    env = dict(os.environ, HOME=outdir)
    try:
        dom = subprocess.run(base + ["--virtual-time-budget=3000", "--dump-dom", url + "#vg-selftest"],
                             capture_output=True, text=True, timeout=120, env=env)
    except subprocess.TimeoutExpired:
        ok(False, "browser: chromium --dump-dom finished within 120 s")
        return
    ok(dom.returncode == 0 and "<html" in dom.stdout, "browser: chromium rendered the page (--dump-dom)",
       dom.stderr[-800:])
    d = dom.stdout
    with open(os.path.join(outdir, "dom.html"), "w", encoding="utf-8") as f:
        f.write(d)
    m = re.search(r"<html[^>]*>", d)
    root = m.group(0) if m else ""
    ok('data-js="ran"' in root, "browser: its script ran to the end", root)
    ok("data-js-errors" not in root, "browser: no script errors (window.onerror, console.error)", root)
    ok(re.search(r'data-selftest-sort="[0-9]+"', root) is not None, "browser: a table sorts on a click", root)
    ok(re.search(r'data-selftest-zoom="[1-9][0-9]*"', root) is not None, "browser: the icicle graph zooms on a click")
    ok(len(re.findall(r"<script\b", d)) == 2, "browser: no script element but its own two (escaping held)")
    for t in texts:
        if t.startswith("!"):
            ok(t[1:] not in d, f"browser: the rendered DOM no longer shows '{t[1:]}'")
        else:
            ok(t in d, f"browser: the rendered DOM shows '{t}'")
    if '<svg class="timeline"' in d:
        check_yticks(d, "browser")
    if 'class="quota"' in d and 'class="denial"' in d:
        check_colors(root)
    if 'class="gstart"' in d or 'class="proj"' in d:
        check_growth_marks(d, "browser")
    shot = os.path.join(outdir, "screenshot.png")
    if os.path.exists(shot):
        os.unlink(shot)
    r = subprocess.run(base + ["--window-size=1280,1400", f"--screenshot={shot}", url], capture_output=True,
                       text=True, timeout=120, env=env)
    if not ok(r.returncode == 0 and os.path.exists(shot), "browser: a screenshot", r.stderr[-800:]):
        return
    w, h, ncolors, nonwhite, red = png_info(shot)
    ok(w == 1280 and h == 1400, f"browser: screenshot {w}x{h}")
    ok(ncolors >= 16 and nonwhite > 0.03, f"browser: screenshot not blank ({ncolors} colors, "
       f"{100 * nonwhite:.1f}% not white)")
    print(f"# screenshot {shot}: {ncolors} colors, {100 * nonwhite:.1f}% not white, {100 * red:.2f}% red")


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    cmd = argv[1]
    if cmd == "folded":
        check_folded(argv[2], argv[3])
    elif cmd == "speedscope":
        check_speedscope(argv[2], argv[3])
    elif cmd == "html":
        check_html(argv[2], argv[3:])
    elif cmd == "browser":
        check_browser(argv[2], argv[3], argv[4:])
    elif cmd == "yticks":
        with open(argv[2], encoding="utf-8") as f:
            check_yticks(f.read(), os.path.basename(argv[2]))
    elif cmd == "png":
        print(png_info(argv[2]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv))
