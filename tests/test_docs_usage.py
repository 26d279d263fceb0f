"""docs/usage.md and docs/replicas.md show real output: regenerating them must change nothing."""

import subprocess
import sys

import pytest

from tests.conftest import REPO, corpus_path

# every example of the pages rerun in a shell (dozens of processes): the full tier
pytestmark = pytest.mark.slow


def _check(page: str) -> None:
    done = subprocess.run([sys.executable, str(REPO / "docs" / "generate_usage.py"), "--check", str(REPO / page)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{page} is stale; run `make docs`:\n" + done.stdout[-6000:] + done.stderr[-2000:]


def test_usage_examples_match_fresh_output():
    corpus_path("kafka", "c02-unclean-hot-copy")  # one example trims a corpus hot copy: skips without the corpus
    _check("docs/usage.md")


def test_replicas_walk_through_matches_fresh_output():
    # the replica sets are built from corpus segments and stores: skips without the corpus
    for case in (("kafka", "c01-multiseg-clean"), ("rocketmq", "clean-multi"), ("rocketmq", "kill9-abort")):
        corpus_path(*case)
    _check("docs/replicas.md")
