"""Kafka's ZooKeeper-era controller: one broker, elected through ZooKeeper, decides
partition leaders and ISRs and tells every broker (LeaderAndIsr, UpdateMetadata,
StopReplica) over the Kafka wire."""

from kafkars.controller.kafka_controller import KafkaController

__all__ = ["KafkaController"]
