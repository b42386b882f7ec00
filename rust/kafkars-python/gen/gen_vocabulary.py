#!/usr/bin/env python3
"""Generate python/kafkars/protocol/vocabulary.py: Kafka's error codes and API keys.

Both come from the kafka-protocol crate the workspace builds against (the same source the
protocol bridge is generated from): the `define_errors!` table in `src/error.rs` (name,
code, retriable, description, as Kafka's `Errors.java` has them) and `enum ApiKey` in
`src/messages.rs`. Python then imports one vocabulary instead of keeping a copy by hand.

Usage (from anywhere inside the repository):

    python3 rust/kafkars-python/gen/gen_vocabulary.py [--check]

`--check` writes nothing and exits 1 when the committed file differs (CI runs it).
Stdlib only.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

from gen_protocol_bridge import kafka_protocol_src

ROOT = Path(__file__).resolve().parents[3]
OUTPUT = ROOT / "python" / "kafkars" / "protocol" / "vocabulary.py"

ERROR_ROW = re.compile(r'^\s*\((\w+),\s*(-?\d+),\s*(true|false),\s*"((?:[^"\\]|\\.)*)"\),', re.M)
API_KEY_ROW = re.compile(r"^\s*(\w+) = (\d+),$", re.M)


def upper_snake(name: str) -> str:
    """`NotLeaderOrFollower` -> `NOT_LEADER_OR_FOLLOWER` (Kafka's constant names)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


def errors(src: Path) -> list[tuple[str, int, bool, str]]:
    text = (src / "error.rs").read_text()
    table = text[text.index("define_errors! { ResponseError") :]
    rows = [
        (upper_snake(name), int(code), retriable == "true", desc.replace('\\"', '"'))
        for name, code, retriable, desc in ERROR_ROW.findall(table)
    ]
    if len(rows) < 100:
        sys.exit(f"only {len(rows)} error codes parsed from {src / 'error.rs'}")
    return rows


def api_keys(src: Path) -> list[tuple[str, int]]:
    text = (src / "messages.rs").read_text()
    start = text.index("pub enum ApiKey {")
    body = text[start : text.index("\n}", start)]
    rows = [(upper_snake(name), int(key)) for name, key in API_KEY_ROW.findall(body)]
    if len(rows) < 50:
        sys.exit(f"only {len(rows)} API keys parsed from {src / 'messages.rs'}")
    return rows


def description(name: str, desc: str) -> list[str]:
    """One `DESCRIPTIONS` entry within 100 columns (the file is excluded from ruff format)."""
    line = f"    Errors.{name}: {json.dumps(desc)},"
    if len(line) <= 100:
        return [line]
    parts = textwrap.wrap(desc, 80, drop_whitespace=False, break_on_hyphens=False)
    return [f"    Errors.{name}: ("] + [f"        {json.dumps(p)}" for p in parts] + ["    ),"]


def render(version: str, src: Path) -> str:
    out = [
        f'"""Kafka\'s error codes and API keys: GENERATED from kafka-protocol {version} by',
        "rust/kafkars-python/gen/gen_vocabulary.py; do not edit.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from enum import IntEnum",
        "",
        "",
        "class Errors(IntEnum):",
        '    """Error codes as Apache Kafka numbers them (`o.a.k.common.protocol.Errors`)."""',
        "",
    ]
    rows = errors(src)
    codes = sorted([("NONE", 0)] + [(name, code) for name, code, _, _ in rows], key=lambda r: r[1])
    out += [f"    {name} = {code}" for name, code in codes]
    out += [
        "",
        "",
        "# Kafka's description of each error (the message of its default exception).",
        "DESCRIPTIONS: dict[Errors, str] = {",
    ]
    for name, _, _, desc in rows:
        out += description(name, desc)
    out += [
        "}",
        "",
        "# Errors a client may retry (Kafka's RetriableException subclasses).",
        "RETRIABLE: frozenset[Errors] = frozenset(",
        "    {",
    ]
    out += [f"        Errors.{name}," for name, _, retriable, _ in rows if retriable]
    out += [
        "    }",
        ")",
        "",
        "",
        "class ApiKey(IntEnum):",
        '    """API keys as Apache Kafka numbers them."""',
        "",
    ]
    out += [f"    {name} = {key}" for name, key in sorted(api_keys(src), key=lambda r: r[1])]
    out += [
        "",
        "    @property",
        "    def request_name(self) -> str:",
        '        """Kafka\'s request name in logs and metrics: `Produce`, `ListOffsets`."""',
        '        return "".join(part.capitalize() for part in self.name.split("_"))',
    ]
    return "\n".join(out) + "\n"


def main() -> None:
    src, version = kafka_protocol_src()
    text = render(version, src)
    if "--check" in sys.argv:
        if not OUTPUT.exists() or OUTPUT.read_text() != text:
            sys.exit(f"{OUTPUT} is stale: run {Path(__file__).relative_to(ROOT)}")
        return
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text)


if __name__ == "__main__":
    main()
