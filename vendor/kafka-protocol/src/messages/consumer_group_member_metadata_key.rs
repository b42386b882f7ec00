//! ConsumerGroupMemberMetadataKey
//!
//! See the schema for this message [here](https://github.com/apache/kafka/blob/trunk/clients/src/main/resources/common/message/ConsumerGroupMemberMetadataKey.json).
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

/// Valid versions: 5
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub struct ConsumerGroupMemberMetadataKey {
    /// The group id.
    ///
    /// Supported API versions: 5
    pub group_id: StrBytes,

    /// The member id.
    ///
    /// Supported API versions: 5
    pub member_id: StrBytes,
}

impl ConsumerGroupMemberMetadataKey {
    /// Sets `group_id` to the passed value.
    ///
    /// The group id.
    ///
    /// Supported API versions: 5
    pub fn with_group_id(mut self, value: StrBytes) -> Self {
        self.group_id = value;
        self
    }
    /// Sets `member_id` to the passed value.
    ///
    /// The member id.
    ///
    /// Supported API versions: 5
    pub fn with_member_id(mut self, value: StrBytes) -> Self {
        self.member_id = value;
        self
    }
}

impl Encodable for ConsumerGroupMemberMetadataKey {
    fn encode<B: ByteBufMut>(&self, buf: &mut B, version: i16) -> Result<()> {
        if version != 5 {
            bail!("specified version not supported by this message type");
        }
        types::String.encode(buf, &self.group_id)?;
        types::String.encode(buf, &self.member_id)?;

        Ok(())
    }
    fn compute_size(&self, version: i16) -> Result<usize> {
        let mut total_size = 0;
        total_size += types::String.compute_size(&self.group_id)?;
        total_size += types::String.compute_size(&self.member_id)?;

        Ok(total_size)
    }
}

impl Decodable for ConsumerGroupMemberMetadataKey {
    fn decode<B: ByteBuf>(buf: &mut B, version: i16) -> Result<Self> {
        if version != 5 {
            bail!("specified version not supported by this message type");
        }
        let group_id = types::String.decode(buf)?;
        let member_id = types::String.decode(buf)?;
        Ok(Self {
            group_id,
            member_id,
        })
    }
}

impl Default for ConsumerGroupMemberMetadataKey {
    fn default() -> Self {
        Self {
            group_id: Default::default(),
            member_id: Default::default(),
        }
    }
}

impl Message for ConsumerGroupMemberMetadataKey {
    const VERSIONS: VersionRange = VersionRange { min: 5, max: 5 };
    const DEPRECATED_VERSIONS: Option<VersionRange> = None;
}
