"""simfront: a front end for cycle-level GPU simulation of deep-learning training.

Stages, one subpackage each, talking through plain on-disk data:

- ``core``: the ground floor: errors, paths, and the formats every stage shares (kernel
  categories, ncu records, launch records, timelines).
- ``workloads``: PyTorch training steps of Mamba-family models.
- ``capture``: NVBit tracing and ncu profiling of a step on a real GPU.
- ``traces``: reading, validating, repairing and summarising Accel-Sim-format traces.
- ``gpu``: typed GPU descriptions (H100 and variants) and simulator config writers.
- ``sweep``: sweep files, the job store and local/Slurm executors.
- ``sim``: backends (built-in timing model, Accel-Sim).
- ``stats``: per-kernel records, simulator-output parsers and HDF5 storage.
- ``analysis``: the studies users come for, plots and reports.
"""

__version__ = "0.1.0"
