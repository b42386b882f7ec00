"""Kafka's ZooKeeper-era controller: one broker, elected through ZooKeeper, decides
partition leaders and ISRs and tells every broker (LeaderAndIsr, UpdateMetadata,
StopReplica) over the Kafka wire.

The controller is `kafkars.controller.kafka_controller.KafkaController`. This package
imports nothing itself, so what a single broker needs from it (`reassignment`) comes
without ZooKeeper's client."""
