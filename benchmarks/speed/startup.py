"""Start-up cost: ``banditree --help``, ``serve`` to /healthz, a serving process's memory.

``python -m benchmarks.speed.startup`` measures, on the tree this file belongs to (or the one
``--tree`` names, for a before/after comparison; the same interpreter runs it with that
tree first on ``PYTHONPATH``):

* ``help``: wall time of ``banditree --help`` (the console command, as its entry point
  runs it), median of ``--repeat`` runs, and its CPU time (what a busy machine's
  contention does not inflate);
* ``healthz``: from launching ``banditree serve`` (embedded store in a fresh temporary
  data directory, a spare port) to the first 200 from ``/healthz``, median of
  ``--repeat`` launches (and the CPU time the server had used by then);
* ``idle RSS``: the resident memory of the serving process (and any children) a
  second after it answered;
* ``RSS with one DGT``: the same after creating a DGT model (``kind dgt``, 10 features,
  4 actions) and serving one predict and its feedback.

Each figure is printed beside its goal (issue 24): help < 0.5 s, healthz < 1.5 s, idle
RSS < 100 MB, with one DGT < 110 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
ADMIN = "startup-bench-admin"
#: figure -> (goal, unit)
GOALS = {
    "help_seconds": (0.5, "s"),
    "healthz_seconds": (1.5, "s"),
    "idle_rss_mb": (100.0, "MB"),
    "one_dgt_rss_mb": (110.0, "MB"),
}


def console_command(tree: Path) -> list[str]:
    """What the ``banditree`` entry point runs, for ``tree`` (its app module differs by version)."""
    module = "banditree_cli" if (tree / "banditree_cli").is_dir() else "banditree.cli"
    script = f"import sys; from {module} import app; sys.argv[0] = 'banditree'; sys.exit(app())"
    return [sys.executable, "-c", script]


def tree_env(tree: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BANDITREE_")}
    env["PYTHONPATH"] = str(tree)
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def time_help(tree: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one ``banditree --help``."""
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [*console_command(tree), "--help"],
        cwd=tree,
        env=tree_env(tree),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - cpu.ru_utime) + (after.ru_stime - cpu.ru_stime)


def cpu_seconds(pid: int) -> float:
    """CPU seconds ``pid`` has used so far (user + system)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its descendants, in MB (10**6 bytes)."""
    total_kb, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            total_kb += next(
                int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")
            )
            for task in Path(f"/proc/{current}/task").iterdir():
                children = (task / "children").read_text().split()
                todo.extend(int(c) for c in children)
        except (FileNotFoundError, StopIteration, ProcessLookupError):
            continue
    return total_kb * 1024 / 1e6


class Served:
    """``banditree serve`` of ``tree`` on a spare port, with a fresh data directory."""

    def __init__(self, tree: Path, data_dir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = tree_env(
            tree,
            BANDITREE_DATA_DIR=str(data_dir),
            BANDITREE_HOST="127.0.0.1",
            BANDITREE_PORT=str(self.port),
            BANDITREE_ADMIN_KEYS=ADMIN,
            BANDITREE_LOG_LEVEL="warning",
        )
        self.launched = time.perf_counter()
        self.process = subprocess.Popen(
            [*console_command(tree), "serve"],
            cwd=tree,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def wait_healthy(self, timeout_seconds: float = 120.0) -> float:
        """Seconds from launch to the first 200 of ``/healthz``."""
        deadline = self.launched + timeout_seconds
        with httpx.Client(timeout=1.0) as http:
            while time.perf_counter() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"banditree serve exited with {self.process.returncode}")
                try:
                    if http.get(self.url + "/healthz").status_code == 200:
                        return time.perf_counter() - self.launched
                except httpx.TransportError:
                    pass
                time.sleep(0.005)
        raise RuntimeError("banditree serve did not answer /healthz in time")

    def one_dgt(self) -> None:
        headers = {"Authorization": f"Bearer {ADMIN}"}
        with httpx.Client(base_url=self.url, headers=headers, timeout=60.0) as http:
            body = {"kind": "dgt", "n_features": 10, "n_actions": 4}
            http.put("/v1/models/startup-dgt", json=body).raise_for_status()
            answer = http.post("/v1/models/startup-dgt/predict", json={"context": [0.1] * 10})
            answer.raise_for_status()
            feedback = {"event_id": answer.json()["event_id"], "loss": 0.5}
            http.post("/v1/models/startup-dgt/feedback", json=feedback).raise_for_status()

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def measure(tree: Path, repeat: int, settle_seconds: float) -> dict[str, float]:
    """Every figure for ``tree``: medians of ``repeat`` runs (memory: of the last launch)."""
    time_help(tree)  # one run first, so that every measured run finds the files cached
    helps = [time_help(tree) for _ in range(repeat)]
    healthz: list[float] = []
    healthz_cpu: list[float] = []
    idle = one = 0.0
    for i in range(repeat):
        with tempfile.TemporaryDirectory(prefix="banditree-startup-") as data:
            served = Served(tree, Path(data))
            try:
                healthz.append(served.wait_healthy())
                healthz_cpu.append(cpu_seconds(served.process.pid))
                if i == repeat - 1:
                    time.sleep(settle_seconds)
                    idle = rss_mb(served.process.pid)
                    served.one_dgt()
                    time.sleep(settle_seconds)
                    one = rss_mb(served.process.pid)
            finally:
                served.stop()
    return {
        "help_seconds": statistics.median(wall for wall, _ in helps),
        "healthz_seconds": statistics.median(healthz),
        "help_cpu_seconds": statistics.median(cpu for _, cpu in helps),
        "healthz_cpu_seconds": statistics.median(healthz_cpu),
        "idle_rss_mb": idle,
        "one_dgt_rss_mb": one,
    }


def report(figures: dict[str, dict[str, float]]) -> str:
    names = list(figures)
    lines = [f"{'figure':18s}" + "".join(f"{n:>14s}" for n in names) + f"{'goal':>10s}"]
    for key, (goal, unit) in GOALS.items():
        cells = "".join(f"{figures[n][key]:>11.2f} {unit:2s}" for n in names)
        verdicts = " ".join("ok" if figures[n][key] < goal else "over" for n in names)
        lines.append(f"{key:18s}{cells}   < {goal:g} {unit}  ({verdicts})")
    for key in ("help_cpu_seconds", "healthz_cpu_seconds"):  # what contention cannot inflate
        cells = "".join(f"{figures[n][key]:>11.2f} s " for n in names)
        lines.append(f"{key:18s}{cells}   (CPU time of the process, no goal)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tree", action="append", type=Path, default=None,
        help="a checkout to measure (repeatable; default: this one)",
    )  # fmt: skip
    parser.add_argument("--repeat", type=int, default=5, help="runs per timing (median)")
    parser.add_argument("--settle", type=float, default=1.0, help="seconds before reading RSS")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    trees = [t.resolve() for t in (args.tree or [ROOT])]
    figures: dict[str, dict[str, float]] = {}
    for tree in trees:
        label = tree.name
        figures[label] = measure(tree, max(1, args.repeat), args.settle)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, repeat {args.repeat}")
    print(report(figures))
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
