"""The machine this process runs on, as far as it may use it: its CPUs and its memory.

Measured, not assumed: under ``taskset``, a container's CPU set, a cgroup's memory limit or an
address-space limit (``ulimit -v``) ccac gets less than the machine has, and sizing pools and
horizons to the machine would only make processes take turns or run out of memory.
"""

from __future__ import annotations

import os
from pathlib import Path

FALLBACK_MEMORY = 16 * 2**30
"""Assumed memory when the machine's cannot be read (non-POSIX systems)."""


def usable_cpus() -> int:
    """CPUs this process may run on: fewer than the machine's under ``taskset`` or a
    container's CPU set, where racing or pooling as many processes as the machine has cores
    would only make them take turns."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def machine_memory() -> int:
    """Bytes of memory this process may use: the machine's, or less under a cgroup limit or an
    address-space limit (``ulimit -v``)."""
    sizes: list[int] = []
    try:
        sizes.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        pass
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            sizes.append(soft)
    except (ImportError, ValueError, OSError):
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            sizes.append(int(text))
    return min(sizes) if sizes else FALLBACK_MEMORY
