//! OffsetCommitValue
//!
//! See the schema for this message [here](https://github.com/apache/kafka/blob/trunk/clients/src/main/resources/common/message/OffsetCommitValue.json).
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

/// Valid versions: 0-4
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub struct OffsetCommitValue {
    ///
    ///
    /// Supported API versions: 0-4
    pub offset: i64,

    ///
    ///
    /// Supported API versions: 3-4
    pub leader_epoch: i32,

    ///
    ///
    /// Supported API versions: 0-4
    pub metadata: StrBytes,

    ///
    ///
    /// Supported API versions: 0-4
    pub commit_timestamp: i64,

    ///
    ///
    /// Supported API versions: 1
    pub expire_timestamp: i64,

    /// Other tagged fields
    pub unknown_tagged_fields: BTreeMap<i32, Bytes>,
}

impl OffsetCommitValue {
    /// Sets `offset` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 0-4
    pub fn with_offset(mut self, value: i64) -> Self {
        self.offset = value;
        self
    }
    /// Sets `leader_epoch` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 3-4
    pub fn with_leader_epoch(mut self, value: i32) -> Self {
        self.leader_epoch = value;
        self
    }
    /// Sets `metadata` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 0-4
    pub fn with_metadata(mut self, value: StrBytes) -> Self {
        self.metadata = value;
        self
    }
    /// Sets `commit_timestamp` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 0-4
    pub fn with_commit_timestamp(mut self, value: i64) -> Self {
        self.commit_timestamp = value;
        self
    }
    /// Sets `expire_timestamp` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 1
    pub fn with_expire_timestamp(mut self, value: i64) -> Self {
        self.expire_timestamp = value;
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

impl Encodable for OffsetCommitValue {
    fn encode<B: ByteBufMut>(&self, buf: &mut B, version: i16) -> Result<()> {
        if version < 0 || version > 4 {
            bail!("specified version not supported by this message type");
        }
        types::Int64.encode(buf, &self.offset)?;
        if version >= 3 {
            types::Int32.encode(buf, &self.leader_epoch)?;
        }
        if version >= 4 {
            types::CompactString.encode(buf, &self.metadata)?;
        } else {
            types::String.encode(buf, &self.metadata)?;
        }
        types::Int64.encode(buf, &self.commit_timestamp)?;
        if version == 1 {
            types::Int64.encode(buf, &self.expire_timestamp)?;
        }
        if version >= 4 {
            let num_tagged_fields = self.unknown_tagged_fields.len();
            if num_tagged_fields > std::u32::MAX as usize {
                bail!(
                    "Too many tagged fields to encode ({} fields)",
                    num_tagged_fields
                );
            }
            types::UnsignedVarInt.encode(buf, num_tagged_fields as u32)?;

            write_unknown_tagged_fields(buf, 0.., &self.unknown_tagged_fields)?;
        }
        Ok(())
    }
    fn compute_size(&self, version: i16) -> Result<usize> {
        let mut total_size = 0;
        total_size += types::Int64.compute_size(&self.offset)?;
        if version >= 3 {
            total_size += types::Int32.compute_size(&self.leader_epoch)?;
        }
        if version >= 4 {
            total_size += types::CompactString.compute_size(&self.metadata)?;
        } else {
            total_size += types::String.compute_size(&self.metadata)?;
        }
        total_size += types::Int64.compute_size(&self.commit_timestamp)?;
        if version == 1 {
            total_size += types::Int64.compute_size(&self.expire_timestamp)?;
        }
        if version >= 4 {
            let num_tagged_fields = self.unknown_tagged_fields.len();
            if num_tagged_fields > std::u32::MAX as usize {
                bail!(
                    "Too many tagged fields to encode ({} fields)",
                    num_tagged_fields
                );
            }
            total_size += types::UnsignedVarInt.compute_size(num_tagged_fields as u32)?;

            total_size += compute_unknown_tagged_fields_size(&self.unknown_tagged_fields)?;
        }
        Ok(total_size)
    }
}

impl Decodable for OffsetCommitValue {
    fn decode<B: ByteBuf>(buf: &mut B, version: i16) -> Result<Self> {
        if version < 0 || version > 4 {
            bail!("specified version not supported by this message type");
        }
        let offset = types::Int64.decode(buf)?;
        let leader_epoch = if version >= 3 {
            types::Int32.decode(buf)?
        } else {
            -1
        };
        let metadata = if version >= 4 {
            types::CompactString.decode(buf)?
        } else {
            types::String.decode(buf)?
        };
        let commit_timestamp = types::Int64.decode(buf)?;
        let expire_timestamp = if version == 1 {
            types::Int64.decode(buf)?
        } else {
            -1
        };
        let mut unknown_tagged_fields = BTreeMap::new();
        if version >= 4 {
            let num_tagged_fields = types::UnsignedVarInt.decode(buf)?;
            for _ in 0..num_tagged_fields {
                let tag: u32 = types::UnsignedVarInt.decode(buf)?;
                let size: u32 = types::UnsignedVarInt.decode(buf)?;
                let unknown_value = buf.try_get_bytes(size as usize)?;
                unknown_tagged_fields.insert(tag as i32, unknown_value);
            }
        }
        Ok(Self {
            offset,
            leader_epoch,
            metadata,
            commit_timestamp,
            expire_timestamp,
            unknown_tagged_fields,
        })
    }
}

impl Default for OffsetCommitValue {
    fn default() -> Self {
        Self {
            offset: 0,
            leader_epoch: -1,
            metadata: Default::default(),
            commit_timestamp: 0,
            expire_timestamp: -1,
            unknown_tagged_fields: BTreeMap::new(),
        }
    }
}

impl Message for OffsetCommitValue {
    const VERSIONS: VersionRange = VersionRange { min: 0, max: 4 };
    const DEPRECATED_VERSIONS: Option<VersionRange> = None;
}
