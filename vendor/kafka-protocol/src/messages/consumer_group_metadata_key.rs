//! ConsumerGroupMetadataKey
//!
//! See the schema for this message [here](https://github.com/apache/kafka/blob/trunk/clients/src/main/resources/common/message/ConsumerGroupMetadataKey.json).
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

/// Valid versions: 3
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub struct ConsumerGroupMetadataKey {
    /// The group id.
    ///
    /// Supported API versions: 3
    pub group_id: StrBytes,
}

impl ConsumerGroupMetadataKey {
    /// Sets `group_id` to the passed value.
    ///
    /// The group id.
    ///
    /// Supported API versions: 3
    pub fn with_group_id(mut self, value: StrBytes) -> Self {
        self.group_id = value;
        self
    }
}

impl Encodable for ConsumerGroupMetadataKey {
    fn encode<B: ByteBufMut>(&self, buf: &mut B, version: i16) -> Result<()> {
        if version != 3 {
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

impl Decodable for ConsumerGroupMetadataKey {
    fn decode<B: ByteBuf>(buf: &mut B, version: i16) -> Result<Self> {
        if version != 3 {
            bail!("specified version not supported by this message type");
        }
        let group_id = types::String.decode(buf)?;
        Ok(Self { group_id })
    }
}

impl Default for ConsumerGroupMetadataKey {
    fn default() -> Self {
        Self {
            group_id: Default::default(),
        }
    }
}

impl Message for ConsumerGroupMetadataKey {
    const VERSIONS: VersionRange = VersionRange { min: 3, max: 3 };
    const DEPRECATED_VERSIONS: Option<VersionRange> = None;
}
