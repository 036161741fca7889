"""Where a long run's C heap grew: live bytes per allocation site, from a heaptrack recording.

A soak's RSS trend mixes what grows for good with what a moment holds (a second window open, a
job's temporaries). This reads heaptrack's raw events, takes the live bytes of every allocation
site (its call stack) every ``--every`` seconds, and reports, per site, how much the *least* it
held over a late window exceeds the least over an early one: a transient is absent from one of
a window's snapshots and drops out. Sites are grouped by their innermost library and by stack.

    xvfb-run -a heaptrack -o soak "$(python3 -c 'import sys; print(sys.executable)')" \\
        benchmarks/soak_gui.py --child --minutes 14 --seed 5 --report child.json
    python3 benchmarks/heap_growth.py soak.zst --early 90,240 --late 690,840

Run heaptrack on the interpreter itself, not a pyenv shim (a shell script: heaptrack follows
it and records nothing). About 3 minutes for a 14-minute recording (10 M allocation events).
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys

ALLOCATORS = ("malloc", "calloc", "realloc", "operator new", "_PyObject_Malloc", "PyMem_", "_PyMem", "heaptrack")


def live_bytes(path: str, times_s: list[float]) -> dict:
    """Replay the recording: at each of ``times_s``, the live bytes per allocation-info index
    (a size and a stack), with the tables that name the stacks."""
    strings, ips, traces = [None], [None], [None]  # heaptrack's indices count from 1
    size, trace_of, live, snapshots = [], [], [], []
    pending = [t * 1000 for t in sorted(times_s)]
    # heaptrack's interpreted format: one event per line, fields in hex
    with subprocess.Popen(["zstd", "-dc", path], stdout=subprocess.PIPE, bufsize=1 << 20) as events:
        for line in events.stdout:
            kind = line[:1]
            if kind == b"+":
                live[int(line[2:], 16)] += 1
            elif kind == b"-":
                live[int(line[2:], 16)] -= 1
            elif kind == b"a":
                _, nbytes, trace = line.split()
                size.append(int(nbytes, 16))
                trace_of.append(int(trace, 16))
                live.append(0)
            elif kind == b"t":
                _, ip, parent = line.split()
                traces.append((int(ip, 16), int(parent, 16)))
            elif kind == b"i":
                # ip, module, then [function [file line]] and (function file line) per inlined frame
                ip, module, *named = (int(x, 16) for x in line.split()[1:])
                if len(named) % 3 == 1:  # a function without a file
                    named[1:1] = [0, 0]
                ips.append((module, [tuple(named[j : j + 3]) for j in range(0, len(named), 3)]))
            elif kind == b"s":
                text = line.decode(errors="replace").rstrip("\n")
                strings.append(text.split(" ", 2)[2] if text.count(" ") >= 2 else "")
            elif kind == b"c":
                now = int(line[2:], 16)
                while pending and now >= pending[0]:
                    snapshots.append((pending.pop(0) / 1000, [n * s for n, s in zip(live, size)]))
    return {"strings": strings, "ips": ips, "traces": traces, "trace_of": trace_of, "snapshots": snapshots}


def frames(record: dict, trace: int) -> list[str]:
    """The stack of ``trace``, innermost first, as 'function [library]'."""
    strings, ips, traces = record["strings"], record["ips"], record["traces"]
    out = []
    while trace:
        ip, trace = traces[trace]
        module, inlined = ips[ip]
        library = (strings[module] or "?").rsplit("/", 1)[-1]
        out += [f"{strings[func] or '?'} [{library}]" for func, _, _ in inlined] or [f"? [{library}]"]
    return out


def growth(record: dict, early: tuple[float, float], late: tuple[float, float]) -> collections.Counter:
    """Per stack: the least live bytes over the late window minus the least over the early one."""

    def per_trace(values):
        held = collections.Counter()
        for info, nbytes in enumerate(values):
            if nbytes:
                held[record["trace_of"][info]] += nbytes
        return held

    def least(window):
        held = [per_trace(v) for t, v in record["snapshots"] if window[0] <= t <= window[1]]
        if not held:
            raise SystemExit(f"no snapshot between {window[0]} and {window[1]} s")
        return {trace: min(h.get(trace, 0) for h in held) for trace in set().union(*held)}

    a, b = least(early), least(late)
    return collections.Counter({t: b.get(t, 0) - a.get(t, 0) for t in set(a) | set(b)})


def report(record: dict, grown: collections.Counter, top: int, depth: int) -> str:
    by_library, by_stack = collections.Counter(), collections.Counter()
    for trace, nbytes in grown.items():
        inner = [f for f in frames(record, trace) if not any(a in f for a in ALLOCATORS)]
        by_library[inner[0].rsplit("[", 1)[-1].rstrip("]") if inner else "?"] += nbytes
        by_stack[" < ".join(inner[:depth])] += nbytes
    lines = [f"grown in all: {sum(grown.values()) / 1e6:.2f} MB", "", "by innermost library (MB):"]
    lines += [f"  {n / 1e6:8.2f}  {name}" for name, n in by_library.most_common(top)]
    lines += ["", "by stack (MB), innermost frame first:"]
    lines += [f"  {n / 1e6:8.2f}  {stack}" for stack, n in by_stack.most_common(top)]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recording", help="heaptrack's .zst file")
    parser.add_argument("--early", required=True, help="A0,A1: the early window, seconds from the start")
    parser.add_argument("--late", required=True, help="B0,B1: the late window")
    parser.add_argument("--every", type=float, default=30.0, help="seconds between snapshots")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--depth", type=int, default=12, help="frames of each stack shown")
    args = parser.parse_args(argv)
    early, late = (tuple(float(x) for x in w.split(",")) for w in (args.early, args.late))
    times = [args.every * k for k in range(1, int(late[1] / args.every) + 1)]
    record = live_bytes(args.recording, times)
    print(report(record, growth(record, early, late), args.top, args.depth))
    return 0


if __name__ == "__main__":
    sys.exit(main())
