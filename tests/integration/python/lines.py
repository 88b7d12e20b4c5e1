"""Line-table vectors for tests/integration/python/pylines.c (run under each CPython by tests/sections/python.sh):
one line per code object, "VERSION FIRSTLINENO TABLEHEX OFFSET:LINE ...", the lines as this interpreter itself
maps each instruction's byte offset (co_lines() on 3.10 and later, dis.findlinestarts on 3.9), 0 for none."""
import dis
import sys

SRC = '''
def small(a):
    return a + 1

def loops(n):
    t = 0
    for i in range(n):
        if i % 3 == 0:
            t += i
        else:
            t -= (i *
                  2)
    return t

def long_body(x):
''' + "".join(f"    x = x + {i}\n" for i in range(300)) + '''
    return x

def far_jump(x):
    y = x''' + "\n" * 400 + '''
    return y

class K:
    def method(self, a, b):
        try:
            return a / b
        except ZeroDivisionError:
            return None

lam = lambda q: [z * 2 for z in q]
'''


def codes(co):
    yield co
    for c in co.co_consts:
        if hasattr(c, "co_code"):
            yield from codes(c)


def vectors(co):
    n = len(co.co_code)
    line = [0] * (n // 2)
    if sys.version_info >= (3, 10):
        for start, end, ln in co.co_lines():
            for o in range(start, end, 2):
                if o // 2 < len(line):
                    line[o // 2] = ln or 0
        table = co.co_linetable
    else:
        starts = dict(dis.findlinestarts(co))
        cur = co.co_firstlineno
        for o in range(0, n, 2):
            cur = starts.get(o, cur)
            line[o // 2] = cur
        table = co.co_lnotab
    # Sample the offsets: every instruction of small bodies, a stride through long ones.
    step = 1 if len(line) < 400 else 7
    pairs = " ".join(f"{2 * i}:{line[i]}" for i in range(0, len(line), step))
    return f"{sys.version_info[0] << 8 | sys.version_info[1]:#06x} {co.co_firstlineno} {table.hex() or '-'} {pairs}"


for c in codes(compile(SRC, "<vectors>", "exec")):
    print(vectors(c))
