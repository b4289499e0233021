"""Where a broker process spends its time during one workload: py-spy record and a summary.

`recording(pid, path)` samples every thread of a running process with py-spy
(non-blocking, idle threads left out) for as long as the `with` block lasts
and writes the collapsed stacks to `path`; `summary(path)` reads them back as
a few lines: the share of samples per thread, the functions most often on top
of the stack (self), and our own functions most often anywhere on it
(inclusive, each counted once per sample). Used by `python -m bench table --profile DIR`.
"""

from __future__ import annotations

import collections
import contextlib
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

SAMPLES_PER_S = 250
STOP_TIMEOUT_S = 30.0
START_GRACE_S = 0.5
TOP = 12
#: Our own code, for the inclusive list; less the entry point, which every main-thread sample has.
OURS = re.compile(r"pulsar_(broker|bookie|common)")
ENTRY = re.compile(r"cli/main\.py|cli\.py\)|standalone\.py\)$")
_LINE = re.compile(r"^(.*) (\d+)$")
_FRAME = re.compile(r"^(?P<name>.*?) \((?P<file>[^():]*)(:\d+)?\)$")


def _py_spy() -> str:
    found = shutil.which("py-spy") or str(pathlib.Path(sys.executable).with_name("py-spy"))
    if not pathlib.Path(found).exists():
        raise RuntimeError("py-spy is not installed: pip install -e '.[bench]'")
    return found


@contextlib.contextmanager
def recording(pid: int, path: pathlib.Path) -> Iterator[None]:
    """py-spy on `pid` while the block runs; collapsed stacks (one per thread) into `path`."""
    args = [_py_spy(), "record", "--pid", str(pid), "--output", str(path), "--format", "raw",
            "--rate", str(SAMPLES_PER_S), "--nonblocking", "--threads"]
    spy = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(START_GRACE_S)  # py-spy attaches asynchronously; no event to wait on.
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        try:
            spy.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            spy.kill()
            spy.wait()


def _short(frame: str) -> str:
    """`name (path:line)` -> `name (file.py)`, the path cut to its package."""
    match = _FRAME.match(frame)
    if match is None:
        return frame
    file = match["file"]
    for marker in ("site-packages/", "/services/", "/lib/python3"):
        if marker in file:
            file = file.split(marker, 1)[1]
            break
    return f"{match['name']} ({file})"


def summary(path: pathlib.Path, top: int = TOP) -> list[str]:
    """Per thread share, top self functions, top inclusive functions of ours; as lines."""
    threads: collections.Counter[str] = collections.Counter()
    self_time: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in path.read_text().splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        stack, count = match[1].split(";"), int(match[2])
        total += count
        threads[stack[0]] += count
        frames = [_short(f) for f in stack[1:]]
        if frames:
            self_time[frames[-1]] += count
        for frame in set(frames):
            if OURS.search(frame) and not ENTRY.search(frame):
                inclusive[frame] += count
    if not total:
        return ["  no samples"]
    lines = [f"  {total} samples at {SAMPLES_PER_S}/s ({total / SAMPLES_PER_S:.1f} thread-s busy)"]
    lines += [f"  thread {share / total:6.1%}  {name}" for name, share in threads.most_common(4)]
    lines.append("  self (on top of the stack):")
    lines += [f"    {n / total:6.1%}  {name}" for name, n in self_time.most_common(top)]
    lines.append("  inclusive, our code:")
    lines += [f"    {n / total:6.1%}  {name}" for name, n in inclusive.most_common(top)]
    return lines


if __name__ == "__main__":
    for printed in summary(pathlib.Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else TOP):
        print(printed)
