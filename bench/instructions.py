"""Work per sequential read through the gate that does not depend on the machine's speed.

    .venv/bin/python bench/instructions.py [--reads N] [--tree DIR]     # defaults: 1000, this checkout

Wall-clock figures on a shared VM move by 30-50 % between runs of the same code; user-space
instruction counts do not. This runs `bench/gate.py`'s set-up (one run, one lease, the no-op read
tool) under `valgrind --tool=callgrind` twice, with 200 warm-up reads and then 0 or N more reads,
and prints (instructions of the second - of the first) / N. `PYTHONHASHSEED=0`; the store's lazy
delay is raised to 5 s, so that a read's settle rides the next read's batch as it does at full
speed (under valgrind a read takes ~50 times longer than the 5 ms delay). Kernel work (the WAL's
writes) is not counted. About 2-3 minutes. `--tree` measures another checkout with this script.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
WARMUP = 200


async def _reads(count: int, tree: Path) -> None:
    """The measured program: WARMUP + count sequential reads (run under callgrind)."""
    sys.path.insert(0, str(tree / "bench"))
    import gate as bench  # the tree's bench/gate.py, which puts the tree's gateway first on sys.path

    with tempfile.TemporaryDirectory() as folder:
        store, gateway, token = await bench.setup(os.path.join(folder, "warrant.db"))
        try:
            for _ in range(WARMUP + count):
                result = await gateway.call(token, bench.READ_TOOL, {"q": "status"})
                if result.is_error:
                    raise SystemExit(f"a read failed: {result.content}")
        finally:
            await store.close()


def _instructions(tree: Path, count: int, folder: Path) -> int:
    out = folder / f"callgrind.{count}"
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
    argv += [str(HERE / "instructions.py"), "--run", str(count), "--tree", str(tree)]
    subprocess.run(argv, cwd=tree, env=env, check=True, capture_output=True)
    match = re.search(r"^summary:\s+(\d+)", out.read_text(), re.MULTILINE)
    if match is None:
        raise SystemExit(f"no summary line in {out}")
    return int(match.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reads", type=int, default=1000, help="reads measured (default 1000)")
    parser.add_argument("--tree", default=str(HERE.parent), help="the checkout to measure (default: this one)")
    parser.add_argument("--run", type=int, help=argparse.SUPPRESS)  # the measured program itself
    args = parser.parse_args()
    if args.run is not None:
        asyncio.run(_reads(args.run, Path(args.tree).resolve()))
        return 0
    if shutil.which("valgrind") is None:
        print("bench/instructions.py needs valgrind (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    tree = Path(args.tree).resolve()
    with tempfile.TemporaryDirectory() as folder:
        base = _instructions(tree, 0, Path(folder))
        more = _instructions(tree, args.reads, Path(folder))
    per_read = (more - base) / args.reads
    print(f"{tree}: {per_read / 1e6:.3f} M user-space instructions per sequential read ({args.reads} reads)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
