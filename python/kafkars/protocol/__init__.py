"""Kafka's vocabulary, on the ground floor: error codes and API keys (generated from
kafka-protocol, `vocabulary.py`) and the `KafkaError` raised with them. Everything above
(config, storage bindings, coordinators, controller, tools, Spark) imports it from here."""

from kafkars.protocol.exceptions import KafkaError, RecordValidationError, code_description
from kafkars.protocol.vocabulary import DESCRIPTIONS, RETRIABLE, ApiKey, Errors

__all__ = [
    "DESCRIPTIONS",
    "RETRIABLE",
    "ApiKey",
    "Errors",
    "KafkaError",
    "RecordValidationError",
    "code_description",
]
