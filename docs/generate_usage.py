"""Regenerate the example output in docs/usage.md and docs/replicas.md from real runs of segtool.

Every ```console block of each page is a script: its ``$ `` lines (with any
here-document that follows) are run in order, in one bash session per block,
from the repository root, and the text after each command is replaced by what
it printed (stdout and stderr together, as a terminal shows them).  Prose and
other blocks are left as they are.

Two substitutions keep the page the same on every machine: paths under
``/tmp/`` in a command are redirected to a scratch directory emptied before
the run (``SCRATCH``, printed back as ``/tmp/``; a fixed path, so names derived
from a path are stable; segtool's cache lives there too), and the repository's
absolute path is printed as ``.``.

    python docs/generate_usage.py                          # rewrite both pages
    python docs/generate_usage.py --check                  # exit 1 with a diff if one is stale
    python docs/generate_usage.py --check docs/replicas.md # one page
"""

from __future__ import annotations

import difflib
import os
import re
import subprocess
import sys
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGES = (REPO / "docs" / "usage.md", REPO / "docs" / "replicas.md")
_FENCE = "```"
_HEREDOC = re.compile(r"<<-?\s*'?\"?(\w+)'?\"?")
_MARK = "\x1esegtool-docs-command-{}\x1e"
SCRATCH = "/tmp/segtool-usage-docs"


def _commands(block: list[str]) -> list[str]:
    """The commands of one console block: ``$ `` lines with their here-documents."""
    commands: list[str] = []
    lines = iter(block)
    for line in lines:
        if not line.startswith("$ "):
            continue
        command = [line[2:]]
        heredoc = _HEREDOC.search(line[2:])
        if heredoc:
            for body in lines:
                command.append(body)
                if body.strip() == heredoc.group(1):
                    break
        commands.append("\n".join(command))
    return commands


def _run_block(commands: list[str], scratch: str) -> list[str]:
    """Run one block's commands in one shell; each command's output, as text."""
    script = ["status=0"]
    for number, command in enumerate(commands):
        command = command.replace("/tmp/", scratch + "/")
        # `(exit $status)` hands the previous command's code to a following `echo $?`
        script.append(f"printf '{_MARK.format(number)}\\n'; (exit $status)\n{{ {command}\n}} 2>&1; status=$?")
    # PYTHONPATH: this checkout's segtool (a git worktree's), not the one the environment was installed from
    python_path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               PYTHONPATH=python_path,
               COLUMNS="80", NO_COLOR="1", TERM="dumb", LC_ALL="C.UTF-8", TZ="UTC",
               XDG_CACHE_HOME=os.path.join(scratch, "cache"))
    done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=900)
    text = done.stdout.replace(scratch, "/tmp").replace(str(REPO) + "/", "./").replace(str(REPO), ".")
    outputs = []
    for number in range(len(commands)):
        start = text.index(_MARK.format(number)) + len(_MARK.format(number)) + 1
        following = _MARK.format(number + 1)
        end = text.index(following) if following in text else len(text)
        outputs.append(text[start:end])
    return outputs


def render(source: str) -> str:
    """A page with every console block's output produced afresh."""
    lines = source.split("\n")
    result: list[str] = []
    shutil.rmtree(SCRATCH, ignore_errors=True)
    os.makedirs(SCRATCH)
    scratch = SCRATCH
    try:
        index = 0
        while index < len(lines):
            line = lines[index]
            result.append(line)
            index += 1
            if line.strip() != _FENCE + "console":
                continue
            end = lines.index(_FENCE, index)
            commands = _commands(lines[index:end])
            for command, output in zip(commands, _run_block(commands, scratch)):
                result.append("$ " + command)
                if output:
                    result.extend(output.rstrip("\n").split("\n"))
            index = end
    finally:
        shutil.rmtree(SCRATCH, ignore_errors=True)
    return "\n".join(result)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    pages = [Path(arg).resolve() for arg in argv if arg != "--check"] or PAGES
    stale = 0
    for page in pages:
        current = page.read_text()
        fresh = render(current)
        name = page.relative_to(REPO)
        if not check:
            page.write_text(fresh)
        elif fresh != current:
            stale = 1
            sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), fresh.splitlines(True),
                                                       f"{name} (committed)", f"{name} (fresh output)"))
    return stale


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
