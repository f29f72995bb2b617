"""The batch-executor base with a scheduler of a few lines: array tasks as background shell
processes. Shows that a third executor (PBS, LSF, ...) is a short file of hooks, and runs the
batch path (manifests, adoption, requeue, tasks that die without a result) where no Slurm is."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from simfront.sweep.batch import BatchExecutor, TaskEnd
from simfront.sweep.registry import register_executor
from simfront.sweep.runner import Sweep
from simfront.sweep.testing import kernel_workloads, write_sweep
from simfront.sweep.worker import read_runs


class ShellArrayExecutor(BatchExecutor):
    """Each array task is `bash script` in the background; `<script>.<i>.rc` marks its end."""

    name = "shell"
    index_var = "SHELL_ARRAY_TASK_ID"

    def script_header(self, name: str, n_tasks: int, log_pattern: str) -> list[str]:
        self._n = n_tasks
        return [f"# {n_tasks} tasks"]

    def submit_command(self, script: Path) -> list[str]:
        s = shlex.quote(str(script))
        loop = (f"for i in $(seq 0 {self._n - 1}); do (SHELL_ARRAY_TASK_ID=$i bash {s} "
                f"> {s}.$i.log 2>&1; echo $? > {s}.$i.rc) & done; echo {script.stem}")
        return ["bash", "-c", loop]

    def parse_job_id(self, stdout: str) -> str:
        return stdout.strip()

    def live_tasks(self, external_ids: list[str]) -> dict[tuple[str, int], str]:
        live = {}
        for ext in external_ids:
            d = self.sweep_dir / "batches"
            n = len((d / f"{ext}.tasks").read_text().splitlines())
            n = -(-n // self.settings.jobs_per_task)
            live.update({(ext, i): "RUNNING" for i in range(n)
                         if not (d / f"{ext}.sh.{i}.rc").exists()})
        return live

    def task_end(self, external_id: str, index: int) -> TaskEnd | None:
        rc = self.sweep_dir / "batches" / f"{external_id}.sh.{index}.rc"
        return TaskEnd("EXITED", int(rc.read_text()), "") if rc.exists() else None

    def cancel_command(self, external_ids: list[str]) -> list[str]:
        return ["true"]


register_executor("shell", ShellArrayExecutor)


def test_a_short_executor_runs_arrays_with_requeue(tmp_path, shared_data):
    faults = tmp_path / "faults.json"
    path = write_sweep(tmp_path, "shell", traces=kernel_workloads(n=4),
                       options={"faults": str(faults)},
                       executor={"max_attempts": 2, "backoff": "0s", "poll": "200ms",
                                 "slurm": {"chunk": 2, "jobs_per_task": 2}})
    s = Sweep.open(path)
    ids = [j.job_id for j in s.plan().jobs]
    faults.write_text(json.dumps({ids[0]: "crash"}))
    summary = s.run(executor="shell", progress=False)
    assert summary.counts == {"queued": 0, "running": 0, "done": 3, "failed": 1}
    t = s.status().set_index("job_id")
    reason = t.loc[ids[0], "reason"]
    assert "ended EXITED (exit code 139) without a result" in reason, reason
    assert t.loc[ids[0], "attempts"] == 2
    # ids[1] shared a task with the crashing ids[0], which died before starting it: given
    # back uncounted each time, it finished on its one counted attempt
    assert (t.loc[ids[1], "state"], t.loc[ids[1], "attempts"]) == ("done", 1)
    runs = [r["job_id"] for r in read_runs(s.directory) if r["ok"]]
    assert sorted(runs) == sorted(ids[1:])
    assert len(list((s.directory / "batches").glob("*.tasks"))) >= 3  # 2 chunks + requeues
