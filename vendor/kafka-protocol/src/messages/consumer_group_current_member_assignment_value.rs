//! ConsumerGroupCurrentMemberAssignmentValue
//!
//! See the schema for this message [here](https://github.com/apache/kafka/blob/trunk/clients/src/main/resources/common/message/ConsumerGroupCurrentMemberAssignmentValue.json).
// WARNING: the items of this module are generated and should not be edited directly
#![allow(unused)]

use std::borrow::Borrow;
use std::collections::BTreeMap;

use anyhow::{bail, Result};
use bytes::Bytes;
use uuid::Uuid;

use crate::protocol::{
    buf::{ByteBuf, ByteBufMut},
    compute_unknown_tagged_fields_size, types, write_unknown_tagged_fields, Decodable, Decoder,
    Encodable, Encoder, HeaderVersion, Message, StrBytes, VersionRange,
};

/// Valid versions: 0
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub struct ConsumerGroupCurrentMemberAssignmentValue {
    /// The current member epoch that is expected from the member in the heartbeat request.
    ///
    /// Supported API versions: 0
    pub member_epoch: i32,

    /// If the last epoch bump is lost before reaching the member, the member will retry with the previous epoch.
    ///
    /// Supported API versions: 0
    pub previous_member_epoch: i32,

    /// The member state. See MemberState for the possible values.
    ///
    /// Supported API versions: 0
    pub state: i8,

    /// The partitions assigned to (or owned by) this member.
    ///
    /// Supported API versions: 0
    pub assigned_partitions: Vec<TopicPartitions>,

    /// The partitions that must be revoked by this member.
    ///
    /// Supported API versions: 0
    pub partitions_pending_revocation: Vec<TopicPartitions>,

    /// Other tagged fields
    pub unknown_tagged_fields: BTreeMap<i32, Bytes>,
}

impl ConsumerGroupCurrentMemberAssignmentValue {
    /// Sets `member_epoch` to the passed value.
    ///
    /// The current member epoch that is expected from the member in the heartbeat request.
    ///
    /// Supported API versions: 0
    pub fn with_member_epoch(mut self, value: i32) -> Self {
        self.member_epoch = value;
        self
    }
    /// Sets `previous_member_epoch` to the passed value.
    ///
    /// If the last epoch bump is lost before reaching the member, the member will retry with the previous epoch.
    ///
    /// Supported API versions: 0
    pub fn with_previous_member_epoch(mut self, value: i32) -> Self {
        self.previous_member_epoch = value;
        self
    }
    /// Sets `state` to the passed value.
    ///
    /// The member state. See MemberState for the possible values.
    ///
    /// Supported API versions: 0
    pub fn with_state(mut self, value: i8) -> Self {
        self.state = value;
        self
    }
    /// Sets `assigned_partitions` to the passed value.
    ///
    /// The partitions assigned to (or owned by) this member.
    ///
    /// Supported API versions: 0
    pub fn with_assigned_partitions(mut self, value: Vec<TopicPartitions>) -> Self {
        self.assigned_partitions = value;
        self
    }
    /// Sets `partitions_pending_revocation` to the passed value.
    ///
    /// The partitions that must be revoked by this member.
    ///
    /// Supported API versions: 0
    pub fn with_partitions_pending_revocation(mut self, value: Vec<TopicPartitions>) -> Self {
        self.partitions_pending_revocation = value;
        self
    }
    /// Sets unknown_tagged_fields to the passed value.
    pub fn with_unknown_tagged_fields(mut self, value: BTreeMap<i32, Bytes>) -> Self {
        self.unknown_tagged_fields = value;
        self
    }
    /// Inserts an entry into unknown_tagged_fields.
    pub fn with_unknown_tagged_field(mut self, key: i32, value: Bytes) -> Self {
        self.unknown_tagged_fields.insert(key, value);
        self
    }
}

