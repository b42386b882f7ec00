"""Cluster metadata in ZooKeeper, laid out as Kafka 2.x lays it out (`KafkaZkClient`)."""

from kafkars.zk.kafka_zk_client import KafkaZkClient, LeaderIsrAndControllerEpoch

__all__ = ["KafkaZkClient", "LeaderIsrAndControllerEpoch"]
