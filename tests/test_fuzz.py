"""The short fuzzing pass run in CI: every reader and command on mutated real files.

SEGTOOL_FUZZ_INPUTS sets the number of inputs (default 20,000, the CI pass: `make check`, marked
`fuzz`; `make test` runs the first 200 of the same inputs);
the seed is fixed so a failure can be replayed with tests.fuzz.harness.replay.
The long pass is `python -m tests.fuzz --inputs 500000` (see docs/fuzzing.md).
"""

from __future__ import annotations

import json
import os

import pytest

from tests.fuzz.harness import run_campaign
from tests.fuzz.mutate import seeds

FUZZ_SEED = 2026
FAST_INPUTS = 200


def test_seeds_cover_every_format():
    kinds = {seed.kind for seed in seeds()}
    expected = {"kafka-log", "kafka-offset-index", "kafka-time-index", "kafka-txn-index", "kafka-producer-snapshot",
                "kafka-leader-epoch-checkpoint", "kafka-partition-metadata", "rocketmq-commitlog",
                "rocketmq-consumequeue", "rocketmq-indexfile", "rocketmq-checkpoint"}
    assert expected <= kinds


def _campaign(inputs: int) -> None:
    result = run_campaign(inputs, FUZZ_SEED, processes=os.cpu_count() or 2)
    failures = result["failures"]
    print(f"\n[fuzz] {inputs} mutated inputs, seed {FUZZ_SEED}: {len(failures)} failures")
    assert not failures, json.dumps(failures[:5], indent=1)


@pytest.mark.fuzz
def test_no_traceback_hang_or_memory_blowup_on_mutated_inputs():
    _campaign(int(os.environ.get("SEGTOOL_FUZZ_INPUTS", "20000")))


def test_the_first_mutated_inputs_of_the_pass():
    """The fast tier's share of the pass: its first inputs (same seed, so the same inputs)."""
    _campaign(FAST_INPUTS)
