"""Run every command on mutated inputs and record anything that is not a clean answer.

A clean answer is a result, or a ``SegtoolError`` whose message is one line and
names the file (the CLI prints it and exits 2).  Anything else — another
exception, a hang past the time bound, running out of the memory limit — is a
failure, recorded with the seed and mutation so it can be replayed.

Workers run in separate processes with an address-space limit, and each input
has a time bound proportional to its size.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import signal
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

from segtool.errors import SegtoolError
from tests.fuzz.mutate import STRUCTURAL, Seed, mutate, read_seed, seeds, shrink

MEMORY_LIMIT = 3 * 1024**3
DUMP_CAP = 8 * 1024 * 1024


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


@dataclass
class Failure:
    seed: str
    mutation: str
    rng_seed: int
    command: str
    error: str

    def as_dict(self) -> dict:
        return self.__dict__.copy()


def _check_error(exc: SegtoolError, target: str) -> str | None:
    text = str(exc)
    if "\n" in text:
        return f"multi-line error: {text!r}"
    if exc.path is None:
        return f"error names no file: {text!r}"
    return None


def _commands(seed: Seed, scenario: Path, target: Path, out: Path, rng: random.Random):
    """(name, callable) for every command that can take this input."""
    from segtool.ops import lookup as lk
    from segtool.ops.dump import dump_paths
    from segtool.ops.kafka_dump_log import KafkaDumpOptions, run_kafka_dump
    from segtool.ops.render import render_text_item
    from segtool.ops.verify import verify

    def dump():
        for item in dump_paths([str(target)], cap=DUMP_CAP):
            json.dumps(item, ensure_ascii=False)
            render_text_item(item)

    def kafka_format():
        opts = KafkaDumpOptions(deep_iteration=True, print_data_log=True, decompress_cap=DUMP_CAP)
        lines: list[str] = []
        run_kafka_dump([str(target)], opts, lines.append, lines.append)

    cmds = [("dump", dump), ("verify", lambda: verify([str(target)], deep=True, hash_inputs=False))]
    if seed.family == "kafka":
        cmds.append(("dump-kafka", kafka_format))
        cmds.append(("verify-dir", lambda: verify([str(scenario)], hash_inputs=False)))
        cmds.append(("lookup-offset", lambda: lk.lookup_offset(str(scenario), rng.randrange(-5, 9000))))
        cmds.append(("lookup-timestamp", lambda: lk.lookup_timestamp(
            str(scenario), rng.choice([-1, -2, -3, 0, 1795304370000 + rng.randrange(10**7)]))))
        cmds.append(("lookup-floor", lambda: lk.lookup_index_entry(str(scenario), rng.randrange(9000), rng.random() < .5)))
        from segtool.ops.rebuild import rebuild_index

        cmds.append(("rebuild-index", lambda: rebuild_index([str(scenario)], out_dir=str(out / "rebuilt"))))
        if seed.kind in ("kafka-offset-index", "kafka-time-index"):
            from segtool.ops.trim import trim

            cmds.append(("trim", lambda: trim([str(target)], out_dir=str(out / "trimmed"))))
        from segtool.ops.keyindex import index_keys

        cmds.append(("index-keys", lambda: index_keys(str(scenario), out_dir=str(out / "keys"))))
        cmds.append(("lookup-key", lambda: lk.lookup_key(str(scenario), rng.choice(["k-1", "ck-044", "A0-0", ""]))))
    if seed.family == "kafka" or seed.kind == "rocketmq-commitlog":
        from segtool.pipeline.engines import LocalEngine
        from segtool.pipeline.scan import scan

        # workers=1: the fuzz worker is already one of a pool
        cmds.append(("scan-local", lambda: scan([str(scenario)], str(out / "scan"), LocalEngine(workers=1),
                                                split_bytes=rng.choice([4096, 64 * 1024 * 1024]))))
    if seed.family != "kafka" and seed.kind != "rocketmq-consumequeue":
        # key lookups and index rebuilds read the CommitLog and IndexFiles, not the ConsumeQueue
        cmds.append(("lookup-key", lambda: lk.lookup_key(str(scenario), rng.choice(["k-1", "order-7", "AaAa", ""]),
                                                         topic=rng.choice(["TopicTest", "BulkTopic", "x"]))))
        from segtool.ops.rebuild_rocketmq import rebuild_rocketmq_index

        cmds.append(("rebuild-index", lambda: rebuild_rocketmq_index(str(scenario), out_dir=str(out / "rmq"))))
    if seed.family == "rocketmq":
        cmds.append(("lookup-queue", lambda: lk.lookup_queue(str(scenario), rng.choice(["AuditTopic", "x"]),
                                                             rng.randrange(4), rng.randrange(-1, 400))))
    return cmds


class Worker:
    """Holds private copies of the scenarios; mutates one file at a time and restores it."""

    def __init__(self, root: Path):
        self.root = root
        self.copies: dict[Path, Path] = {}
        self.seeds = seeds()
        self.originals: dict[tuple[Path, str], bytes] = {}

    def scenario_copy(self, seed: Seed) -> Path:
        """A private copy of the seed's surroundings.

        A Kafka seed gets its own segment (files sharing its base offset) plus
        the partition's checkpoints, so directory-wide commands cost one segment;
        a RocketMQ seed gets the whole store.
        """
        key = (seed.scenario, seed.relative.split(".")[0] if seed.family == "kafka" else "")
        if key not in self.copies:
            target = self.root / f"s{len(self.copies)}" / seed.scenario.name
            if seed.family == "kafka":
                target.mkdir(parents=True)
                stem = seed.relative.split(".")[0]
                for path in seed.scenario.iterdir():
                    if path.is_file() and (path.name.split(".")[0] == stem or not path.name[0].isdigit()):
                        shutil.copyfile(path, target / path.name)
            else:
                shutil.copytree(seed.scenario, target, symlinks=False)
                # one CommitLog file, cut to its first messages: every command stays quick
                logs = sorted((target / "commitlog").iterdir())
                for extra in logs[1:]:
                    extra.unlink()
                logs[0].write_bytes(shrink(read_seed(logs[0]), "rocketmq-commitlog"))
            for path in target.rglob("*"):
                if path.is_file() and path.suffix == ".log":
                    path.write_bytes(shrink(read_seed(path), "kafka-log"))
            for path in target.rglob("*"):
                if path.is_file():
                    path.chmod(0o644)
            self.copies[key] = target
        return self.copies[key]

    def run(self, rng_seed: int) -> list[Failure]:
        rng = random.Random(rng_seed)
        seed = rng.choice(self.seeds)
        scenario = self.scenario_copy(seed)
        target = scenario / seed.relative
        key = (seed.scenario, seed.relative)
        if key not in self.originals:
            self.originals[key] = read_seed(target)
        original = self.originals[key]
        structural = rng.random() < 0.01
        if structural:
            mutation = rng.choice(STRUCTURAL)
            data = original
        else:
            mutation, data = mutate(rng, original, seed.kind)
        out = Path(tempfile.mkdtemp(dir=self.root))
        failures = []
        try:
            self._place(target, mutation if structural else None, data)
            bound = 10 + len(data) / 1_000_000 * 5
            for name, command in _commands(seed, scenario, target, out, rng):
                signal.signal(signal.SIGALRM, _alarm)
                signal.setitimer(signal.ITIMER_REAL, bound)
                try:
                    command()
                except SegtoolError as exc:
                    problem = _check_error(exc, str(target))
                    if problem:
                        failures.append(Failure(str(key), mutation, rng_seed, name, problem))
                except Hang:
                    failures.append(Failure(str(key), mutation, rng_seed, name, f"no answer within {bound:.0f} s"))
                except MemoryError:
                    failures.append(Failure(str(key), mutation, rng_seed, name, "memory limit reached"))
                except Exception as exc:  # the very thing we are hunting
                    tb = traceback.format_exc(limit=-3)
                    failures.append(Failure(str(key), mutation, rng_seed, name, f"{type(exc).__name__}: {exc}\n{tb}"))
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
        finally:
            self._restore(target, original)
            shutil.rmtree(out, ignore_errors=True)
        return failures

    @staticmethod
    def _place(target: Path, structural: str | None, data: bytes) -> None:
        if target.is_symlink() or target.exists():
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            else:
                target.unlink()
        if structural == "directory":
            target.mkdir()
            (target / "inner.log").write_bytes(data[:100])
        elif structural == "dangling_symlink":
            target.symlink_to(target.parent / "does-not-exist")
        elif structural == "symlink_loop":
            target.symlink_to(target)
        elif structural == "fifo":
            os.mkfifo(target)
        else:
            target.write_bytes(data)

    @staticmethod
    def _restore(target: Path, original: bytes) -> None:
        if target.is_symlink() or target.exists():
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            else:
                target.unlink()
        target.write_bytes(original)


_WORKER: Worker | None = None


def _no_fork() -> None:
    return None  # what segtool.source.fork_quietly answers when os.fork() fails


def _without_helper_processes() -> None:
    """The commands' forked helpers (the early sha256 of an input, the CRC-32C helper) stay in this
    process, as when a fork fails: a fork per input copied the worker (itself a fork of pytest) and
    cost more than the commands; the helpers only hash or checksum bytes the commands also read."""
    from segtool import source
    from segtool.formats import checksums

    source.fork_quietly = checksums.fork_quietly = _no_fork


def _address_space() -> int:
    """This process's virtual size: a worker forked from a long test session starts with that session's."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _init_worker(root: str) -> None:
    global _WORKER
    # the bound is on what the commands add to what the worker was forked with
    limit = _address_space() + MEMORY_LIMIT
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    _without_helper_processes()
    _WORKER = Worker(Path(tempfile.mkdtemp(dir=root)))


