"""Sizes as Kubernetes and runtimes write them: quantities ('512Mi'), JVM sizes ('-Xmx2g'), the
memory flags a container's env and args set (the JVM's, Node's, Go's), in bytes, and bytes for
people.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tools.read import payloads as p

_UNITS = {
    "": 1,
    "k": 1000,
    "m": 10**6,
    "g": 10**9,
    "t": 10**12,
    "ki": 1024,
    "mi": 1024**2,
    "gi": 1024**3,
    "ti": 1024**4,
}


_QTY = re.compile(r"^(?P<n>\d+(?:\.\d+)?)(?P<u>[kKmMgGtT]i?)?[bB]?$")


_JVM_SIZE = re.compile(r"^(?P<n>\d+)(?P<u>[kKmMgG])?$")


def quantity_bytes(text: str | None) -> float | None:
    """A Kubernetes quantity ('512Mi', '1Gi', '1.5G', '2000000') in bytes."""
    if not text:
        return None
    m = _QTY.match(str(text).strip())
    if not m:
        return None
    unit = (m.group("u") or "").lower()
    if unit == "m" and (m.group("u") or "") == "m":
        return float(m.group("n")) / 1000  # millis: a quantity, not megabytes
    return float(m.group("n")) * _UNITS.get(unit, 1)


_SIZE = re.compile(r"^(?P<n>\d+(?:\.\d+)?)\s?(?P<u>[kmgt])?i?b?$", re.I)


def size_bytes(text: str) -> float | None:
    """A size as programs take it on their command line ('1G', '512M', '1gb', '2GiB'),
    binary units, in bytes."""
    m = _SIZE.match(text.strip())
    if not m:
        return None
    unit = (m.group("u") or "").lower()
    return float(m.group("n")) * {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}[unit]


def cpu_cores(value: object) -> float | None:
    """A CPU quantity as the API writes it, in cores: "500m" -> 0.5, "4" -> 4.0."""
    raw = str(value or "")
    try:
        return float(raw[:-1]) / 1000 if raw.endswith("m") else float(raw)
    except ValueError:
        return None


def jvm_bytes(text: str) -> float | None:
    """A JVM/Node size ('1536m', '2g', '512' in bytes-or-MiB context) in bytes."""
    m = _JVM_SIZE.match(text.strip())
    if not m:
        return None
    unit = (m.group("u") or "").lower()
    return float(m.group("n")) * {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[unit]


def human(n: float) -> str:
    for unit, size in (("Gi", 1024**3), ("Mi", 1024**2), ("Ki", 1024)):
        if n >= size:
            value = n / size
            return f"{value:.0f}{unit}" if value == int(value) else f"{value:.1f}{unit}"
    return f"{n:.0f}B"


@dataclass(frozen=True)
class MemorySetting:
    """What the process was told it may use: `-Xmx1536m` in JAVA_TOOL_OPTIONS, …"""

    where: str  # "env JAVA_TOOL_OPTIONS", "args"
    flag: str  # the flag as written, e.g. "-Xmx1536m"
    bytes: float | None  # absolute size, when the flag gives one
    percent: float | None  # MaxRAMPercentage


_FLAGS = (
    (re.compile(r"-Xmx(\d+[kKmMgG]?)\b"), "xmx"),
    (re.compile(r"-XX:MaxRAMPercentage=(\d+(?:\.\d+)?)"), "ram_pct"),
    (re.compile(r"--max-old-space-size=(\d+)"), "node_mib"),
    (re.compile(r"^(\d+(?:\.\d+)?[KMGT]iB|\d+)$"), "gomemlimit"),
    # any other size the process is given for memory: a storage backend in RAM (varnish
    # `-s malloc,1G`), a cache or buffer or memory cap flag (`--cache-size=1G`,
    # `--maxmemory 1gb`, `--shared_buffers=2GB`, `--memory-limit 512M`), or a server
    # setting given as name=value (Postgres' `-c shared_buffers=1536MB`) — but not a planner
    # hint that allocates nothing (`effective_cache_size`)
    (re.compile(r"(?:-s\s+)?\bmalloc,(\d+(?:\.\d+)?[kKmMgGtT])\b"), "size"),
    (
        re.compile(
            r"(?<![\w.-])(?!-*effective)(?:--?[\w.-]*(?:mem|cache|heap|buffer)[\w.-]*[= ]|"
            r"[\w.-]*(?:mem|cache|heap|buffer)[\w.-]*=)"
            r"(\d+(?:\.\d+)?\s?[kKmMgGtT][iI]?[bB]?)(?![\w.])",
            re.I,
        ),
        "size",
    ),
)
_ENV_SIZE = re.compile(r"MEM|CACHE|HEAP|BUFFER", re.I)


def memory_settings(spec: p.ContainerSpec | None) -> list[MemorySetting]:
    if spec is None:
        return []
    sources = [("args", " ".join([*spec["command"], *spec["args"]]))]
    sources += [(f"env {e['name']}", e.get("value") or "") for e in spec["env"]]
    out: list[MemorySetting] = []
    for where, text in sources:
        for rx, kind in _FLAGS:
            if kind == "gomemlimit" and where != "env GOMEMLIMIT":
                continue
            if kind == "size" and where.startswith("env "):
                if _ENV_SIZE.search(where) and (n := size_bytes(text)) is not None:
                    out.append(MemorySetting(where, f"{where[4:]}={text}", n, None))
                continue
            for m in rx.finditer(text):
                value = m.group(1)
                flag = m.group(0)
                if kind == "xmx":
                    out.append(MemorySetting(where, flag, jvm_bytes(value), None))
                elif kind == "ram_pct":
                    out.append(MemorySetting(where, flag, None, float(value)))
                elif kind == "node_mib":
                    out.append(MemorySetting(where, flag, float(value) * 1024**2, None))
                elif kind == "size":
                    out.append(MemorySetting(where, flag, size_bytes(value), None))
                else:
                    size = value.replace("iB", "i")
                    out.append(
                        MemorySetting(where, f"GOMEMLIMIT={value}", quantity_bytes(size), None)
                    )
    return out
