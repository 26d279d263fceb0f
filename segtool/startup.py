"""The command line's process-level speed settings, in one place, each with the bench row it serves.

They change how this process allocates, collects and starts work, never what a
command computes; the library and the pipeline's executors run without them.
(The CRC-32C extension is loaded by its path in ``formats.checksums`` instead:
every process that checksums, executors too, saves the ~50 ms of the crc32c
package's ``__init__``.)
"""

from __future__ import annotations

import gc
import os
import sys


def keep_freed_memory() -> None:
    """Have glibc keep freed memory for the next allocation rather than hand it back to the system.

    A dump or scan frees and allocates tens of megabytes per chunk of a file; by default glibc
    returns them (unmapping, trimming the heap) and takes them back a page fault at a time: half
    a million faults, a fifth of the run, for a 1M-record dump (bench: ``dump --format json``,
    single-record batches).  Peak memory is the same.
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's C library: glibc's has it, others may not
    except (OSError, AttributeError):
        return
    m_trim_threshold, m_mmap_threshold = -1, -3  # glibc's malloc.h
    mallopt(m_mmap_threshold, 32 * 1024 * 1024)  # glibc's largest: blocks up to it come from the heap
    mallopt(m_trim_threshold, 256 * 1024 * 1024)


def decoding_without_collection() -> None:
    """Decoding allocates many small acyclic objects: the cycle collector only costs time there
    (bench: the ``dump`` rows)."""
    gc.disable()


def freeze_what_is_alive() -> None:
    """At exit: what is alive now lives to the end, so the interpreter's last collection need not
    visit it (with numpy and the layouts loaded, that collection took 60 of the 80 ms of every
    exit; bench: cold ``segtool lookup``)."""
    gc.freeze()


def hash_first_input_early(paths: list[str]) -> None:
    """Start the first named file's sha256 in a child before the command loads its checking code,
    so the hash (the critical path) starts at ~0.11 s instead of ~0.19 s (bench: ``verify`` and
    ``rebuild-index`` of 1 GiB against a hash-only process)."""
    from segtool.source import start_sha256_early  # hashlib: only the commands that hash pay for it

    if paths:
        start_sha256_early(os.fspath(paths[0]))