impl Encodable for ConsumerGroupCurrentMemberAssignmentValue {
    fn encode<B: ByteBufMut>(&self, buf: &mut B, version: i16) -> Result<()> {
        if version != 0 {
            bail!("specified version not supported by this message type");
        }
        types::Int32.encode(buf, &self.member_epoch)?;
        types::Int32.encode(buf, &self.previous_member_epoch)?;
        types::Int8.encode(buf, &self.state)?;
        types::CompactArray(types::Struct { version }).encode(buf, &self.assigned_partitions)?;
        types::CompactArray(types::Struct { version })
            .encode(buf, &self.partitions_pending_revocation)?;
        let num_tagged_fields = self.unknown_tagged_fields.len();
        if num_tagged_fields > std::u32::MAX as usize {
            bail!(
                "Too many tagged fields to encode ({} fields)",
                num_tagged_fields
            );
        }
        types::UnsignedVarInt.encode(buf, num_tagged_fields as u32)?;

        write_unknown_tagged_fields(buf, 0.., &self.unknown_tagged_fields)?;
        Ok(())
    }
    fn compute_size(&self, version: i16) -> Result<usize> {
        let mut total_size = 0;
        total_size += types::Int32.compute_size(&self.member_epoch)?;
        total_size += types::Int32.compute_size(&self.previous_member_epoch)?;
        total_size += types::Int8.compute_size(&self.state)?;
        total_size += types::CompactArray(types::Struct { version })
            .compute_size(&self.assigned_partitions)?;
        total_size += types::CompactArray(types::Struct { version })
            .compute_size(&self.partitions_pending_revocation)?;
        let num_tagged_fields = self.unknown_tagged_fields.len();
        if num_tagged_fields > std::u32::MAX as usize {
            bail!(
                "Too many tagged fields to encode ({} fields)",
                num_tagged_fields
            );
        }
        total_size += types::UnsignedVarInt.compute_size(num_tagged_fields as u32)?;

        total_size += compute_unknown_tagged_fields_size(&self.unknown_tagged_fields)?;
        Ok(total_size)
    }
}

impl Decodable for ConsumerGroupCurrentMemberAssignmentValue {
    fn decode<B: ByteBuf>(buf: &mut B, version: i16) -> Result<Self> {
        if version != 0 {
            bail!("specified version not supported by this message type");
        }
        let member_epoch = types::Int32.decode(buf)?;
        let previous_member_epoch = types::Int32.decode(buf)?;
        let state = types::Int8.decode(buf)?;
        let assigned_partitions = types::CompactArray(types::Struct { version }).decode(buf)?;
        let partitions_pending_revocation =
            types::CompactArray(types::Struct { version }).decode(buf)?;
        let mut unknown_tagged_fields = BTreeMap::new();
        let num_tagged_fields = types::UnsignedVarInt.decode(buf)?;
        for _ in 0..num_tagged_fields {
            let tag: u32 = types::UnsignedVarInt.decode(buf)?;
            let size: u32 = types::UnsignedVarInt.decode(buf)?;
            let unknown_value = buf.try_get_bytes(size as usize)?;
            unknown_tagged_fields.insert(tag as i32, unknown_value);
        }
        Ok(Self {
            member_epoch,
            previous_member_epoch,
            state,
            assigned_partitions,
            partitions_pending_revocation,
            unknown_tagged_fields,
        })
    }
}

impl Default for ConsumerGroupCurrentMemberAssignmentValue {
    fn default() -> Self {
        Self {
            member_epoch: 0,
            previous_member_epoch: 0,
            state: 0,
            assigned_partitions: Default::default(),
            partitions_pending_revocation: Default::default(),
            unknown_tagged_fields: BTreeMap::new(),
        }
    }
}

impl Message for ConsumerGroupCurrentMemberAssignmentValue {
    const VERSIONS: VersionRange = VersionRange { min: 0, max: 0 };
    const DEPRECATED_VERSIONS: Option<VersionRange> = None;
}

/// Valid versions: 0
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub struct TopicPartitions {
    /// The topic Id.
    ///
    /// Supported API versions: 0
    pub topic_id: Uuid,

    /// The partition Ids.
    ///
    /// Supported API versions: 0
    pub partitions: Vec<i32>,

    /// Other tagged fields
    pub unknown_tagged_fields: BTreeMap<i32, Bytes>,
}

