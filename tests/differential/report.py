"""Renders the differential report (JSON, written by the tests) as a Markdown table.

    python tests/differential/report.py .cache/differential.json [--readme README.md]

One row per API kafkars advertises: the versions whose every scenario answered as Apache
Kafka did, those where fields differed (each field with the reason `known.py` gives),
and the versions no scenario exercised. With `--readme` the table replaces what lies
between the README's `<!-- differential:begin -->` and `<!-- differential:end -->`.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

BEGIN, END = "<!-- differential:begin -->", "<!-- differential:end -->"


def _ranges(versions: list[int]) -> str:
    if not versions:
        return "–"
    out, start, prev = [], versions[0], versions[0]
    for v in versions[1:] + [None]:  # type: ignore[list-item]
        if v is not None and v == prev + 1:
            prev = v
            continue
        out.append(f"v{start}" if start == prev else f"v{start}–{prev}")
        if v is not None:
            start = prev = v
    return ", ".join(out)


def render(report: dict[str, Any], names: dict[int, str]) -> tuple[str, dict[str, int]]:
    advertised = {int(k): tuple(v) for k, v in report["advertised"]["kafkars"].items()}
    theirs = {int(k): tuple(v) for k, v in report["advertised"]["kafka"].items()}
    seen: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for outcome in report["outcomes"]:
        seen[(outcome["api"], outcome["version"])].append(outcome)
    lines = [
        "| API | versions | identical | differs (field: reason) | not exercised |",
        "|---|---|---|---|---|",
    ]
    counts = {"identical": 0, "explained": 0, "unexercised": 0, "scenarios": 0}
    for key in sorted(advertised):
        name = names.get(key, str(key))
        low, high = advertised[key]
        identical, differing, unexercised = [], [], []
        reasons: dict[str, str] = {}
        for version in range(low, high + 1):
            outcomes = seen.get((name, version))
            if not outcomes:
                unexercised.append(version)
                continue
            counts["scenarios"] += len(outcomes)
            explained = {f: r for o in outcomes for f, r in o["explained"].items()}
            if explained:
                differing.append(version)
                reasons.update(explained)
            else:
                identical.append(version)
        counts["identical"] += len(identical)
        counts["explained"] += len(differing)
        counts["unexercised"] += len(unexercised)
        by_reason: dict[str, list[str]] = defaultdict(list)
        for field, reason in sorted(reasons.items()):
            by_reason[reason].append(f"`{field}`")
        differs = "<br>".join(f"{', '.join(fs)}: {r}" for r, fs in by_reason.items())
        kafka = theirs.get(key)
        versions = f"v{low}–{high}" + ("" if kafka is None else f" (Kafka v{kafka[0]}–{kafka[1]})")
        lines.append(
            f"| {name} ({key}) | {versions} | {_ranges(identical)} | "
            f"{_ranges(differing) + ': ' + differs if differing else '–'} | "
            f"{_ranges(unexercised)} |"
        )
    summary = (
        f"{counts['identical']} API versions answered identically in every scenario, "
        f"{counts['explained']} with the differences explained below, "
        f"{counts['unexercised']} not exercised; {counts['scenarios']} request/response "
        "comparisons in all."
    )
    return summary + "\n\n" + "\n".join(lines) + "\n", counts


def api_names() -> dict[int, str]:
    try:
        from kafkars import _core
    except ImportError:
        return {}
    return {key: name for name, (key, _, _) in _core.protocol.api_keys().items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--readme", type=Path)
    args = parser.parse_args()
    table, _ = render(json.loads(args.report.read_text()), api_names())
    if args.readme is None:
        print(table)
        return
    text = args.readme.read_text()
    block = f"{BEGIN}\n{table}{END}"
    if BEGIN not in text:
        raise SystemExit(f"{args.readme} has no {BEGIN} ... {END} block")
    args.readme.write_text(
        re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S)
    )
    print(f"{args.readme}: table updated")


if __name__ == "__main__":
    main()
