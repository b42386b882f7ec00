"""SCRAM credentials (RFC 5802/7677) stored as Kafka stores them: per user and
mechanism a salt, a stored key, a server key and the iteration count, never the
password. Kept in one JSON file per user under the broker's config store."""

from __future__ import annotations

import base64
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from kafkars.config.store import atomic_write_json

# hashlib and hmac are imported where they hash: loading OpenSSL's libcrypto is 6 to 13 ms
# of a start-up that has no SASL listener.

# Kafka's mechanism ids in (Describe|Alter)UserScramCredentials, and hash functions.
MECHANISMS = {"SCRAM-SHA-256": (1, "sha256"), "SCRAM-SHA-512": (2, "sha512")}
MECHANISM_BY_ID = {mid: name for name, (mid, _) in MECHANISMS.items()}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
_USER_FILE = re.compile(r"[A-Za-z0-9._-]{1,249}")


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_salted_password(
        cls, mechanism: str, salt: bytes, salted_password: bytes, iterations: int
    ) -> ScramCredential:
        import hashlib
        import hmac

        algo = MECHANISMS[mechanism][1]
        client_key = hmac.new(salted_password, b"Client Key", algo).digest()
        return cls(
            salt=salt,
            stored_key=hashlib.new(algo, client_key).digest(),
            server_key=hmac.new(salted_password, b"Server Key", algo).digest(),
            iterations=iterations,
        )

    @classmethod
    def from_password(
        cls, mechanism: str, password: str, iterations: int = MIN_ITERATIONS
    ) -> ScramCredential:
        import hashlib

        salt = os.urandom(32)
        algo = MECHANISMS[mechanism][1]
        salted = hashlib.pbkdf2_hmac(algo, password.encode(), salt, iterations)
        return cls.from_salted_password(mechanism, salt, salted, iterations)

    def to_json(self) -> dict[str, object]:
        b64 = base64.b64encode
        return {
            "salt": b64(self.salt).decode(),
            "stored_key": b64(self.stored_key).decode(),
            "server_key": b64(self.server_key).decode(),
            "iterations": self.iterations,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> ScramCredential:
        d64 = base64.b64decode
        return cls(
            d64(str(data["salt"])),
            d64(str(data["stored_key"])),
            d64(str(data["server_key"])),
            int(str(data["iterations"])),
        )


def _file_name(user: str) -> str:
    # User names may hold any character: the file name is their URL-safe base64.
    return base64.urlsafe_b64encode(user.encode()).decode().rstrip("=") + ".json"


class ScramCredentialStore:
    """Credentials by user and mechanism, persisted under ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._lock = threading.Lock()
        self._users: dict[str, dict[str, ScramCredential]] = {}
        if directory.is_dir():
            import json

            for path in directory.glob("*.json"):
                data = json.loads(path.read_text())
                self._users[data["user"]] = {
                    mech: ScramCredential.from_json(c) for mech, c in data["credentials"].items()
                }

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        with self._lock:
            return self._users.get(user, {}).get(mechanism)

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        with self._lock:
            return {u: dict(c) for u, c in self._users.items()}

    def _save(self, user: str) -> None:
        path = self.directory / _file_name(user)
        creds = self._users.get(user)
        if not creds:
            path.unlink(missing_ok=True)
            return
        atomic_write_json(
            path,
            {"user": user, "credentials": {m: c.to_json() for m, c in creds.items()}},
        )

    def upsert(self, user: str, mechanism: str, credential: ScramCredential) -> None:
        with self._lock:
            self._users.setdefault(user, {})[mechanism] = credential
            self._save(user)

    def delete(self, user: str, mechanism: str) -> bool:
        with self._lock:
            creds = self._users.get(user, {})
            if mechanism not in creds:
                return False
            del creds[mechanism]
            if not creds:
                self._users.pop(user, None)
            self._save(user)
            return True
