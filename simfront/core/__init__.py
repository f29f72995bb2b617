"""The ground floor: the formats and names every stage shares, importing no stage.

- ``errors``: the exception hierarchy.
- ``paths``: the repository's folders and the shared reference data.
- ``atomic``: atomic file writes.
- ``provenance``: hashes and tool versions stored beside every result.
- ``categories``: which operator of a training step a kernel belongs to, and its short name.
- ``ncu``: the reader of ``ncu --csv --page raw`` profiles (one record per launch).
- ``launches``: launch records of a captured step (``launches.jsonl``) and their pairing keys.
- ``timeline``: kernel timelines in ncu's CSV layout and their summaries.
- ``disk_cache``: a disk cache's size held under a limit.
- ``jit``: numba's first compilation shared among processes.
- ``numba_inlining``: a cheaper copy of inlined IR while a unit compiles.
"""
