"""What the command-line tools share: the Kafka client they speak through (confluent-kafka,
so a tool sees the broker the way every client does, imported lazily so `--help` works
without it), a reachability check that fails fast with one line instead of librdkafka's
reconnect log, and the click command class that turns client errors into that one line.

A tool never prints a traceback for a condition a user can cause (a broker that is down,
a topic that is missing, a bad argument): click's usage errors exit 2, everything else
the user can fix exits 1 with `Error: <what, and where>`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import os
import socket
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import click

from kafkars import __version__
from kafkars.config.definition import ConfigException
from kafkars.security.client_auth import AuthenticationError, ClientSecurity
from kafkars.security.client_auth import client_security as security_from_properties
from kafkars.security.client_auth import sasl_credentials as credentials_from_properties

# Bounded waits: Kafka's tools without a --timeout give up within this.
DEFAULT_TIMEOUT_S = 10.0

# librdkafka's own log (connect failures every few ms) goes to a logger nobody prints:
# the tools report what went wrong themselves, once.
_LIBRDKAFKA_LOG = logging.getLogger("kafkars.tools.librdkafka")
_LIBRDKAFKA_LOG.addHandler(logging.NullHandler())
_LIBRDKAFKA_LOG.propagate = False

# The bootstrap servers this tool checked, to name them in errors that do not.
_bootstrap: list[str] = []


def _broker() -> str:
    return f"bootstrap server {_bootstrap[-1]}" if _bootstrap else "the broker"


def version_option() -> Callable[[Any], Any]:
    """`--version`, printing the kafkars version as every tool does."""
    return click.version_option(__version__, "--version", message="%(version)s")


class Tool(click.Command):
    """A tool's command: `-h`/`--help`, Kafka client failures and timeouts as one line
    with exit code 1, and `greedy_options` that take several values after one flag, as
    Kafka's tools take `--producer-props k1=v1 k2=v2`."""

    greedy_options: frozenset[str] = frozenset()

    def __init__(self, *args: Any, greedy: Iterable[str] = (), **kwargs: Any) -> None:
        kwargs.setdefault("context_settings", {"help_option_names": ["-h", "--help"]})
        super().__init__(*args, **kwargs)
        self.greedy_options = frozenset(greedy)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, expand_greedy(args, self.greedy_options))

    def invoke(self, ctx: click.Context) -> Any:
        with client_errors():
            return super().invoke(ctx)


class ToolGroup(click.Group):
    """A tool with subcommands (`kafkars-perf-test producer|consumer`)."""

    command_class = Tool

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("context_settings", {"help_option_names": ["-h", "--help"]})
        super().__init__(*args, **kwargs)


def expand_greedy(args: Sequence[str], greedy: frozenset[str]) -> list[str]:
    """`--opt a b --x` -> `--opt a --opt b --x`: the values up to the next option."""
    out: list[str] = []
    current: str | None = None
    for arg in args:
        if arg.startswith("-"):
            name = arg.split("=", 1)[0]  # `--opt=a b` too
            current = name if name in greedy else None
            out.append(arg)
        elif current is not None and out[-1] != current:
            out += [current, arg]
        else:
            out.append(arg)
    return out


@contextlib.contextmanager
def client_errors() -> Iterator[None]:
    """Turns the Kafka client's exceptions into `click.ClickException`s (one line)."""
    try:
        yield
    except (click.exceptions.Exit, click.ClickException, click.Abort):
        raise
    except concurrent.futures.TimeoutError:
        raise click.ClickException(f"timed out waiting for {_broker()}") from None
    except BrokenPipeError:  # `tool | head`: the reader has gone; say nothing more
        # (Python's advice: point stdout at devnull so the exit's flush fails no more).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise click.exceptions.Exit(1) from None
    except OSError as e:
        raise click.ClickException(str(e)) from None
    except Exception as e:
        if type(e).__name__ == "KafkaException" and e.args:
            err = e.args[0]
            text = describe_error(err)
            if getattr(err, "name", lambda: "")().startswith("_"):  # local: say where
                text += f" ({_broker()})"
            raise click.ClickException(text) from None
        raise


def describe_error(err: Any) -> str:
    """`NAME: text` of a confluent-kafka KafkaError (or whatever it was given)."""
    if hasattr(err, "name") and hasattr(err, "str"):
        return f"{err.name()}: {err.str()}"
    return str(err)


