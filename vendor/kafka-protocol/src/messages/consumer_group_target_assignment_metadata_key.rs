//! ConsumerGroupTargetAssignmentMetadataKey
//!
//! See the schema for this message [here](https://github.com/apache/kafka/blob/trunk/clients/src/main/resources/common/message/ConsumerGroupTargetAssignmentMetadataKey.json).
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

/// Valid versions: 6
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub struct ConsumerGroupTargetAssignmentMetadataKey {
    /// The group id.
    ///
    /// Supported API versions: 6
    pub group_id: StrBytes,
}

impl ConsumerGroupTargetAssignmentMetadataKey {
    /// Sets `group_id` to the passed value.
    ///
    /// The group id.
    ///
    /// Supported API versions: 6
    pub fn with_group_id(mut self, value: StrBytes) -> Self {
        self.group_id = value;
        self
    }
}

impl Encodable for ConsumerGroupTargetAssignmentMetadataKey {
    fn encode<B: ByteBufMut>(&self, buf: &mut B, version: i16) -> Result<()> {
        if version != 6 {
            bail!("specified version not supported by this message type");
        }
        types::String.encode(buf, &self.group_id)?;

        Ok(())
    }
    fn compute_size(&self, version: i16) -> Result<usize> {
        let mut total_size = 0;
        total_size += types::String.compute_size(&self.group_id)?;

        Ok(total_size)
    }
}

impl Decodable for ConsumerGroupTargetAssignmentMetadataKey {
    fn decode<B: ByteBuf>(buf: &mut B, version: i16) -> Result<Self> {
        if version != 6 {
            bail!("specified version not supported by this message type");
        }
        let group_id = types::String.decode(buf)?;
        Ok(Self { group_id })
    }
}

impl Default for ConsumerGroupTargetAssignmentMetadataKey {
    fn default() -> Self {
        Self {
            group_id: Default::default(),
        }
    }
}

impl Message for ConsumerGroupTargetAssignmentMetadataKey {
    const VERSIONS: VersionRange = VersionRange { min: 6, max: 6 };
    const DEPRECATED_VERSIONS: Option<VersionRange> = None;
}
