"""Kafka's classic group coordinator: the group state machine, its delayed operations,
and the `__consumer_offsets` topic that makes groups and offsets durable."""

from kafkars.coordinator.group.group_coordinator import GroupCoordinator
from kafkars.coordinator.group.group_metadata import GroupMetadata, GroupState, MemberMetadata

__all__ = ["GroupCoordinator", "GroupMetadata", "GroupState", "MemberMetadata"]
