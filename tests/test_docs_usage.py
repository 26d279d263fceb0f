"""docs/usage.md shows real output: regenerating it from sample_data/ must change nothing."""

import subprocess
import sys

import pytest

from tests.conftest import REPO, corpus_path

# every example of docs/usage.md rerun in a shell (dozens of processes): the full tier
pytestmark = pytest.mark.slow


def test_usage_examples_match_fresh_output():
    corpus_path("kafka", "c02-unclean-hot-copy")  # one example trims a corpus hot copy: skips without the corpus
    done = subprocess.run([sys.executable, str(REPO / "docs" / "generate_usage.py"), "--check"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, "docs/usage.md is stale; run `make docs`:\n" + done.stdout[-6000:] + done.stderr[-2000:]