impl TopicPartitions {
    /// Sets `topic_id` to the passed value.
    ///
    /// The topic Id.
    ///
    /// Supported API versions: 0
    pub fn with_topic_id(mut self, value: Uuid) -> Self {
        self.topic_id = value;
        self
    }
    /// Sets `partitions` to the passed value.
    ///
    /// The partition Ids.
    ///
    /// Supported API versions: 0
    pub fn with_partitions(mut self, value: Vec<i32>) -> Self {
        self.partitions = value;
        self
    }
    /// Sets unknown_tagged_fields to the passed value.
    pub fn with_unknown_tagged_fields(mut self, value: BTreeMap<i32, Bytes>) -> Self {
        self.unknown_tagged_fields = value;
        self
    }
    /// Inserts an entry into unknown_tagged_fields.
    pub fn with_unknown_tagged_field(mut self, key: i32, value: Bytes) -> Self {
        self.unknown_tagged_fields.insert(key, value);
        self
    }
}

impl Encodable for TopicPartitions {
    fn encode<B: ByteBufMut>(&self, buf: &mut B, version: i16) -> Result<()> {
        if version != 0 {
            bail!("specified version not supported by this message type");
        }
        types::Uuid.encode(buf, &self.topic_id)?;
        types::CompactArray(types::Int32).encode(buf, &self.partitions)?;
        let num_tagged_fields = self.unknown_tagged_fields.len();
        if num_tagged_fields > std::u32::MAX as usize {
            bail!(
                "Too many tagged fields to encode ({} fields)",
                num_tagged_fields
            );
        }
        types::UnsignedVarInt.encode(buf, num_tagged_fields as u32)?;

        write_unknown_tagged_fields(buf, 0.., &self.unknown_tagged_fields)?;
        Ok(())
    }
    fn compute_size(&self, version: i16) -> Result<usize> {
        let mut total_size = 0;
        total_size += types::Uuid.compute_size(&self.topic_id)?;
        total_size += types::CompactArray(types::Int32).compute_size(&self.partitions)?;
        let num_tagged_fields = self.unknown_tagged_fields.len();
        if num_tagged_fields > std::u32::MAX as usize {
            bail!(
                "Too many tagged fields to encode ({} fields)",
                num_tagged_fields
            );
        }
        total_size += types::UnsignedVarInt.compute_size(num_tagged_fields as u32)?;

        total_size += compute_unknown_tagged_fields_size(&self.unknown_tagged_fields)?;
        Ok(total_size)
    }
}

impl Decodable for TopicPartitions {
    fn decode<B: ByteBuf>(buf: &mut B, version: i16) -> Result<Self> {
        if version != 0 {
            bail!("specified version not supported by this message type");
        }
        let topic_id = types::Uuid.decode(buf)?;
        let partitions = types::CompactArray(types::Int32).decode(buf)?;
        let mut unknown_tagged_fields = BTreeMap::new();
        let num_tagged_fields = types::UnsignedVarInt.decode(buf)?;
        for _ in 0..num_tagged_fields {
            let tag: u32 = types::UnsignedVarInt.decode(buf)?;
            let size: u32 = types::UnsignedVarInt.decode(buf)?;
            let unknown_value = buf.try_get_bytes(size as usize)?;
            unknown_tagged_fields.insert(tag as i32, unknown_value);
        }
        Ok(Self {
            topic_id,
            partitions,
            unknown_tagged_fields,
        })
    }
}

impl Default for TopicPartitions {
    fn default() -> Self {
        Self {
            topic_id: Uuid::nil(),
            partitions: Default::default(),
            unknown_tagged_fields: BTreeMap::new(),
        }
    }
}

impl Message for TopicPartitions {
    const VERSIONS: VersionRange = VersionRange { min: 0, max: 0 };
    const DEPRECATED_VERSIONS: Option<VersionRange> = None;
}
