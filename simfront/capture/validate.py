"""Checks of a freshly captured trace set, before it is registered.

A capture is checked against what else is known of the same launches: the tracer's own
launch sidecar (simfront's tracer) and, where given, the ncu profile of the same step.
Header fields that disagree with those records, or that cannot be right on the GPU that ran
(binary version other than the device's, registers outside 1..255, more shared memory than
an SM has), are *defects*: reported with the file and field, and the set is marked so that
no later stage trusts those fields. Accel-Sim's public tracer is known to produce such
defects (CAPTURE-NOTES: garbage ``-nregs``/``-shmem``/``-binary version``, and no kernel
launched through ``cuLaunchKernelEx``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from simfront.capture.match import match_launches
from simfront.core.errors import SimfrontError
from simfront.core.launches import Launch

#: Hopper: 255 registers per thread, 227 KB of shared memory per block (opt-in limit).
MAX_REGS = 255
MAX_SHMEM = 232448


@dataclass(frozen=True)
class Finding:
    severity: str          # "error" (unusable), "defect" (field not to be trusted), "note"
    what: str
    file: str | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = ", ".join(x for x in (self.file, self.field and f"field '{self.field}'") if x)
        return f"[{self.severity}] {where + ': ' if where else ''}{self.what}"


@dataclass
class ValidationReport:
    trace_dir: str
    tracer: str
    n_kernels: int = 0
    findings: list[Finding] = field(default_factory=list)
    untrusted_fields: list[str] = field(default_factory=list)
    match: dict | None = None

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    @property
    def defects(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "defect"]

    def add(self, severity: str, what: str, file: str | None = None,
            fld: str | None = None) -> None:
        self.findings.append(Finding(severity, what, file, fld))
        if severity == "defect" and fld and fld not in self.untrusted_fields:
            self.untrusted_fields.append(fld)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["ok"] = self.ok
        return d


def header_launches(trace_dir: Path) -> tuple[list[Launch], list, list[str]]:
    """Launch records from the kernel headers of a trace set (in kernelslist order), the
    headers, and the kernelslist file names."""
    from simfront.traces.reader import TraceSet

    ts = TraceSet(trace_dir)
    headers, files, out = [], [], []
    for i, kt in enumerate(ts.kernels()):
        h = kt.header
        headers.append(h)
        files.append(kt.path.name if hasattr(kt, "path") else str(i))
        out.append(Launch(order=i, name=h.name, grid=tuple(h.grid), block=tuple(h.block),
                          kernel_id=h.kernel_id, regs=h.nregs, shmem_static=h.shmem,
                          shmem_dynamic=0, binary_version=h.binary_version,
                          stream=h.stream_id, traced=True, in_window=True))
    return out, headers, files


def validate_trace_set(trace_dir: str | Path, tracer: str = "simfront",
                       sidecar: list[Launch] | None = None,
                       reference: list[Launch] | None = None,
                       binary_version: int = 90) -> ValidationReport:
    """Check a trace set; ``sidecar`` is the tracer's launch list (window launches only),
    ``reference`` an independent list of the same window's launches (ncu's)."""
    trace_dir = Path(trace_dir)
    rep = ValidationReport(str(trace_dir), tracer)
    if not (trace_dir / "kernelslist.g").exists():
        rep.add("error", "no kernelslist.g: the tracer wrote nothing")
        return rep
    try:
        launches, headers, files = header_launches(trace_dir)
    except SimfrontError as exc:
        rep.add("error", f"unreadable trace: {exc}")
        return rep
    rep.n_kernels = len(launches)
    if not launches:
        rep.add("error", "the trace set holds no kernel (empty window, or the tracer saw no "
                         "launch)")
        return rep

    for x, h, fname in zip(launches, headers, files):
        if h.binary_version != binary_version:
            rep.add("defect", f"binary version {h.binary_version}, the GPU runs "
                              f"{binary_version}", fname, "binary version")
        if not 1 <= h.nregs <= MAX_REGS:
            rep.add("defect", f"nregs {h.nregs} outside 1..{MAX_REGS}", fname, "nregs")
        if not 0 <= h.shmem <= MAX_SHMEM:
            rep.add("defect", f"shmem {h.shmem} outside 0..{MAX_SHMEM}", fname, "shmem")

    if sidecar is not None:
        m = match_launches(launches, sidecar, compare_fields=False)
        if not m.one_to_one:
            rep.add("error", f"kernel files and the tracer's launch records disagree: "
                             f"{m.summary()}")
        for i, j in m.pairs:
            x, y = launches[i], sidecar[j]
            if y.regs is not None and x.regs != y.regs:
                rep.add("defect", f"nregs {x.regs}, launch record {y.regs}", files[i], "nregs")
            if y.shmem is not None and x.shmem != y.shmem:
                rep.add("defect", f"shmem {x.shmem}, launch record {y.shmem}", files[i], "shmem")

    if reference is not None:
        m = match_launches(launches, reference, compare_fields=False)
        rep.match = {"one_to_one": m.one_to_one, "exact": m.exact, "summary": m.summary(),
                     "n_trace": m.n_a, "n_reference": m.n_b,
                     "missing_from_trace": [reference[j].key for j in m.only_b][:50],
                     "extra_in_trace": [launches[i].key for i in m.only_a][:50],
                     "config_mismatches": list(m.config_mismatches)[:50]}
        if m.only_b:
            rep.add("defect" if tracer == "accelsim" else "error",
                    f"{len(m.only_b)} launches of the reference are missing from the trace "
                    f"(e.g. {', '.join(sorted({reference[j].key for j in m.only_b})[:5])})",
                    None, "kernels")
        if m.only_a:
            rep.add("defect" if tracer == "accelsim" else "error",
                    f"{len(m.only_a)} traced launches have no partner in the reference", None,
                    "kernels")
        if m.config_mismatches:
            rep.add("note", f"{len(m.config_mismatches)} paired launches have another grid or "
                            f"block than the reference (Triton autotuning chose differently in "
                            f"the two processes)")
        for i, j in m.pairs:
            x, y = launches[i], reference[j]
            if y.shmem is not None and x.shmem != y.shmem and (x.grid, x.block) == (y.grid, y.block):
                rep.add("note", f"shmem {x.shmem}, reference {y.shmem}", files[i], "shmem")
    return rep
