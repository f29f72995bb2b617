"""The Accel-Sim backend (registered as ``accelsim``): install detection (1.x and 2.x),
``--isa-compat ampere`` trace rewriting, and the runner. Output parsing lives in
``simfront.stats.accelsim``."""

from simfront.sim.accelsim.install import AccelSimInstall, find_install
from simfront.sim.accelsim.isa_compat import CompatReport, IsaCompatError, rewrite_traceset
from simfront.sim.accelsim.runner import AccelSimBackend, load_result
from simfront.sim.backend import register

register("accelsim", AccelSimBackend)

__all__ = ["AccelSimBackend", "AccelSimInstall", "CompatReport", "IsaCompatError",
           "find_install", "load_result", "rewrite_traceset"]
