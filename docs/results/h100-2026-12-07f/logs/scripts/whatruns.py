"""Compare the cubins a card loaded (probe: cutile JIT cache + cuda.tile sqlite cache) with
runtime_ir's sm_90 SASS of the same cases (scratch analysis)."""
import sqlite3, sys, json, difflib
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[5]))  # the repository root
from tileport.cpu import sass
probe, case_dirs = Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]]
cub = probe / "cubins"; cub.mkdir(exist_ok=True)
card = {}
for p in sorted((probe / "jit").rglob("*.cubin")):
    b = p.read_bytes()   # cutile's cache entry: a CUTILECUBIN header, then the ELF
    out = cub / f"port-{p.stem[:10]}.cubin"; out.write_bytes(b[b.find(b"\x7fELF"):])
    card[f"port:{p.stem[:10]}"] = out
db = sqlite3.connect(probe / "ct" / "cache.db")
for k, b, m in db.execute("select key, blob, metadata from cache"):
    out = cub / f"ref-{k[:10]}.cubin"; out.write_bytes(b); card[f"ref:{k[:10]}"] = out
card_ins = {k: sass.instructions(sass.disassemble(p)) for k, p in card.items()}
for d in case_dirs:
    for f in sorted(d.glob("*.sm_90.sass")):
        pred = sass.instructions(f.read_text())
        side = f.name.split(".")[1]
        best = max(((difflib.SequenceMatcher(None, pred, ins, autojunk=False).ratio() if len(pred) == len(ins) or True else 0, k)
                    for k, ins in card_ins.items() if k.startswith(side)), default=None)
        same = [k for k, ins in card_ins.items() if ins == pred]
        print(f"{d.parent.name[:24]}/{d.name} {f.name}: {len(pred)} instructions; identical on card: {same or 'none'}; "
              f"closest {best[1]} similarity {best[0]:.3f}")
for k, ins in card_ins.items():
    print(k, len(ins))
