#!/bin/sh
# librdkafka's tests call Kafka's CLI under $KAFKA_PATH/bin; ours takes the same flags.
exec "$(dirname "$0")/../../../.venv/bin/kafkars-consumer-groups" "$@"
