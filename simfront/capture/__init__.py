"""capture stage: a workload's training step on the GPU -> an Accel-Sim trace set (our own
NVBit tracer, `tracer/`) and a per-launch ncu profile of the same step, validated, matched
launch by launch, and registered in the trace store with provenance (docs/capture.md).

    from simfront.capture.driver import Step, trace, profile
    from simfront.capture.tracers import Sampling, Window, resolve_tracer
    res = trace(Step("mamba2_lm", "tiny", 2, 1), "cap/m2", resolve_tracer(),
                Window.parse("iteration"), Sampling.parse("first:32"), baseline=True,
                store="traces")
"""
