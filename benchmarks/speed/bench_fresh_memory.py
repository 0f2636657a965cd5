"""System seconds of touching fresh memory, by how long ago the process freed it.

    python -m benchmarks.speed.bench_fresh_memory [--mb 200] [--pauses 0,0,0.5,1,2,3,5]
        [--repeats 3]

What the system seconds in the CPU figures of docs/BENCHMARKS.md are made of. For each pause
of ``--pauses`` (seconds), after a first untimed touch: sleep that long, then allocate ``--mb``
MB with numpy, write every page (``np.ones``), free it; the system and user seconds of the
allocate-and-write are printed per MB (medians of ``--repeats``), and the machine's page
reporting (the Linux ``page_reporting`` module and a virtio balloon, which hand the hypervisor
free memory that stayed free about 2 s, after which touching it again costs the host's page
faults) when /sys shows it.

On the 2-core KVM machine of the figures (virtio_balloon with page reporting, order 9 = 2 MB):
memory freed under a second before costs about 0.1 ms of system time per MB, memory freed 3-5
s before 1.7-2.7 ms per MB -- twenty times more. A fit that needs N MB more than the fit before
it (reg="auto"'s validation sample and per-fold sums beside the fixed-reg fit's, in
bench_reg_auto's interleaved rounds) pays up to about 2.5 N ms of system time when the pages
came back from the host, and 0.1 N ms when they had not gone: the rounds' system seconds move
tenfold from one round to the next. Bare metal, or a VM without page reporting, has the cheap
figure only. docs/bench/default_fit.md quotes this script's output.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np


def page_reporting() -> str:
    """What /sys says of free page reporting to a hypervisor ("" when nothing)."""
    parts = []
    order = Path("/sys/module/page_reporting/parameters/page_reporting_order")
    if order.exists():
        parts.append(f"page_reporting order {order.read_text().strip()}")
    if Path("/sys/bus/virtio/drivers/virtio_balloon").exists():
        parts.append("virtio_balloon")
    return ", ".join(parts)


def touch(mb: int) -> tuple[float, float]:
    """(system, user) seconds of allocating and writing ``mb`` MB, then freeing it."""
    t = os.times()
    a = np.ones(mb * (1 << 20) // 8)
    t2 = os.times()
    del a
    return t2.system - t.system, t2.user - t.user


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--pauses", default="0,0,0.5,1,2,3,5")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    print(f"page reporting: {page_reporting() or 'none seen'}; load {os.getloadavg()[0]:.1f}",
          flush=True)
    touch(args.mb)
    for pause in (float(p) for p in args.pauses.split(",")):
        system, user = [], []
        for _ in range(args.repeats):
            time.sleep(pause)
            s, u = touch(args.mb)
            system.append(s)
            user.append(u)
        print(f"freed {pause:4.1f} s before: system {1e3 * np.median(system) / args.mb:.2f} "
              f"ms/MB (runs {', '.join(f'{s:.2f}' for s in system)} s), user "
              f"{1e3 * np.median(user) / args.mb:.2f} ms/MB", flush=True)


if __name__ == "__main__":
    main()
