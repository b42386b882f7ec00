//! GroupMetadataKey
//!
//! See the schema for this message [here](https://github.com/apache/kafka/blob/trunk/clients/src/main/resources/common/message/GroupMetadataKey.json).
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

/// Valid versions: 2
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub struct GroupMetadataKey {
    ///
    ///
    /// Supported API versions: 2
    pub group: StrBytes,
}

impl GroupMetadataKey {
    /// Sets `group` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 2
    pub fn with_group(mut self, value: StrBytes) -> Self {
        self.group = value;
        self
    }
}

impl Encodable for GroupMetadataKey {
    fn encode<B: ByteBufMut>(&self, buf: &mut B, version: i16) -> Result<()> {
        if version != 2 {
            bail!("specified version not supported by this message type");
        }
        types::String.encode(buf, &self.group)?;

        Ok(())
    }
    fn compute_size(&self, version: i16) -> Result<usize> {
        let mut total_size = 0;
        total_size += types::String.compute_size(&self.group)?;

        Ok(total_size)
    }
}

impl Decodable for GroupMetadataKey {
    fn decode<B: ByteBuf>(buf: &mut B, version: i16) -> Result<Self> {
        if version != 2 {
            bail!("specified version not supported by this message type");
        }
        let group = types::String.decode(buf)?;
        Ok(Self { group })
    }
}

impl Default for GroupMetadataKey {
    fn default() -> Self {
        Self {
            group: Default::default(),
        }
    }
}

impl Message for GroupMetadataKey {
    const VERSIONS: VersionRange = VersionRange { min: 2, max: 2 };
    const DEPRECATED_VERSIONS: Option<VersionRange> = None;
}
