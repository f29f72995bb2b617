"""A toy backend for the analysis tests: a roofline over each kernel's instruction mix at
the job GPU's peak rates. It is a user plugin (loaded through the sweep file's
``executor.imports``), so the demo pipeline can be exercised through the real sweep stage
without the built-in model. Not a performance model: the tests only check plumbing."""

from __future__ import annotations

import time

from simfront.sim.backend import Backend, SimJob, SimResult, register


class ToyRoofline(Backend):
    name = "toy_roofline"

    def version(self) -> str:
        return "toy-1"

    def run(self, job: SimJob) -> SimResult:
        from simfront.gpu import derived
        from simfront.traces.stats import iter_set_stats

        t0 = time.time()
        d = derived(job.gpu)
        clock = d.core_clock_mhz * 1e6
        tensor = d.tensor_flop_per_clk_sm["bf16"] * d.sm_count
        vector = d.vector_flop_per_clk_sm["fp32"] * d.sm_count
        bw = d.dram_bandwidth.bytes_per_s / clock
        records = []
        for uid, s in enumerate(iter_set_stats(job.trace_dir, job.kernels), start=1):
            f = s.flops()
            parts = {"tensor": f["tensor"] / tensor, "fp32": f["vector"] / vector,
                     "dram": s.sectors_32b * 32 / bw, "latency": 2000.0}
            cycles = max(parts.values())
            records.append({
                "kernel_uid": uid, "kernel_id": s.kernel_id, "kernel_name": s.name,
                "grid": ",".join(map(str, s.grid)), "block": ",".join(map(str, s.block)),
                "complete": True, "cycles": cycles, "time_us": cycles / clock * 1e6,
                "instructions": float(s.warp_instructions), "bound": max(parts, key=parts.get),
                "pipe_busy_tensor": parts["tensor"] / cycles,
                "pipe_busy_fp32": parts["fp32"] / cycles})
        return SimResult(job_id=job.job_id, backend=self.name, ok=True, records=records,
                         wall_s=time.time() - t0)


register(ToyRoofline.name, ToyRoofline)
