"""Host memory held steady for a run, on a virtual machine that hands free memory back.

With virtio-balloon free page reporting (this machine, a Firecracker guest), the kernel
reports free memory to the host within moments and the host discards it; the next page
taken from it, by the page cache or a process, is faulted in by the host anew. Measured
here: 64 KiB acks=1 produce into topics that are kept ran at 370-420 MB/s with 4.0-4.7
broker CPU seconds per 1.5 GB (72 % of the samples in the copy into page cache), and at
1,560-2,050 MB/s with 0.9-1.1 s once reporting was paused and the free memory faulted in
once. Which broker's step drew new memory depended on the order of the steps and the
deletions before it, so the same step swung 4x between runs.

`steady()` pauses reporting for the run (the reporting order is set past the largest
block the buddy allocator has, restored after) and faults the free memory in once, before
the brokers start: every figure is then taken with memory the host already backs, as on a
machine without a balloon, for every broker alike."""

from __future__ import annotations

import mmap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.harness import limits

ORDER = Path("/sys/module/page_reporting/parameters/page_reporting_order")
BUDDYINFO = Path("/proc/buddyinfo")
MEMINFO = Path("/proc/meminfo")
# Left unfaulted, so the mapping that faults the rest in never pushes the machine into
# reclaim of what the run has not started yet.
MARGIN_BYTES = 1 << 30


def _orders() -> int:
    """NR_PAGE_ORDERS: the columns of a zone's line in /proc/buddyinfo."""
    line = BUDDYINFO.read_text().splitlines()[0]
    return len(line.split(",", 1)[1].split()) - 2  # "zone", its name, then a count per order


def _free_bytes() -> int:
    for line in MEMINFO.read_text().splitlines():
        if line.startswith("MemFree:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no MemFree in /proc/meminfo")


def _fault_in(size: int) -> None:
    """Map `size` bytes of anonymous memory with every page faulted in, then unmap it:
    the pages go back to the free lists, backed by the host from now on."""
    if size <= 0:
        return
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE
    mmap.mmap(-1, size, flags=flags).close()


@contextmanager
def steady(enabled: bool, note: Any = print) -> Iterator[dict[str, Any]]:
    """Reporting paused and free memory faulted in for the `with` body; what was done (or
    why not) is in the dict it yields, for the results' limits."""
    info: dict[str, Any] = {"free_page_reporting": limits.free_page_reporting()}
    if not info["free_page_reporting"]:
        yield info
        return
    if not enabled:
        info["host_memory"] = "as is (--host-memory as-is)"
        yield info
        return
    try:
        before = ORDER.read_text().strip()
        ORDER.write_text(f"{_orders()}\n")
    except (OSError, IndexError, ValueError) as e:
        why = e.strerror if isinstance(e, OSError) else str(e)
        info["host_memory"] = f"as is: could not pause free page reporting ({why})"
        note(f"host memory {info['host_memory']}")
        yield info
        return
    try:
        paused = (
            f"free page reporting paused (page_reporting_order {before} -> {_orders()}, "
            "restored after the run)"
        )
        size = _free_bytes() - MARGIN_BYTES
        began = time.monotonic()
        note(f"host memory: faulting in {size / 2**30:.1f} GiB of free memory")
        try:
            _fault_in(size)
        except OSError as e:
            # Reporting stays paused: memory a step takes is faulted in once, then kept.
            info["host_memory"] = f"{paused}; free memory not faulted in ({e.strerror})"
            note(f"host memory: {info['host_memory']}")
        else:
            seconds = time.monotonic() - began
            info["host_memory_steady"] = True
            info["host_memory"] = (
                f"steady: {paused}, {size / 2**30:.1f} GiB of free memory faulted in "
                f"before the brokers started ({seconds:.0f} s)"
            )
        yield info
    finally:
        ORDER.write_text(f"{before}\n")
