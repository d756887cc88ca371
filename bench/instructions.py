"""Work per sequential read through the gate that does not depend on the machine's speed.

    .venv/bin/python bench/instructions.py [--reads N] [--tree DIR] [--smoke]   # defaults: 1000, this checkout

Wall-clock figures on a shared VM move by 30-50 % between runs of the same code; user-space
instruction counts do not. This runs `bench/gate.py`'s set-up (one run, one lease, the no-op read
tool) under `valgrind --tool=callgrind` twice, with 200 warm-up reads and then 0 or N more reads,
and prints (instructions of the second - of the first) / N. `PYTHONHASHSEED=0`. A read's settle
rides the next read's admit as it does at full speed (there is no timer to outrun under valgrind).
Kernel work (the WAL's writes) is not counted. About 2-3 minutes. `--tree` measures another
checkout with this script.

`--smoke` (tests/bench/) runs the measured program once natively (5 warm-up reads, 5 reads: the
set-up and the reads, not their count), then the counting itself (callgrind, its summary line,
the difference) on a tiny loop instead of the gateway: under valgrind Python runs about 50 times
slower, and the gateway's imports alone would take minutes there.
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
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
WARMUP = 200
SMOKE_READS = SMOKE_WARMUP = 5
SMOKE_LOOP = 10_000  # iterations of the loop --smoke counts


async def _reads(count: int, tree: Path, warmup: int = WARMUP) -> None:
    """The measured program: `warmup` + count sequential reads (run under callgrind)."""
    sys.path.insert(0, str(tree / "bench"))
    import gate as bench  # the tree's bench/gate.py, which puts the tree's gateway first on sys.path

    with tempfile.TemporaryDirectory() as folder:
        store, gateway, token = await bench.setup(os.path.join(folder, "warrant.db"))
        try:
            for _ in range(warmup + count):
                result = await gateway.call(token, bench.READ_TOOL, {"q": "status"})
                if result.is_error:
                    raise SystemExit(f"a read failed: {result.content}")
        finally:
            await store.close()


def _counted(argv: Sequence[str], out: Path, cwd: Path) -> int:
    """User-space instructions of one program run under callgrind (its summary line)."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    match = re.search(r"^summary:\s+(\d+)", out.read_text(), re.MULTILINE)
    if match is None:
        raise SystemExit(f"no summary line in {out}")
    return int(match.group(1))


def _measured(tree: Path, warmup: int = WARMUP) -> list[str]:
    """The measured program's command line, this file in its `--run` role, less the reads' count."""
    return [sys.executable, str(HERE / "instructions.py"), "--tree", str(tree), "--warmup", str(warmup), "--run"]


def _per_step(program: list[str], count: int, cwd: Path) -> float:
    """(instructions of `program` given `count` as its last argument - given 0) / count."""
    with tempfile.TemporaryDirectory() as folder:
        base = _counted([*program, "0"], Path(folder) / "callgrind.0", cwd)
        more = _counted([*program, str(count)], Path(folder) / f"callgrind.{count}", cwd)
    return (more - base) / count


def smoke(tree: Path) -> int:
    started = time.perf_counter()
    done = subprocess.run([*_measured(tree, SMOKE_WARMUP), str(SMOKE_READS)], cwd=tree, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"the measured program failed ({done.returncode}):\n{done.stderr[-3000:]}", file=sys.stderr)
        return 1
    print(f"measured program, natively: {SMOKE_WARMUP} + {SMOKE_READS} reads in {time.perf_counter() - started:.2f} s")
    if shutil.which("valgrind") is None:
        print("valgrind missing: the count itself was not smoke-tested (Debian: apt-get install valgrind)")
        return 0
    started = time.perf_counter()
    loop = [sys.executable, "-S", "-c", "import sys\nfor i in range(int(sys.argv[1])): pass"]
    per_iteration = _per_step(loop, SMOKE_LOOP, tree)
    print(
        f"callgrind on a {SMOKE_LOOP:,}-iteration loop: {per_iteration:.1f} user-space instructions per iteration"
        f" ({time.perf_counter() - started:.1f} s)"
    )
    if per_iteration <= 0:
        print("ERROR: the loop's count did not grow with its iterations", file=sys.stderr)
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reads", type=int, default=1000, help="reads measured (default 1000)")
    parser.add_argument("--tree", default=str(HERE.parent), help="the checkout to measure (default: this one)")
    parser.add_argument("--smoke", action="store_true", help="the measured program natively, the count on a loop")
    parser.add_argument("--run", type=int, help=argparse.SUPPRESS)  # the measured program itself
    parser.add_argument("--warmup", type=int, default=WARMUP, help=argparse.SUPPRESS)  # its warm-up reads
    args = parser.parse_args()
    tree = Path(args.tree).resolve()
    if args.run is not None:
        asyncio.run(_reads(args.run, tree, args.warmup))
        return 0
    if args.smoke:
        return smoke(tree)
    if args.reads < 1:
        parser.error("--reads must be at least 1")
    if shutil.which("valgrind") is None:
        print("bench/instructions.py needs valgrind (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    per_read = _per_step(_measured(tree), args.reads, tree)
    print(f"{tree}: {per_read / 1e6:.3f} M user-space instructions per sequential read ({args.reads} reads)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
