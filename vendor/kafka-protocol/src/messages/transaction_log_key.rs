//! TransactionLogKey
//!
//! See the schema for this message [here](https://github.com/apache/kafka/blob/trunk/clients/src/main/resources/common/message/TransactionLogKey.json).
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
pub struct TransactionLogKey {
    ///
    ///
    /// Supported API versions: 0
    pub transactional_id: StrBytes,
}

impl TransactionLogKey {
    /// Sets `transactional_id` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 0
    pub fn with_transactional_id(mut self, value: StrBytes) -> Self {
        self.transactional_id = value;
        self
    }
}

impl Encodable for TransactionLogKey {
    fn encode<B: ByteBufMut>(&self, buf: &mut B, version: i16) -> Result<()> {
        if version != 0 {
            bail!("specified version not supported by this message type");
        }
        types::String.encode(buf, &self.transactional_id)?;

        Ok(())
    }
    fn compute_size(&self, version: i16) -> Result<usize> {
        let mut total_size = 0;
        total_size += types::String.compute_size(&self.transactional_id)?;

        Ok(total_size)
    }
}

impl Decodable for TransactionLogKey {
    fn decode<B: ByteBuf>(buf: &mut B, version: i16) -> Result<Self> {
        if version != 0 {
            bail!("specified version not supported by this message type");
        }
        let transactional_id = types::String.decode(buf)?;
        Ok(Self { transactional_id })
    }
}

impl Default for TransactionLogKey {
    fn default() -> Self {
        Self {
            transactional_id: Default::default(),
        }
    }
}

impl Message for TransactionLogKey {
    const VERSIONS: VersionRange = VersionRange { min: 0, max: 0 };
    const DEPRECATED_VERSIONS: Option<VersionRange> = None;
}
