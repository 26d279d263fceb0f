"""CRC-32C (Kafka v2 batches, producer snapshots) from the crc32c package's compiled core.

The package's ``__init__`` asks ``importlib.metadata`` for its own version,
which costs about 50 ms at every start of every command; its extension module
alone loads in about a millisecond.  When the extension cannot be found this
way, the package is imported normally.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os


def _load_crc32c():
    spec = importlib.util.find_spec("crc32c")  # locates the package without running it
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "_crc32c" + suffix)
            if os.path.isfile(path):
                loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path)
                module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
                loader.exec_module(module)
                return module.crc32c
    from crc32c import crc32c as packaged

    return packaged


crc32c = _load_crc32c()
