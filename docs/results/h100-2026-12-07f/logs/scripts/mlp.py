"""Memory-level parallelism of a SASS listing: loads issued before the first consumer (scratch)."""
import re, sys
from collections import Counter
LINE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")
def parse(path):
    return [m.group(1) for m in map(LINE.search, open(path)) if m]
def regs_of(op):
    return set(re.findall(r"\bR(\d+)\b", op))
def analyse(path):
    ins = parse(path)
    rows = []
    for i, t in enumerate(ins):
        m = re.match(r"(@!?P\d+\s+)?(LDG[.\w]*)\s+R(\d+),", t)
        if not m: continue
        w = 4 if ".128" in m.group(2) else 2 if ".64" in m.group(2) else 1
        dst = {str(int(m.group(3)) + k) for k in range(w)}
        use = None
        for j in range(i + 1, len(ins)):
            body = re.sub(r"^@!?P\d+\s+", "", ins[j])
            parts = body.split(None, 1)
            if len(parts) < 2: continue
            ops = parts[1].split(",")
            srcs = set().union(*(regs_of(o) for o in ops[1:])) if not parts[0].startswith(("ST", "RED", "ATOM")) else set().union(*(regs_of(o) for o in ops))
            if dst & srcs:
                use = j; break
            if dst & regs_of(ops[0]) and not parts[0].startswith(("ST", "RED", "ATOM")):
                break  # overwritten before use
        rows.append((i, use, m.group(2)))
    groups, cur, first = [], [], None
    for i, u, _ in rows:
        if first is not None and i > first:
            groups.append(len(cur)); cur, first = [], None
        cur.append(i)
        if u is not None:
            first = u if first is None else min(first, u)
    groups.append(len(cur))
    ops = Counter(re.sub(r"^@!?P\d+\s+", "", t).split()[0] for t in ins)
    print(f"{path.split('/')[-1]}: {len(ins)} instructions, {len(rows)} LDG; loads issued before their group's "
          f"first consumer: {groups}")
    return ops
a = analyse(sys.argv[1]); b = analyse(sys.argv[2])
d = {k: b[k] - a[k] for k in set(a) | set(b) if a[k] != b[k]}
print("second - first opcodes:", dict(sorted(d.items(), key=lambda x: -abs(x[1]))[:20]))
