//! OffsetCommitKey
//!
//! See the schema for this message [here](https://github.com/apache/kafka/blob/trunk/clients/src/main/resources/common/message/OffsetCommitKey.json).
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

/// Valid versions: 0-1
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub struct OffsetCommitKey {
    ///
    ///
    /// Supported API versions: 0-1
    pub group: StrBytes,

    ///
    ///
    /// Supported API versions: 0-1
    pub topic: StrBytes,

    ///
    ///
    /// Supported API versions: 0-1
    pub partition: i32,
}

impl OffsetCommitKey {
    /// Sets `group` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 0-1
    pub fn with_group(mut self, value: StrBytes) -> Self {
        self.group = value;
        self
    }
    /// Sets `topic` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 0-1
    pub fn with_topic(mut self, value: StrBytes) -> Self {
        self.topic = value;
        self
    }
    /// Sets `partition` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 0-1
    pub fn with_partition(mut self, value: i32) -> Self {
        self.partition = value;
        self
    }
}

impl Encodable for OffsetCommitKey {
    fn encode<B: ByteBufMut>(&self, buf: &mut B, version: i16) -> Result<()> {
        if version < 0 || version > 1 {
            bail!("specified version not supported by this message type");
        }
        types::String.encode(buf, &self.group)?;
        types::String.encode(buf, &self.topic)?;
        types::Int32.encode(buf, &self.partition)?;

        Ok(())
    }
    fn compute_size(&self, version: i16) -> Result<usize> {
        let mut total_size = 0;
        total_size += types::String.compute_size(&self.group)?;
        total_size += types::String.compute_size(&self.topic)?;
        total_size += types::Int32.compute_size(&self.partition)?;

        Ok(total_size)
    }
}

impl Decodable for OffsetCommitKey {
    fn decode<B: ByteBuf>(buf: &mut B, version: i16) -> Result<Self> {
        if version < 0 || version > 1 {
            bail!("specified version not supported by this message type");
        }
        let group = types::String.decode(buf)?;
        let topic = types::String.decode(buf)?;
        let partition = types::Int32.decode(buf)?;
        Ok(Self {
            group,
            topic,
            partition,
        })
    }
}

impl Default for OffsetCommitKey {
    fn default() -> Self {
        Self {
            group: Default::default(),
            topic: Default::default(),
            partition: 0,
        }
    }
}

impl Message for OffsetCommitKey {
    const VERSIONS: VersionRange = VersionRange { min: 0, max: 1 };
    const DEPRECATED_VERSIONS: Option<VersionRange> = None;
}
