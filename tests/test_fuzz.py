"""The short fuzzing pass run in CI: every reader and command on mutated real files.

SEGTOOL_FUZZ_INPUTS sets the number of inputs (default 20,000, the CI pass);
the seed is fixed so a failure can be replayed with tests.fuzz.harness.replay.
The long pass is `python -m tests.fuzz --inputs 500000` (see docs/fuzzing.md).
"""

from __future__ import annotations

import json
import os

from tests.fuzz.harness import run_campaign
from tests.fuzz.mutate import seeds

FUZZ_SEED = 2026


def test_seeds_cover_every_format():
    kinds = {seed.kind for seed in seeds()}
    expected = {"kafka-log", "kafka-offset-index", "kafka-time-index", "kafka-txn-index", "kafka-producer-snapshot",
                "kafka-leader-epoch-checkpoint", "kafka-partition-metadata", "rocketmq-commitlog",
                "rocketmq-consumequeue", "rocketmq-indexfile", "rocketmq-checkpoint"}
    assert expected <= kinds


def test_no_traceback_hang_or_memory_blowup_on_mutated_inputs():
    inputs = int(os.environ.get("SEGTOOL_FUZZ_INPUTS", "20000"))
    result = run_campaign(inputs, FUZZ_SEED, processes=os.cpu_count() or 2)
    failures = result["failures"]
    print(f"\n[fuzz] {inputs} mutated inputs, seed {FUZZ_SEED}: {len(failures)} failures")
    assert not failures, json.dumps(failures[:5], indent=1)
