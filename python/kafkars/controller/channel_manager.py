"""Kafka's `ControllerChannelManager`: one connection and send thread per live broker;
requests to a broker go out in order and are retried until it answers or leaves. Every
connection is the Rust client's (`_core.BrokerConnection`), speaking the inter-broker
listener's security protocol (`ClientSecurity`)."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from kafkars import _core
from kafkars.security.client_auth import PLAINTEXT, AuthenticationError, ClientSecurity

log = logging.getLogger("kafkars.controller.ControllerChannelManager")

Callback = Callable[[dict[str, Any]], None]
_RETRY_BACKOFF_S = 0.1


class _RequestSendThread:
    def __init__(
        self,
        controller_id: int,
        broker_id: int,
        endpoint: tuple[str, int],
        security: ClientSecurity,
    ) -> None:
        self.controller_id = controller_id
        self.broker_id = broker_id
        self.endpoint = endpoint
        self.security = security
        # A refused login is logged once, not on every retry.
        self._refused = False
        self.queue: queue.Queue[tuple[int, int, dict[str, Any], Callback | None] | None] = (
            queue.Queue()
        )
        self._connection: _core.BrokerConnection | None = None
        self._running = True
        self._thread = threading.Thread(
            target=self._run, name=f"Controller-{controller_id}-to-broker-{broker_id}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._running = False
        self.queue.put(None)
        self._close()

    def _close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def _run(self) -> None:
        while self._running:
            item = self.queue.get()
            if item is None:
                return
            api_key, version, body, callback = item
            while self._running:
                try:
                    response = self._call(api_key, version, body)
                except AuthenticationError as e:
                    # A refused login or certificate: the message says which.
                    if not self._refused:
                        log.error(
                            "Cannot authenticate to broker %s (check the inter-broker "
                            "listener's TLS and SASL settings); retrying: %s",
                            self.broker_id,
                            e,
                        )
                        self._refused = True
                    self._close()
                    time.sleep(_RETRY_BACKOFF_S * 10)
                    continue
                except OSError as e:
                    # The broker is restarting or unreachable: retry until it is removed.
                    log.debug("Request %s to broker %s failed: %s", api_key, self.broker_id, e)
                    self._close()
                    time.sleep(_RETRY_BACKOFF_S)
                    continue
                except ValueError as e:
                    # Cannot be encoded or answered sensibly: retrying would not help.
                    log.error("Request %s to broker %s failed: %s", api_key, self.broker_id, e)
                    self._close()
                    break
                if callback is not None:
                    try:
                        callback(response)
                    except Exception:
                        log.exception("Controller callback failed")
                break

    def _call(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        if self._connection is None:
            self._connection = self.security.connect(
                self.endpoint, timeout_s=30, client_id=f"controller-{self.controller_id}"
            )
            if self._refused:
                log.info("Authenticated to broker %s", self.broker_id)
                self._refused = False
        return self._connection.call(api_key, version, body)


class ControllerChannelManager:
    def __init__(self, controller_id: int, security: ClientSecurity = PLAINTEXT) -> None:
        self.controller_id = controller_id
        self.security = security
        self._brokers: dict[int, _RequestSendThread] = {}
        self._lock = threading.Lock()

    def add_broker(self, broker_id: int, endpoint: tuple[str, int]) -> None:
        with self._lock:
            existing = self._brokers.get(broker_id)
            if existing is not None and existing.endpoint == endpoint:
                return
            if existing is not None:
                existing.stop()
            self._brokers[broker_id] = _RequestSendThread(
                self.controller_id, broker_id, endpoint, self.security
            )

    def remove_broker(self, broker_id: int) -> None:
        with self._lock:
            thread = self._brokers.pop(broker_id, None)
        if thread is not None:
            thread.stop()

    def send(
        self,
        broker_id: int,
        api_key: int,
        version: int,
        body: dict[str, Any],
        callback: Callback | None = None,
    ) -> None:
        with self._lock:
            thread = self._brokers.get(broker_id)
        if thread is not None:
            thread.queue.put((api_key, version, body, callback))

    def shutdown(self) -> None:
        with self._lock:
            threads, self._brokers = list(self._brokers.values()), {}
        for t in threads:
            t.stop()


def call_broker(
    endpoint: tuple[str, int],
    api_key: int,
    version: int,
    body: dict[str, Any],
    *,
    client_id: str,
    timeout_s: float = 30.0,
    security: ClientSecurity = PLAINTEXT,
) -> dict[str, Any]:
    """One request on a fresh connection (a broker asking the controller or another
    broker). A refused login or certificate raises AuthenticationError (a ConnectionError),
    an unreachable broker another OSError."""
    with security.connect(endpoint, timeout_s=timeout_s, client_id=client_id) as connection:
        return connection.call(api_key, version, body)
