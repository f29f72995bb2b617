"""The Slurm executor: ``sbatch --array`` per chunk of jobs; state from ``squeue`` (one call
per poll for all arrays) and, for tasks that left the queue without a result file,
``scontrol show job`` (``sacct`` needs a database daemon that a small cluster may not run)."""

from __future__ import annotations

import math
import re
import subprocess
from pathlib import Path

from simfront.sweep.batch import BatchExecutor, TaskEnd


class SlurmExecutor(BatchExecutor):
    name = "slurm"
    index_var = "SLURM_ARRAY_TASK_ID"

    def script_header(self, name: str, n_tasks: int, log_pattern: str) -> list[str]:
        r, s = self.resources, self.settings
        # The time limit is per job; a task runs jobs_per_task of them in turn.
        minutes = max(1, math.ceil(r.time_s * s.jobs_per_task / 60))
        array = f"0-{n_tasks - 1}" + (f"%{s.parallel}" if s.parallel else "")
        lines = [f"#SBATCH --job-name={self.job_name(name)}",
                 f"#SBATCH --array={array}",
                 f"#SBATCH --cpus-per-task={r.cpus}",
                 f"#SBATCH --mem={r.mem_mb}M",
                 f"#SBATCH --time={minutes // 60:02d}:{minutes % 60:02d}:00",
                 f"#SBATCH --output={log_pattern}",
                 "#SBATCH --open-mode=append"]
        if s.partition:
            lines.append(f"#SBATCH --partition={s.partition}")
        lines += [f"#SBATCH {a}" for a in s.extra_args]
        return lines

    def job_name(self, batch: str) -> str:
        return f"simfront-{self.sweep_name}-{batch}"

    def submit_command(self, script: Path) -> list[str]:
        return ["sbatch", "--parsable", str(script)]

    def parse_job_id(self, stdout: str) -> str:
        # --parsable prints "jobid" or "jobid;cluster"
        return stdout.strip().splitlines()[-1].split(";")[0].strip()

    def live_tasks(self, external_ids: list[str]) -> dict[tuple[str, int], str] | None:
        proc = subprocess.run(["squeue", "-h", "-r", "-j", ",".join(external_ids),
                               "-o", "%i|%T"], capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            if "Invalid job id" in proc.stderr:  # every array already left the queue
                return {}
            return None
        live: dict[tuple[str, int], str] = {}
        for line in proc.stdout.splitlines():
            task, _, state = line.strip().partition("|")
            m = re.fullmatch(r"(\d+)_(\d+)", task)
            if m:
                live[(m.group(1), int(m.group(2)))] = state
            else:
                m = re.fullmatch(r"(\d+)_\[(.+)\]", task)  # a range not yet split
                if m:
                    for lo, hi in _ranges(m.group(2)):
                        for i in range(lo, hi + 1):
                            live[(m.group(1), i)] = state
        return live

    def task_end(self, external_id: str, index: int) -> TaskEnd | None:
        proc = subprocess.run(["scontrol", "-o", "show", "job", f"{external_id}_{index}"],
                              capture_output=True, text=True, timeout=60)
        if proc.returncode != 0 or "JobState=" not in proc.stdout:
            return None
        fields = dict(kv.split("=", 1) for kv in proc.stdout.split() if "=" in kv)
        code = fields.get("ExitCode", "")
        m = re.match(r"(\d+):(\d+)", code)
        exit_code = None
        if m:
            exit_code = int(m.group(1)) if m.group(2) == "0" else -int(m.group(2))
        reason = fields.get("Reason", "")
        return TaskEnd(state=fields.get("JobState", "UNKNOWN"), exit_code=exit_code,
                       reason="" if reason in ("None", "(null)") else reason)

    def cancel_command(self, external_ids: list[str]) -> list[str]:
        return ["scancel", *external_ids]

    def find_batch(self, name: str) -> str | None:
        proc = subprocess.run(["squeue", "-h", "-n", self.job_name(name), "-o", "%F"],
                              capture_output=True, text=True, timeout=60)
        ids = proc.stdout.split() if proc.returncode == 0 else []
        return ids[0] if ids else None


def _ranges(text: str) -> list[tuple[int, int]]:
    out = []
    for part in text.split("%")[0].split(","):
        if "-" in part:
            lo, hi = part.split("-")
            out.append((int(lo), int(hi)))
        elif part.strip():
            out.append((int(part), int(part)))
    return out
