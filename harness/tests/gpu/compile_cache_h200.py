"""How long a torch.compile'd training submission takes to its first update with an empty compile
cache (a fresh jail) and with a warm one (the same cache folder a second time): issue 35, "fair
compile caches". The model is the deep-recurrence sample's shape (one shared block applied 8 times,
width 256, batch 512), compiled whole; one update is forward, backward and an AdamW step.

    python3 harness/tests/gpu/compile_cache_h200.py OUT_DIR [ROUNDS]

Each measurement is its own Python process (as every run is), timed from the process's start to the
end of its first update (construction + compile + one update), then two more updates for the steady
step. Cold and warm alternate over ROUNDS fresh cache folders. Writes OUT_DIR/compile_cache.json.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import time, json, sys
t0 = float(sys.argv[1])
import torch, torch.nn as nn
t_import = time.time()
V, L, W, H, F, D, B = 64, 64, 256, 8, 1024, 8, 512
class Block(nn.Module):
    def __init__(s):
        super().__init__(); s.n1 = nn.LayerNorm(W); s.a = nn.MultiheadAttention(W, H, batch_first=True)
        s.n2 = nn.LayerNorm(W); s.f = nn.Sequential(nn.Linear(W, F), nn.GELU(), nn.Linear(F, W))
    def forward(s, h):
        x = s.n1(h); a, _ = s.a(x, x, x, need_weights=False); h = h + a
        return h + s.f(s.n2(h))
class M(nn.Module):
    def __init__(s):
        super().__init__(); s.e = nn.Embedding(V, W); s.p = nn.Parameter(torch.randn(L, W) * .02)
        s.b = Block(); s.o = nn.Linear(W, V)
    def forward(s, ids):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            x = s.e(ids) + s.p; h = x
            for _ in range(D):
                h = s.b(h + x)
            return s.o(h).float()
torch.manual_seed(0)
m = M().cuda(); opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
step = torch.compile(m)
ids = torch.randint(0, V, (B, L), device="cuda")
def update():
    loss = nn.functional.cross_entropy(step(ids).reshape(-1, V), ids.reshape(-1))
    loss.backward(); opt.step(); opt.zero_grad(set_to_none=True); return loss
update(); torch.cuda.synchronize(); t_first = time.time()
for _ in range(2):
    update()
torch.cuda.synchronize(); t_steady = (time.time() - t_first) / 2
print(json.dumps({"import_s": t_import - t0, "first_update_s": t_first - t0, "steady_update_ms": t_steady * 1e3,
                  "torch": torch.__version__}))
"""


def measure(cache: str) -> dict:
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(cache, "inductor"),
               TRITON_CACHE_DIR=os.path.join(cache, "triton"), PYTHONHASHSEED="0")
    out = subprocess.run([sys.executable, "-c", CHILD, repr(time.time())], env=env, capture_output=True, text=True,
                         timeout=300)
    if out.returncode != 0:
        return {"error": out.stderr[-2000:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    out_dir = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    os.makedirs(out_dir, exist_ok=True)
    rows = []
    for r in range(rounds):
        cache = tempfile.mkdtemp(prefix="dryft-compile-cache-")
        for kind in ("cold", "warm"):
            row = {"round": r, "cache": kind, **measure(cache)}
            rows.append(row)
            print(json.dumps(row), flush=True)
            with open(os.path.join(out_dir, "compile_cache.json"), "w") as fh:
                json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
