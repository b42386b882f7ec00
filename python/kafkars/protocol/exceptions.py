"""The exception every layer raises to answer with a Kafka error code: handlers in
Python and the Rust core alike (`kafkars._core` raises this class, imported by name, as
cryptography's Rust raises `cryptography.exceptions`), so an error is mapped once."""

from __future__ import annotations

from kafkars.protocol.vocabulary import Errors


class KafkaError(Exception):
    """Answer with `code` and an optional message. `args` is `(code, message)`."""

    def __init__(self, code: int, message: str | None = None) -> None:
        code = Errors(code)
        super().__init__(code, message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return self.message or self.code.name

    @property
    def error_message(self) -> str:
        """What an admin API's `error_message` carries: Kafka sends the exception's
        message, which for an error raised without one is the error's own description."""
        return self.message or code_description(self.code)


def code_description(code: Errors) -> str:
    """`UNKNOWN_TOPIC_OR_PARTITION` → `Unknown topic or partition.`"""
    return code.name.replace("_", " ").capitalize() + "."


class RecordValidationError(KafkaError):
    """A batch refused because of some of its records (Kafka's RecordValidationException):
    `record_errors` holds (index of the record in its batch, message) pairs, answered in
    the Produce response's `record_errors`."""

    def __init__(self, code: int, message: str, record_errors: list[tuple[int, str]]) -> None:
        super().__init__(code, message)
        self.record_errors = record_errors
