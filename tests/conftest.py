"""Shared test fixtures: where the conformance corpus and sample data live."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE_DATA = REPO / "sample_data"
CORPUS = REPO.parent / "shared" / "corpus"


def corpus_path(*parts: str) -> Path:
    """A path inside ../shared/corpus, skipping the test when the corpus is absent."""
    path = CORPUS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"conformance corpus not present at {path} (needs ../shared/corpus beside the repo)")
    return path


@pytest.fixture
def corpus() -> Path:
    return corpus_path()