def _confluent() -> Any:
    try:
        import confluent_kafka
    except ImportError:  # pragma: no cover - depends on the install
        raise click.ClickException("needs confluent-kafka: pip install confluent-kafka") from None
    return confluent_kafka


# -- properties --------------------------------------------------------------------------------
def parse_properties(pairs: Iterable[str], option: str) -> dict[str, str]:
    """`key=value` pairs (from repeated options or one comma-separated list) as a dict."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.UsageError(f"{option} expects key=value, got {pair!r}")
        out[key.strip()] = value
    return out


def read_properties(path: str | None, option: str = "--command-config") -> dict[str, str]:
    """A Java properties file of client settings (security.protocol, sasl.*, ssl.*)."""
    if path is None:
        return {}
    import javaproperties

    try:
        with open(path, encoding="utf-8") as f:
            return dict(javaproperties.load(f))
    except OSError as e:
        raise click.ClickException(f"cannot read {option} {path}: {e.strerror}") from None


# -- reachability ------------------------------------------------------------------------------
def bootstrap_addresses(bootstrap: str) -> list[tuple[str, int]]:
    """`host:port,[::1]:port,SASL_SSL://host:port` as (host, port) pairs."""
    out = []
    for item in filter(None, (s.strip() for s in bootstrap.split(","))):
        address = item.rpartition("://")[2]
        host, sep, port = address.rpartition(":")
        host = host.strip("[]")
        if not sep or not host or not port.isdigit():
            raise click.BadParameter(
                f"{item!r} is not host:port", param_hint="'--bootstrap-server'"
            )
        out.append((host, int(port)))
    if not out:
        raise click.BadParameter("no address given", param_hint="'--bootstrap-server'")
    return out


def check_reachable(bootstrap: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
    """Fails with one line naming the address unless a bootstrap server accepts a TCP
    connection within `timeout_s`: librdkafka would retry for a minute and log each try."""
    _bootstrap.append(bootstrap)
    deadline = time.monotonic() + timeout_s
    reasons = []
    for host, port in bootstrap_addresses(bootstrap):
        left = max(deadline - time.monotonic(), 0.1)
        try:
            socket.create_connection((host, port), timeout=left).close()
            return
        except socket.gaierror as e:
            reasons.append(f"{host}:{port} ({e.strerror})")
        except TimeoutError:
            reasons.append(f"{host}:{port} (no answer within {timeout_s:g} s)")
        except OSError as e:
            reasons.append(f"{host}:{port} ({e.strerror or e})")
    raise click.ClickException(f"cannot connect to bootstrap server {', '.join(reasons)}")


class ErrorSink:
    """librdkafka's `error_cb`: keeps the last error, and when every broker went down, so
    a polling loop can stop once none has come back for `grace_s` (a restart is fine)."""

    def __init__(self, grace_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.last: Any = None
        self.grace_s = grace_s
        self.down_since: float | None = None

    def __call__(self, err: Any) -> None:
        from confluent_kafka import KafkaError

        self.last = err
        if err.code() == KafkaError._ALL_BROKERS_DOWN and self.down_since is None:
            self.down_since = time.monotonic()

    def check(self) -> None:
        """Stops the tool, with one line, once no broker has answered for `grace_s`."""
        if self.down_since is None or time.monotonic() - self.down_since < self.grace_s:
            return
        if _bootstrap:
            try:
                check_reachable(_bootstrap[-1], 1.0)
                self.down_since = None  # back (librdkafka says so only by working again)
                return
            except click.ClickException:
                pass
        raise click.ClickException(f"lost {_broker()}: no broker answered for {self.grace_s:g} s")


def _quiet(bootstrap: str, extra: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "logger": _LIBRDKAFKA_LOG,
        "log.connection.close": False,
        "error_cb": ErrorSink(),
        **librdkafka_config(extra or {}),
    }


def admin(
    bootstrap: str, extra: dict[str, Any] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S
) -> Any:
    _confluent()
    from confluent_kafka.admin import AdminClient

    check_reachable(bootstrap, timeout_s)
    return AdminClient(_quiet(bootstrap, extra))


def producer(
    bootstrap: str, extra: dict[str, Any] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S
) -> Any:
    kafka = _confluent()
    check_reachable(bootstrap, timeout_s)
    return kafka.Producer(_quiet(bootstrap, extra))


def consumer(
    bootstrap: str,
    group: str,
    extra: dict[str, Any] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> Any:
    kafka = _confluent()
    check_reachable(bootstrap, timeout_s)
    config = {"group.id": group, "enable.auto.commit": False, **(extra or {})}
    return kafka.Consumer(_quiet(bootstrap, config))


def result(future: Any, timeout_s: float = 30.0) -> Any:
    """A future's result; its KafkaError or a timeout becomes the tool's one-line error."""
    with client_errors():
        return future.result(timeout_s)


def topic_partitions(client: Any, topic: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> list[int]:
    """The topic's partition ids, or a clean error when it does not exist."""
    with client_errors():
        meta = client.list_topics(topic, timeout=timeout_s).topics.get(topic)
    if meta is None or meta.error is not None:
        raise click.ClickException(f"Topic '{topic}' does not exist")
    return sorted(meta.partitions)


