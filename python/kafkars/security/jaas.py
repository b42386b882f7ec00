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
    head = re.match(r"\s*([A-Za-z0-9_.$]+)\s+([a-z]+)", text)
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
            if text[pos:].strip():
                raise ConfigException.invalid(
                    name, "[hidden]", "only one login module may be configured"
                )
            return entry
        value = m.group("quoted")
        value = re.sub(r"\\(.)", r"\1", value) if value is not None else m.group("bare")
        entry.options[m.group("key")] = value
    raise ConfigException.invalid(name, "[hidden]", "the login module must end with ';'")
