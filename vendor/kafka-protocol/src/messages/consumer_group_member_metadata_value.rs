//! ConsumerGroupMemberMetadataValue
//!
//! See the schema for this message [here](https://github.com/apache/kafka/blob/trunk/clients/src/main/resources/common/message/ConsumerGroupMemberMetadataValue.json).
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
pub struct ConsumerGroupMemberMetadataValue {
    /// The (optional) instance id.
    ///
    /// Supported API versions: 0
    pub instance_id: Option<StrBytes>,

    /// The (optional) rack id.
    ///
    /// Supported API versions: 0
    pub rack_id: Option<StrBytes>,

    /// The client id.
    ///
    /// Supported API versions: 0
    pub client_id: StrBytes,

    /// The client host.
    ///
    /// Supported API versions: 0
    pub client_host: StrBytes,

    /// The list of subscribed topic names.
    ///
    /// Supported API versions: 0
    pub subscribed_topic_names: Vec<StrBytes>,

    /// The subscribed topic regular expression.
    ///
    /// Supported API versions: 0
    pub subscribed_topic_regex: Option<StrBytes>,

    /// The rebalance timeout
    ///
    /// Supported API versions: 0
    pub rebalance_timeout_ms: i32,

    /// The server assignor to use; or null if not used.
    ///
    /// Supported API versions: 0
    pub server_assignor: Option<StrBytes>,

    /// Other tagged fields
    pub unknown_tagged_fields: BTreeMap<i32, Bytes>,
}

impl ConsumerGroupMemberMetadataValue {
    /// Sets `instance_id` to the passed value.
    ///
    /// The (optional) instance id.
    ///
    /// Supported API versions: 0
    pub fn with_instance_id(mut self, value: Option<StrBytes>) -> Self {
        self.instance_id = value;
        self
    }
    /// Sets `rack_id` to the passed value.
    ///
    /// The (optional) rack id.
    ///
    /// Supported API versions: 0
    pub fn with_rack_id(mut self, value: Option<StrBytes>) -> Self {
        self.rack_id = value;
        self
    }
    /// Sets `client_id` to the passed value.
    ///
    /// The client id.
    ///
    /// Supported API versions: 0
    pub fn with_client_id(mut self, value: StrBytes) -> Self {
        self.client_id = value;
        self
    }
    /// Sets `client_host` to the passed value.
    ///
    /// The client host.
    ///
    /// Supported API versions: 0
    pub fn with_client_host(mut self, value: StrBytes) -> Self {
        self.client_host = value;
        self
    }
    /// Sets `subscribed_topic_names` to the passed value.
    ///
    /// The list of subscribed topic names.
    ///
    /// Supported API versions: 0
    pub fn with_subscribed_topic_names(mut self, value: Vec<StrBytes>) -> Self {
        self.subscribed_topic_names = value;
        self
    }
    /// Sets `subscribed_topic_regex` to the passed value.
    ///
    /// The subscribed topic regular expression.
    ///
    /// Supported API versions: 0
    pub fn with_subscribed_topic_regex(mut self, value: Option<StrBytes>) -> Self {
        self.subscribed_topic_regex = value;
        self
    }
    /// Sets `rebalance_timeout_ms` to the passed value.
    ///
    /// The rebalance timeout
    ///
    /// Supported API versions: 0
    pub fn with_rebalance_timeout_ms(mut self, value: i32) -> Self {
        self.rebalance_timeout_ms = value;
        self
    }
    /// Sets `server_assignor` to the passed value.
    ///
    /// The server assignor to use; or null if not used.
    ///
    /// Supported API versions: 0
    pub fn with_server_assignor(mut self, value: Option<StrBytes>) -> Self {
        self.server_assignor = value;
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

impl Encodable for ConsumerGroupMemberMetadataValue {
    fn encode<B: ByteBufMut>(&self, buf: &mut B, version: i16) -> Result<()> {
        if version != 0 {
            bail!("specified version not supported by this message type");
        }
        types::CompactString.encode(buf, &self.instance_id)?;
        types::CompactString.encode(buf, &self.rack_id)?;
        types::CompactString.encode(buf, &self.client_id)?;
        types::CompactString.encode(buf, &self.client_host)?;
        types::CompactArray(types::CompactString).encode(buf, &self.subscribed_topic_names)?;
        types::CompactString.encode(buf, &self.subscribed_topic_regex)?;
        types::Int32.encode(buf, &self.rebalance_timeout_ms)?;
        types::CompactString.encode(buf, &self.server_assignor)?;
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
        total_size += types::CompactString.compute_size(&self.instance_id)?;
        total_size += types::CompactString.compute_size(&self.rack_id)?;
        total_size += types::CompactString.compute_size(&self.client_id)?;
        total_size += types::CompactString.compute_size(&self.client_host)?;
        total_size +=
            types::CompactArray(types::CompactString).compute_size(&self.subscribed_topic_names)?;
        total_size += types::CompactString.compute_size(&self.subscribed_topic_regex)?;
        total_size += types::Int32.compute_size(&self.rebalance_timeout_ms)?;
        total_size += types::CompactString.compute_size(&self.server_assignor)?;
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

impl Decodable for ConsumerGroupMemberMetadataValue {
    fn decode<B: ByteBuf>(buf: &mut B, version: i16) -> Result<Self> {
        if version != 0 {
            bail!("specified version not supported by this message type");
        }
        let instance_id = types::CompactString.decode(buf)?;
        let rack_id = types::CompactString.decode(buf)?;
        let client_id = types::CompactString.decode(buf)?;
        let client_host = types::CompactString.decode(buf)?;
        let subscribed_topic_names = types::CompactArray(types::CompactString).decode(buf)?;
        let subscribed_topic_regex = types::CompactString.decode(buf)?;
        let rebalance_timeout_ms = types::Int32.decode(buf)?;
        let server_assignor = types::CompactString.decode(buf)?;
        let mut unknown_tagged_fields = BTreeMap::new();
        let num_tagged_fields = types::UnsignedVarInt.decode(buf)?;
        for _ in 0..num_tagged_fields {
            let tag: u32 = types::UnsignedVarInt.decode(buf)?;
            let size: u32 = types::UnsignedVarInt.decode(buf)?;
            let unknown_value = buf.try_get_bytes(size as usize)?;
            unknown_tagged_fields.insert(tag as i32, unknown_value);
        }
        Ok(Self {
            instance_id,
            rack_id,
            client_id,
            client_host,
            subscribed_topic_names,
            subscribed_topic_regex,
            rebalance_timeout_ms,
            server_assignor,
            unknown_tagged_fields,
        })
    }
}

impl Default for ConsumerGroupMemberMetadataValue {
    fn default() -> Self {
        Self {
            instance_id: Some(Default::default()),
            rack_id: Some(Default::default()),
            client_id: Default::default(),
            client_host: Default::default(),
            subscribed_topic_names: Default::default(),
            subscribed_topic_regex: Some(Default::default()),
            rebalance_timeout_ms: -1,
            server_assignor: Some(Default::default()),
            unknown_tagged_fields: BTreeMap::new(),
        }
    }
}

impl Message for ConsumerGroupMemberMetadataValue {
    const VERSIONS: VersionRange = VersionRange { min: 0, max: 0 };
    const DEPRECATED_VERSIONS: Option<VersionRange> = None;
}
