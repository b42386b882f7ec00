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

UNEXPLAINED = "not explained: a failing differential test (to be fixed)"
BEGIN, END = "<!-- differential:begin -->", "<!-- differential:end -->"


def _generic(path: str) -> str:
    return re.sub(r"\[[^\]#][^\]]*\]", "[]", path)


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
        "| API (key) | kafkars (Kafka 4.1) | identical | differs: fields [reason] "
        "| not exercised |",
        "|---|---|---|---|---|",
    ]
    notes: dict[str, int] = {}
    counts = {"identical": 0, "explained": 0, "unexercised": 0, "comparisons": 0}
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
            counts["comparisons"] += len(outcomes)
            explained = {f: r for o in outcomes for f, r in o["explained"].items()}
            for o in outcomes:
                for path in o["differing"]:
                    field = _generic(path)
                    explained.setdefault(field, UNEXPLAINED)
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
        cells = []
        for reason, fields in by_reason.items():
            number = notes.setdefault(reason, len(notes) + 1)
            cells.append(f"{', '.join(fields)} [{number}]")
        kafka = theirs.get(key)
        versions = f"v{low}–{high}" + ("" if kafka is None else f" (v{kafka[0]}–{kafka[1]})")
        differs = f"{_ranges(differing)}: {'; '.join(cells)}" if differing else "–"
        lines.append(
            f"| {name} ({key}) | {versions} | {_ranges(identical)} | {differs} | "
            f"{_ranges(unexercised)} |"
        )
    summary = (
        f"Of the {sum(h - lo + 1 for lo, h in advertised.values())} API versions kafkars "
        f"advertises, **{counts['identical']} answered exactly as Apache Kafka 4.1 did in "
        f"every scenario**, {counts['explained']} differed only in the fields listed (each "
        f"reason below), {counts['unexercised']} were not exercised; "
        f"{counts['comparisons']} request/response comparisons in all."
    )
    reasons_text = "\n".join(f"{n}. {r}" for r, n in notes.items())
    zk = report.get("zookeeper_outcomes", [])
    zk_text = ""
    if zk:
        same = sum(1 for o in zk if not o["differing"])
        zk_text = (
            f"\n\nIn ZooKeeper mode, against Apache Kafka 3.9 (one-broker clusters over one "
            f"ZooKeeper): {same} of {len(zk)} comparisons identical"
        )
        fields = sorted({_generic(f) for o in zk for f in o["differing"]})
        zk_text += (
            "; the differing fields, each explained by the reasons above or in "
            "`tests/differential/known.py`: " + ", ".join(f"`{f}`" for f in fields) + "."
            if fields
            else "."
        )
    table = summary + "\n\n" + "\n".join(lines) + "\n\n" + reasons_text + zk_text + "\n"
    return table, counts


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
