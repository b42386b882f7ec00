"""Persistence of dynamic configs (broker layers and topic overrides) as JSON files.

One file per entity, so an update rewrites only what changed:
``brokers/<id>.json``, ``brokers/default.json`` (cluster-wide), ``topics/<name>.json``.
Writes are atomic (temp file, fsync, rename, fsync of the directory), so a crash leaves
either the old or the new file, never a torn one.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path

from kafkars.config.definition import ConfigException

_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def atomic_write_json(path: Path, data: object) -> None:
    """Write ``data`` as JSON to ``path`` atomically and durably."""
    import tempfile  # here: its imports are 6 ms of a start-up that writes nothing

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable; not every platform lets a directory be opened.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _read(path: Path) -> dict[str, str]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise ConfigException(f"Cannot read dynamic config file {path}: {e}") from e
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise ConfigException(f"Dynamic config file {path} is not a JSON object of strings")
    return data


class ConfigStore:
    """Dynamic broker configs and topic overrides kept in ``directory``, loaded at start-up.

    Reads return copies; every ``set_*`` replaces the entity's whole mapping and persists
    it before returning (an empty mapping deletes the file). Thread-safe.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self._lock = threading.Lock()
        self._brokers: dict[str, dict[str, str]] = {}
        self._topics: dict[str, dict[str, str]] = {}
        self.reload()

    def reload(self) -> None:
        """Read every file again (the constructor does this)."""
        brokers: dict[str, dict[str, str]] = {}
        topics: dict[str, dict[str, str]] = {}
        for sub, target in (("brokers", brokers), ("topics", topics)):
            d = self.directory / sub
            if not d.is_dir():
                continue
            for path in sorted(d.glob("*.json")):
                target[path.stem] = _read(path)
        with self._lock:
            self._brokers, self._topics = brokers, topics

    # -- brokers ------------------------------------------------------------------------
    @staticmethod
    def _broker_key(broker_id: int | None) -> str:
        return "default" if broker_id is None else str(int(broker_id))

    def broker_configs(self, broker_id: int) -> dict[str, str]:
        """Per-broker dynamic configs of ``broker_id``."""
        with self._lock:
            return dict(self._brokers.get(self._broker_key(broker_id), {}))

    def default_broker_configs(self) -> dict[str, str]:
        """Cluster-wide dynamic broker defaults."""
        with self._lock:
            return dict(self._brokers.get("default", {}))

    def set_broker_configs(self, broker_id: int | None, configs: dict[str, str]) -> None:
        """Replace the dynamic configs of one broker (``None``: the cluster default)."""
        self._set(self._brokers, "brokers", self._broker_key(broker_id), configs)

    # -- topics ---------------------------------------------------------------------------
    def topic_configs(self, topic: str) -> dict[str, str]:
        with self._lock:
            return dict(self._topics.get(topic, {}))

    def topics(self) -> list[str]:
        """Topics that have overrides."""
        with self._lock:
            return sorted(self._topics)

    def set_topic_configs(self, topic: str, configs: dict[str, str]) -> None:
        """Replace a topic's overrides."""
        if not _TOPIC_NAME.fullmatch(topic) or topic in (".", ".."):
            raise ConfigException(f"Invalid topic name for a config file: {topic!r}")
        self._set(self._topics, "topics", topic, configs)

    def delete_topic(self, topic: str) -> None:
        """Forget a deleted topic's overrides."""
        if _TOPIC_NAME.fullmatch(topic):
            self._set(self._topics, "topics", topic, {})

    def _set(
        self, table: dict[str, dict[str, str]], sub: str, key: str, configs: dict[str, str]
    ) -> None:
        data = {str(k): str(v) for k, v in configs.items()}
        path = self.directory / sub / f"{key}.json"
        with self._lock:
            if data:
                atomic_write_json(path, data)
                table[key] = data
            else:
                if path.exists():
                    path.unlink()
                    _fsync_dir(path.parent)
                table.pop(key, None)
