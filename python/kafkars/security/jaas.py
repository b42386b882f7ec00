"""Kafka's JAAS configuration values (``sasl.jaas.config``): one login module with its
flag and options, e.g. ``org.apache.kafka.common.security.plain.PlainLoginModule
required username="admin" password="secret" user_alice="alice-secret";``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kafkars.config.definition import ConfigException

_TOKEN = re.compile(
    r'\s*(?:(?P<key>[A-Za-z0-9_.\-]+)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s;"]+))|(?P<end>;))'
)
_FLAGS = ("required", "requisite", "sufficient", "optional")


@dataclass
class JaasEntry:
    login_module: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)


def parse_jaas_config(text: str, name: str = "sasl.jaas.config") -> JaasEntry:
    """The one login module of a ``sasl.jaas.config`` value (Kafka allows exactly one)."""
    entry, pos = _parse_entry(text, 0, name)
    if text[pos:].strip():
        raise ConfigException.invalid(name, "[hidden]", "only one login module may be configured")
    return entry


def _parse_entry(text: str, pos: int, name: str) -> tuple[JaasEntry, int]:
    """One `<LoginModule> <flag> key="value" ... ;` from `pos`; returns it and the
    position after its ';'."""
    head = re.compile(r"\s*([A-Za-z0-9_.$]+)\s+([a-z]+)").match(text, pos)
    if head is None or head.group(2) not in _FLAGS:
        raise ConfigException.invalid(
            name, "[hidden]", "expected '<LoginModule> required key=\"value\" ...;'"
        )
    entry = JaasEntry(head.group(1), head.group(2))
    pos = head.end()
    while pos < len(text):
        if not text[pos:].strip():
            break
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ConfigException.invalid(name, "[hidden]", f"cannot parse near offset {pos}")
        pos = m.end()
        if m.group("end"):
            return entry, pos
        value = m.group("quoted")
        value = re.sub(r"\\(.)", r"\1", value) if value is not None else m.group("bare")
        entry.options[m.group("key")] = value
    raise ConfigException.invalid(name, "[hidden]", "the login module must end with ';'")


_SECTION = re.compile(r"\s*([A-Za-z0-9_.\-]+)\s*\{")
_SECTION_END = re.compile(r"\s*\}\s*;")
# Comments on their own lines (`//`, `#`) and `/* ... */` blocks.
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
_LINE_COMMENT = re.compile(r"^\s*(?://|#).*$", re.MULTILINE)


def parse_jaas_file(text: str, name: str) -> dict[str, list[JaasEntry]]:
    """A JAAS login configuration file (`java.security.auth.login.config`): its sections
    (`Client { ... };`, `KafkaServer { ... };`) by name, each with its login modules."""
    text = _LINE_COMMENT.sub("", _BLOCK_COMMENT.sub("", text))
    sections: dict[str, list[JaasEntry]] = {}
    pos = 0
    while text[pos:].strip():
        m = _SECTION.match(text, pos)
        if m is None:
            raise ConfigException.invalid(name, "[hidden]", f"expected 'Name {{' at offset {pos}")
        entries = sections.setdefault(m.group(1), [])
        pos = m.end()
        while (end := _SECTION_END.match(text, pos)) is None:
            if not text[pos:].strip():
                raise ConfigException.invalid(
                    name, "[hidden]", f"section {m.group(1)} does not end with '}};'"
                )
            entry, pos = _parse_entry(text, pos, name)
            entries.append(entry)
        pos = end.end()
    return sections