def _run_batch(rng_seeds: list[int]) -> list[dict]:
    out = []
    for rng_seed in rng_seeds:
        out.extend(f.as_dict() for f in _WORKER.run(rng_seed))
    return out


def _scratch_dir() -> str | None:
    """Memory (/dev/shm) where there is one: every input writes and fsyncs a few small files
    (rebuilt indexes, a Parquet scan), and on a disk the fsyncs cost more than the commands."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def run_campaign(inputs: int, master_seed: int, processes: int = 2, chunk: int = 200, progress=None) -> dict:
    """Fuzz ``inputs`` mutated inputs; returns counts and every failure.

    ``progress(done, failures)`` is called after every chunk (the long pass logs it)."""
    import multiprocessing

    root = tempfile.mkdtemp(prefix="segtool-fuzz-", dir=_scratch_dir())
    rng = random.Random(master_seed)
    input_seeds = [rng.getrandbits(48) for _ in range(inputs)]
    chunks = [input_seeds[i:i + chunk] for i in range(0, inputs, chunk)]
    failures: list[dict] = []
    try:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(processes, initializer=_init_worker, initargs=(root,)) as pool:
            done = 0
            for result, size in zip(pool.imap_unordered(_run_batch, chunks), map(len, chunks)):
                failures.extend(result)
                done += size
                if progress is not None:
                    progress(done, failures)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"inputs": inputs, "seed": master_seed, "failures": failures}


def replay(rng_seed: int) -> list[Failure]:
    """Run one input again in this process (for debugging a reported failure)."""
    _without_helper_processes()
    worker = Worker(Path(tempfile.mkdtemp(prefix="segtool-replay-")))
    return worker.run(rng_seed)
