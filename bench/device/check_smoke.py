"""Prints what the tracer wrote for each smoke_app case (bench/device/suite.sh)."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from simfront.traces.reader import TraceSet  # noqa: E402

S = Path(sys.argv[1])
for case in sorted(S.glob("app_*")):
    t = case / "trace"
    if not (t / "launches.jsonl").exists():
        print(case.name, "NO SIDECAR")
        continue
    side = [json.loads(x) for x in open(t / "launches.jsonl") if x.strip()]
    traced = [x for x in side if x.get("traced")]
    print(f"{case.name}: {len(side)} records, {len(traced)} traced")
    try:
        ts = TraceSet(t)
        for k in ts.kernels():
            h = k.header
            tbs, insts = 0, 0
            for ch in k.iter_chunks():
                insts += len(ch)
                tbs += len(ch.tb_coords)
            extra = dict(h.extra)
            print(f"  {k.path.name} {h.name[:28]:28s} grid={h.grid} block={h.block} "
                  f"nregs={h.nregs} shmem={h.shmem} bv={h.binary_version} "
                  f"stream={h.stream_id} api={extra.get('launch api')} "
                  f"graph={extra.get('cuda graph')} tbs={tbs} insts={insts} "
                  f"[{extra.get('tb sampling')}]")
    except Exception as exc:  # noqa: BLE001
        print("  READ ERROR", exc)
ncu = S / "app_ncu_full.csv"
if ncu.exists():
    from simfront.core.ncu import read_ncu_csv
    try:
        df = read_ncu_csv(ncu)
        cols = [c for c in df.columns if "pipe_fp16" in c or "pipe_cbu" in c or "pipe_uniform" in c
                or "pipe_fp64" in c]
        print("ncu rows", len(df), "extra pipe cols", cols[:8])
        print(df[["kernel_name", "grid", "block", "regs_per_thread"]].to_string()[:2000])
    except Exception as exc:  # noqa: BLE001
        print("ncu read error", exc, ncu.read_text()[:500])
