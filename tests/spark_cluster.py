"""A Spark standalone cluster on this machine, for tests: one master and two workers from the pyspark
installation, all on 127.0.0.1, on free ports, stopped again afterwards.

`SparkCluster.start()` runs ``$SPARK_HOME/bin/spark-class org.apache.spark.deploy.master.Master`` and two
``org.apache.spark.deploy.worker.Worker spark://127.0.0.1:PORT`` (one core and 1 GB each), each in its own
process group with its log in a temporary folder, and waits until the master's JSON status (its web UI,
``/json``) lists both workers ALIVE. `stop()` ends the three process groups (SIGTERM, then SIGKILL) and
removes the folder; the `spark_cluster` fixture calls it as a finalizer, so a failing test stops the cluster
too. SPARK_HOME is pyspark's package directory (the PyPI wheel ships `bin/spark-class` and the jars).

What a driver and its executors must share, here trivially (one machine): the input files (executors
read the Parquet source), the warehouse folder the release table is written to, the export folder, and
the Python version (PYSPARK_PYTHON; sqlanon's statements are SQL, but Spark checks it for any Python work).
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

# how long the master and the workers may take to start and register (a busy 2-core machine: JVMs are slow)
START_TIMEOUT_S = 180


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_home() -> Path:
    """pyspark's package directory, which holds bin/spark-class and the jars (the PyPI wheel's layout)."""
    import pyspark
    home = os.environ.get("SPARK_HOME")
    if home and (Path(home) / "bin" / "spark-class").exists():
        return Path(home)
    return Path(pyspark.__file__).resolve().parent


class SparkCluster:
    """A master and `workers` workers on 127.0.0.1 (see the module docstring)."""

    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "1g"):
        self.home = spark_home()
        self.dir = Path(tempfile.mkdtemp(prefix="sqlanon-spark-cluster-"))
        self.workers, self.cores, self.memory = workers, cores, memory
        self.procs: list[subprocess.Popen] = []
        self.port = _free_port()
        self.ui_port = _free_port()
        self.env = {**os.environ, "SPARK_HOME": str(self.home), "SPARK_LOCAL_IP": "127.0.0.1",
                    "SPARK_WORKER_DIR": str(self.dir / "work"), "SPARK_LOG_DIR": str(self.dir / "logs"),
                    "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
        self.env.pop("SPARK_MASTER_HOST", None)

    @property
    def master(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _launch(self, name: str, args: list[str]) -> None:
        with open(self.dir / f"{name}.log", "wb") as log:
            proc = subprocess.Popen([str(self.home / "bin" / "spark-class"), *args], stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.env,
                                    start_new_session=True)     # its own process group: stop() ends all of it
        self.procs.append(proc)

    def start(self) -> SparkCluster:
        try:
            self._launch("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                    "--port", str(self.port), "--webui-port", str(self.ui_port)])
            self._wait(lambda status: status is not None, "the master to answer")
            for i in range(self.workers):
                self._launch(f"worker{i}", ["org.apache.spark.deploy.worker.Worker", self.master, "--host", "127.0.0.1",
                                            "--cores", str(self.cores), "--memory", self.memory,
                                            "--webui-port", str(_free_port()),
                                            "--work-dir", str(self.dir / "work")])
            self._wait(lambda status: status is not None and self.alive(status) >= self.workers,
                       f"{self.workers} workers to register")
        except BaseException:
            self.stop()
            raise
        return self

    def status(self) -> dict | None:
        """The master's JSON status, or None while it does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json", timeout=5) as r:
                return json.loads(r.read().decode())
        except (OSError, urllib.error.URLError, ValueError):
            return None

    @staticmethod
    def alive(status: dict) -> int:
        return sum(1 for w in status.get("workers", []) if w.get("state") == "ALIVE")

    def _wait(self, ready, what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"a Spark process exited ({proc.args[1]}, code {proc.returncode}) while "
                                       f"waiting for {what}: {self.logs()}")
            if ready(self.status()):
                return
            time.sleep(1)
        raise RuntimeError(f"timed out after {START_TIMEOUT_S} s waiting for {what}: {self.logs()}")

    def logs(self, tail: int = 1500) -> str:
        return " | ".join(f"{p.name}: {p.read_text(errors='replace')[-tail:]}" for p in sorted(self.dir.glob("*.log")))

    def stop(self) -> None:
        """End every process group (the daemons and the executors they forked), then remove the folder."""
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
        self.procs.clear()
        shutil.rmtree(self.dir, ignore_errors=True)


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() == "true"


@pytest.fixture(scope="module")
def spark_cluster():
    """A running two-worker standalone cluster (skipped, or under CI=true failed, when it cannot start)."""
    def unavailable(message: str):
        if in_ci():
            pytest.fail(f"{message} (CI=true: the Spark cluster tests must run, not skip)", pytrace=False)
        pytest.skip(message)
    try:
        import pyspark  # noqa: F401
    except ImportError:
        unavailable("pyspark is not installed: pip install pyspark (it is in the test extra)")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        unavailable("Java is not installed: Spark needs Java 17 (apt-get install openjdk-17-jre-headless)")
    cluster = SparkCluster()
    try:
        cluster.start()
    except (RuntimeError, OSError) as e:
        unavailable(f"a Spark standalone cluster did not start: {e}")
    try:
        yield cluster
    finally:
        cluster.stop()
