"""Does a shared-memory hold (simfront.workloads.shared_hold) leave an SM the blocks it
should? For blocks of each size, held and not: the most blocks of a probe kernel seen on one
SM at once, against ``shared_hold.fits``. One JSON line per case; exit 1 on a mismatch.

  nvcc -arch=sm_90 -cubin -o probe.cubin bench/device/shared_hold_probe.cu
  python bench/device/shared_hold_check.py probe.cubin
"""
import ctypes
import json
import sys

import torch

from simfront.workloads.shared_hold import SharedHold, _Driver, fits

BLOCK_SHARED = (35840, 46080, 72192, 86784)   # the SSD kernels' dynamic shared memory (B)
HOLDS_KIB = (0, 64, 117)


def main(cubin: str) -> int:
    torch.empty(1, device="cuda")
    props = torch.cuda.get_device_properties(0)
    per_sm = props.shared_memory_per_multiprocessor
    drv = _Driver()
    mod = ctypes.c_void_p()
    drv.check(drv.cu.cuModuleLoad(ctypes.byref(mod), cubin.encode()), "cuModuleLoad")
    fn = drv.function(mod, "probe")
    drv.set_attribute(fn, 8, max(BLOCK_SHARED), "max dynamic shared")
    n_sm = props.multi_processor_count
    bad = 0
    for kib in HOLDS_KIB:
        hold = SharedHold(kib) if kib else None
        if hold:
            hold._setup()
        for shared in BLOCK_SHARED:
            on_sm = torch.zeros(256, dtype=torch.int32, device="cuda")
            peak = torch.zeros(256, dtype=torch.int32, device="cuda")
            row = hold.acquire() if hold else None
            stream = torch.cuda.current_stream().cuda_stream
            drv.launch(fn, 8 * n_sm, 64, shared, stream, on_sm.data_ptr(), peak.data_ptr(),
                       ctypes.c_uint64(200_000))
            if hold:
                hold.release(row)
            torch.cuda.synchronize()
            if hold:
                hold.check()
            seen = peak[:n_sm].cpu()
            want = fits(per_sm, shared, kib << 10)
            ok = int(seen.max()) == want
            bad += not ok
            print(json.dumps({"held_kib": kib, "block_shared": shared, "expected": want,
                              "max_on_sm": int(seen.max()), "min_on_sm": int(seen.min()),
                              "ok": ok}), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