def config_source(entry: Any) -> int:
    """A described config's source as Kafka's number (confluent-kafka may give an enum)."""
    return int(getattr(entry.source, "value", entry.source))


# -- the wire protocol, for the APIs confluent-kafka does not expose ----------------------------
class WireClient:
    """One connection of kafkars' own client (`kafkars._core.BrokerConnection`):
    DescribeClientQuotas, AlterClientQuotas, OffsetDelete and the cluster-wide broker
    default have no confluent-kafka call. It takes the client
    settings a tool's properties file gives: `security.protocol` PLAINTEXT, SSL,
    SASL_PLAINTEXT or SASL_SSL; `sasl.mechanism` PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
    with `sasl.username`/`sasl.password` (or Java's `sasl.jaas.config`); `ssl.ca.location`,
    `ssl.certificate.location`, `ssl.key.location`, `ssl.key.password`,
    `enable.ssl.certificate.verification` and `ssl.endpoint.identification.algorithm`."""

    def __init__(
        self,
        host: str,
        port: int,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        config: dict[str, str] | None = None,
    ) -> None:
        security = client_security(config or {})
        try:
            self.connection = security.connect(
                (host, port), timeout_s=timeout_s, client_id=_CLIENT_ID
            )
        except AuthenticationError as e:
            raise click.ClickException(str(e)) from None
        except (OSError, ValueError) as e:
            raise click.ClickException(f"cannot connect to {host}:{port}: {e}") from None

    @classmethod
    def connect(
        cls, bootstrap: str, config: dict[str, str], timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> WireClient:
        check_reachable(bootstrap, timeout_s)
        host, port = bootstrap_addresses(bootstrap)[0]
        return cls(host, port, timeout_s, config)

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        try:
            return self.connection.call(api_key, version, body)
        except TimeoutError:
            raise click.ClickException(f"timed out waiting for {_broker()}") from None
        except OSError as e:
            raise click.ClickException(f"lost the connection to the broker: {e}") from None

    def close(self) -> None:
        self.connection.close()


_CLIENT_ID = "kafkars-tools"


def client_security(config: dict[str, str]) -> ClientSecurity:
    """A tool's client properties (Java's or librdkafka's names) as the connection
    settings `WireClient` opens with; a wrong setting is the tool's one-line error."""
    try:
        return security_from_properties(config)
    except ConfigException as e:
        raise click.ClickException(str(e)) from None


def sasl_credentials(config: dict[str, Any]) -> tuple[str, str]:
    try:
        return credentials_from_properties(config)
    except ConfigException as e:
        raise click.ClickException(str(e)) from None


def librdkafka_config(config: dict[str, Any]) -> dict[str, Any]:
    """A properties file written for Kafka's Java tools, as librdkafka takes it: the
    JAAS login becomes `sasl.username`/`sasl.password`, a PEM truststore `ssl.ca.location`;
    other Java-only settings are dropped rather than refused."""
    out = dict(config)
    if "sasl.jaas.config" in out:
        if "sasl.username" not in out:
            out["sasl.username"], out["sasl.password"] = sasl_credentials(out)
        del out["sasl.jaas.config"]
    if out.get("ssl.truststore.type", "").upper() == "PEM" and "ssl.truststore.location" in out:
        out.setdefault("ssl.ca.location", out["ssl.truststore.location"])
    for key in ("ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password"):
        out.pop(key, None)
    return out
