"""The ZooKeeper client's SASL login, found where a Kafka broker finds it: in the JVM
system properties its scripts take from KAFKA_OPTS, e.g.

    KAFKA_OPTS="-Djava.security.auth.login.config=/etc/kafka/zookeeper_jaas.conf"

names a JAAS file whose `Client` section (another with `-Dzookeeper.sasl.clientconfig=`)
holds ZooKeeper's DigestLoginModule with the username and password (SASL DIGEST-MD5);
`-Dzookeeper.sasl.client=false` turns the login off. Kerberos (GSSAPI) is not supported.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kafkars.config.definition import ConfigException
from kafkars.security.jaas import parse_jaas_file

# The JVM system properties Kafka's JaasUtils reads, with their defaults.
JAVA_LOGIN_CONFIG = "java.security.auth.login.config"
ZK_SASL_CLIENT = "zookeeper.sasl.client"
ZK_LOGIN_CONTEXT_NAME = "zookeeper.sasl.clientconfig"
DEFAULT_ZK_LOGIN_CONTEXT_NAME = "Client"
DIGEST_LOGIN_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"


@dataclass(frozen=True)
class ZkSaslLogin:
    username: str
    password: str = field(repr=False)
    source: str = ""  # where it came from, for error messages

    def kazoo_options(self) -> dict[str, str]:
        return {"mechanism": "DIGEST-MD5", "username": self.username, "password": self.password}


def require_sasl_support() -> None:
    """Kazoo's SASL needs pure-sasl; without it kazoo would only retry the connection."""
    if importlib.util.find_spec("puresasl") is None:
        raise ConfigException("a ZooKeeper SASL login needs the pure-sasl package")


def system_properties(java_opts: str) -> dict[str, str]:
    """The `-Dkey=value` flags of a JVM command line (KAFKA_OPTS)."""
    out: dict[str, str] = {}
    for arg in shlex.split(java_opts):
        if arg.startswith("-D"):
            key, _, value = arg[2:].partition("=")
            out[key] = value
    return out


def zk_sasl_login(environ: Mapping[str, str] | None = None) -> ZkSaslLogin | None:
    """The login KAFKA_OPTS configures, or None when it configures none (as Kafka, a
    JAAS file without the section means no SASL, unless zookeeper.sasl.client=true
    asks for it). Raises ConfigException for a file that cannot be used."""
    props = system_properties((os.environ if environ is None else environ).get("KAFKA_OPTS", ""))
    path = props.get(JAVA_LOGIN_CONFIG)
    client = props.get(ZK_SASL_CLIENT, "").strip().lower()
    if not path or client == "false":
        return None
    context = props.get(ZK_LOGIN_CONTEXT_NAME, DEFAULT_ZK_LOGIN_CONTEXT_NAME)
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise ConfigException(f"{JAVA_LOGIN_CONFIG}: cannot read {path}: {e.strerror}") from None
    entries = parse_jaas_file(text, JAVA_LOGIN_CONFIG).get(context)
    if not entries:
        if client == "true":
            raise ConfigException(
                f"{JAVA_LOGIN_CONFIG}: {path} has no {context} section for ZooKeeper"
            )
        return None
    entry = entries[0]
    username, password = entry.options.get("username"), entry.options.get("password")
    if entry.login_module != DIGEST_LOGIN_MODULE or username is None or password is None:
        raise ConfigException(
            f"{JAVA_LOGIN_CONFIG}: the {context} section of {path} must be "
            f'{DIGEST_LOGIN_MODULE} required username="..." password="..."; '
            "(SASL DIGEST-MD5, the only ZooKeeper login kafkars supports)"
        )
    return ZkSaslLogin(username, password, f"section {context} of {path}")
