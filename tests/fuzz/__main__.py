"""The long fuzzing pass: `python -m tests.fuzz --inputs 500000 --seed 1 [--processes 2]`.

Prints the counts and writes every failure (with the seed to replay it through
``tests.fuzz.harness.replay``) to fuzz-failures.json.
"""

from __future__ import annotations

import argparse
import json
import time

from tests.fuzz.harness import run_campaign


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--inputs", type=int, default=500_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--out", default="fuzz-failures.json")
    args = parser.parse_args()
    start = time.perf_counter()
    def progress(done: int, failures: list) -> None:
        if done % 10_000 < 200:  # a line about every 10,000 inputs, failures saved as they come
            elapsed = time.perf_counter() - start
            print(f"{done} inputs, {len(failures)} failures, {elapsed:.0f} s", flush=True)
            with open(args.out, "w") as handle:
                json.dump(failures, handle, indent=1)

    result = run_campaign(args.inputs, args.seed, args.processes, progress=progress)
    elapsed = time.perf_counter() - start
    with open(args.out, "w") as handle:
        json.dump(result["failures"], handle, indent=1)
    print(f"{args.inputs} inputs, seed {args.seed}, {elapsed:.0f} s ({args.inputs / elapsed:.0f} inputs/s), "
          f"{len(result['failures'])} failures -> {args.out}")


if __name__ == "__main__":
    main()
