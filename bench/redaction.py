"""Redaction time against input length, 10^3 … 10^6 characters: is it linear?

Each shape is a classic way to make a backtracking pattern quadratic (a long run of one
token alphabet with no terminator, a keyword repeated inside one token, a URL scheme with no
`://`, a JWT prefix repeated, one huge base64 token, a long line of ordinary log text). For
each it prints seconds per length and the ratio to the 10^3 time, against a baseline in the
same run: `str.lower` over the same text (linear by construction). A linear redactor's
ratios grow like the baseline's (x1000 from 10^3 to 10^6); a quadratic one's grow x10^6.

    .venv/bin/python -m bench.redaction [--max 1000000]
"""

from __future__ import annotations

import argparse
import base64
import os
import time
from collections.abc import Callable

from tools.redact import Redactor

LOG_LINE = "GET /api/orders 503 upstream timeout token=abc "
SHAPES: dict[str, Callable[[int], str]] = {
    "one token [A-Za-z0-9+.-]": lambda n: ("aB3+.-" * (n // 6 + 1))[:n],
    "keyword inside a token": lambda n: ("password" * (n // 8 + 1))[:n],
    "name=name=name…": lambda n: ("a_token=" * (n // 8 + 1))[:n],
    "scheme without ://": lambda n: "postgres" + ("a" * n)[: n - 8],
    "JWT prefix repeated": lambda n: ("eyJ-" * (n // 4 + 1))[:n],
    "random base64 token": lambda n: base64.b64encode(os.urandom(n))[:n].decode(),
    "log line of words": lambda n: (LOG_LINE * (n // len(LOG_LINE) + 1))[:n],
    "lines of one char": lambda n: ("a\n" * (n // 2 + 1))[:n],
}


def _time(fn: Callable[[], object], repeat: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max", type=int, default=1_000_000, help="largest input, chars")
    args = parser.parse_args()
    redactor = Redactor()
    sizes = [n for n in (10**3, 10**4, 10**5, 10**6) if n <= args.max]
    print(f"{'shape':28} " + " ".join(f"{n:>9}" for n in sizes) + "   ratio 10^6/10^3")
    worst = 0.0
    for name, make in SHAPES.items():
        times, base = [], []
        for n in sizes:
            text = make(n)
            times.append(_time(lambda t=text: redactor.text(t), repeat=3 if n < 10**6 else 1))
            base.append(_time(lambda t=text: t.lower(), repeat=3))
        worst = max(worst, times[-1])
        ratio = times[-1] / max(times[0], 1e-9)
        base_ratio = base[-1] / max(base[0], 1e-9)
        print(
            f"{name:28} "
            + " ".join(f"{t:9.4f}" for t in times)
            + f"   x{ratio:,.0f} (baseline str.lower x{base_ratio:,.0f})"
        )
    print(f"slowest at {sizes[-1]:,} chars: {worst:.3f} s")


if __name__ == "__main__":
    main()
