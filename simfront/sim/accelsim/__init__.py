"""The Accel-Sim backend (registered as ``accelsim``): everything in simfront that knows
Accel-Sim lives in this folder.

- ``config``: a GPU description as Accel-Sim 1.x config files, and back
- ``checks``: the option rules that exist because Accel-Sim asserts, hangs or crashes
- ``install``: finding an install (1.x and 2.x)
- ``isa_compat``: ``--isa-compat ampere`` trace rewriting (Hopper -> Ampere SASS)
- ``runner``: the backend itself (one job = one simulator run)
- ``parse``: the simulator's log -> per-kernel records (``simfront.stats.schema``)
- ``cli``: the ``simfront sim accelsim`` commands
"""

from simfront.sim.accelsim.install import AccelSimInstall, find_install
from simfront.sim.accelsim.isa_compat import CompatReport, IsaCompatError, rewrite_traceset
from simfront.sim.accelsim.runner import AccelSimBackend, load_result
from simfront.sim.backend import register

register("accelsim", AccelSimBackend)

__all__ = ["AccelSimBackend", "AccelSimInstall", "CompatReport", "IsaCompatError",
           "find_install", "load_result", "rewrite_traceset"]
