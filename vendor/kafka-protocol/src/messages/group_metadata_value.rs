//! GroupMetadataValue
//!
//! See the schema for this message [here](https://github.com/apache/kafka/blob/trunk/clients/src/main/resources/common/message/GroupMetadataValue.json).
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
pub struct GroupMetadataValue {
    ///
    ///
    /// Supported API versions: 0-4
    pub protocol_type: StrBytes,

    ///
    ///
    /// Supported API versions: 0-4
    pub generation: i32,

    ///
    ///
    /// Supported API versions: 0-4
    pub protocol: Option<StrBytes>,

    ///
    ///
    /// Supported API versions: 0-4
    pub leader: Option<StrBytes>,

    ///
    ///
    /// Supported API versions: 2-4
    pub current_state_timestamp: i64,

    ///
    ///
    /// Supported API versions: 0-4
    pub members: Vec<MemberMetadata>,

    /// Other tagged fields
    pub unknown_tagged_fields: BTreeMap<i32, Bytes>,
}

impl GroupMetadataValue {
    /// Sets `protocol_type` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 0-4
    pub fn with_protocol_type(mut self, value: StrBytes) -> Self {
        self.protocol_type = value;
        self
    }
    /// Sets `generation` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 0-4
    pub fn with_generation(mut self, value: i32) -> Self {
        self.generation = value;
        self
    }
    /// Sets `protocol` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 0-4
    pub fn with_protocol(mut self, value: Option<StrBytes>) -> Self {
        self.protocol = value;
        self
    }
    /// Sets `leader` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 0-4
    pub fn with_leader(mut self, value: Option<StrBytes>) -> Self {
        self.leader = value;
        self
    }
    /// Sets `current_state_timestamp` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 2-4
    pub fn with_current_state_timestamp(mut self, value: i64) -> Self {
        self.current_state_timestamp = value;
        self
    }
    /// Sets `members` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 0-4
    pub fn with_members(mut self, value: Vec<MemberMetadata>) -> Self {
        self.members = value;
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

impl Encodable for GroupMetadataValue {
    fn encode<B: ByteBufMut>(&self, buf: &mut B, version: i16) -> Result<()> {
        if version < 0 || version > 4 {
            bail!("specified version not supported by this message type");
        }
        if version >= 4 {
            types::CompactString.encode(buf, &self.protocol_type)?;
        } else {
            types::String.encode(buf, &self.protocol_type)?;
        }
        types::Int32.encode(buf, &self.generation)?;
        if version >= 4 {
            types::CompactString.encode(buf, &self.protocol)?;
        } else {
            types::String.encode(buf, &self.protocol)?;
        }
        if version >= 4 {
            types::CompactString.encode(buf, &self.leader)?;
        } else {
            types::String.encode(buf, &self.leader)?;
        }
        if version >= 2 {
            types::Int64.encode(buf, &self.current_state_timestamp)?;
        }
        if version >= 4 {
            types::CompactArray(types::Struct { version }).encode(buf, &self.members)?;
        } else {
            types::Array(types::Struct { version }).encode(buf, &self.members)?;
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
        if version >= 4 {
            total_size += types::CompactString.compute_size(&self.protocol_type)?;
        } else {
            total_size += types::String.compute_size(&self.protocol_type)?;
        }
        total_size += types::Int32.compute_size(&self.generation)?;
        if version >= 4 {
            total_size += types::CompactString.compute_size(&self.protocol)?;
        } else {
            total_size += types::String.compute_size(&self.protocol)?;
        }
        if version >= 4 {
            total_size += types::CompactString.compute_size(&self.leader)?;
        } else {
            total_size += types::String.compute_size(&self.leader)?;
        }
        if version >= 2 {
            total_size += types::Int64.compute_size(&self.current_state_timestamp)?;
        }
        if version >= 4 {
            total_size +=
                types::CompactArray(types::Struct { version }).compute_size(&self.members)?;
        } else {
            total_size += types::Array(types::Struct { version }).compute_size(&self.members)?;
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

impl Decodable for GroupMetadataValue {
    fn decode<B: ByteBuf>(buf: &mut B, version: i16) -> Result<Self> {
        if version < 0 || version > 4 {
            bail!("specified version not supported by this message type");
        }
        let protocol_type = if version >= 4 {
            types::CompactString.decode(buf)?
        } else {
            types::String.decode(buf)?
        };
        let generation = types::Int32.decode(buf)?;
        let protocol = if version >= 4 {
            types::CompactString.decode(buf)?
        } else {
            types::String.decode(buf)?
        };
        let leader = if version >= 4 {
            types::CompactString.decode(buf)?
        } else {
            types::String.decode(buf)?
        };
        let current_state_timestamp = if version >= 2 {
            types::Int64.decode(buf)?
        } else {
            -1
        };
        let members = if version >= 4 {
            types::CompactArray(types::Struct { version }).decode(buf)?
        } else {
            types::Array(types::Struct { version }).decode(buf)?
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
            protocol_type,
            generation,
            protocol,
            leader,
            current_state_timestamp,
            members,
            unknown_tagged_fields,
        })
    }
}

impl Default for GroupMetadataValue {
    fn default() -> Self {
        Self {
            protocol_type: Default::default(),
            generation: 0,
            protocol: Some(Default::default()),
            leader: Some(Default::default()),
            current_state_timestamp: -1,
            members: Default::default(),
            unknown_tagged_fields: BTreeMap::new(),
        }
    }
}

impl Message for GroupMetadataValue {
    const VERSIONS: VersionRange = VersionRange { min: 0, max: 4 };
    const DEPRECATED_VERSIONS: Option<VersionRange> = None;
}

/// Valid versions: 0-4
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub struct MemberMetadata {
    ///
    ///
    /// Supported API versions: 0-4
    pub member_id: StrBytes,

    ///
    ///
    /// Supported API versions: 3-4
    pub group_instance_id: Option<StrBytes>,

    ///
    ///
    /// Supported API versions: 0-4
    pub client_id: StrBytes,

    ///
    ///
    /// Supported API versions: 0-4
    pub client_host: StrBytes,

    ///
    ///
    /// Supported API versions: 1-4
    pub rebalance_timeout: i32,

    ///
    ///
    /// Supported API versions: 0-4
    pub session_timeout: i32,

    ///
    ///
    /// Supported API versions: 0-4
    pub subscription: Bytes,

    ///
    ///
    /// Supported API versions: 0-4
    pub assignment: Bytes,

    /// Other tagged fields
    pub unknown_tagged_fields: BTreeMap<i32, Bytes>,
}

impl MemberMetadata {
    /// Sets `member_id` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 0-4
    pub fn with_member_id(mut self, value: StrBytes) -> Self {
        self.member_id = value;
        self
    }
    /// Sets `group_instance_id` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 3-4
    pub fn with_group_instance_id(mut self, value: Option<StrBytes>) -> Self {
        self.group_instance_id = value;
        self
    }
    /// Sets `client_id` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 0-4
    pub fn with_client_id(mut self, value: StrBytes) -> Self {
        self.client_id = value;
        self
    }
    /// Sets `client_host` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 0-4
    pub fn with_client_host(mut self, value: StrBytes) -> Self {
        self.client_host = value;
        self
    }
    /// Sets `rebalance_timeout` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 1-4
    pub fn with_rebalance_timeout(mut self, value: i32) -> Self {
        self.rebalance_timeout = value;
        self
    }
    /// Sets `session_timeout` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 0-4
    pub fn with_session_timeout(mut self, value: i32) -> Self {
        self.session_timeout = value;
        self
    }
    /// Sets `subscription` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 0-4
    pub fn with_subscription(mut self, value: Bytes) -> Self {
        self.subscription = value;
        self
    }
    /// Sets `assignment` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 0-4
    pub fn with_assignment(mut self, value: Bytes) -> Self {
        self.assignment = value;
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

impl Encodable for MemberMetadata {
    fn encode<B: ByteBufMut>(&self, buf: &mut B, version: i16) -> Result<()> {
        if version < 0 || version > 4 {
            bail!("specified version not supported by this message type");
        }
        if version >= 4 {
            types::CompactString.encode(buf, &self.member_id)?;
        } else {
            types::String.encode(buf, &self.member_id)?;
        }
        if version >= 3 {
            if version >= 4 {
                types::CompactString.encode(buf, &self.group_instance_id)?;
            } else {
                types::String.encode(buf, &self.group_instance_id)?;
            }
        }
        if version >= 4 {
            types::CompactString.encode(buf, &self.client_id)?;
        } else {
            types::String.encode(buf, &self.client_id)?;
        }
        if version >= 4 {
            types::CompactString.encode(buf, &self.client_host)?;
        } else {
            types::String.encode(buf, &self.client_host)?;
        }
        if version >= 1 {
            types::Int32.encode(buf, &self.rebalance_timeout)?;
        }
        types::Int32.encode(buf, &self.session_timeout)?;
        if version >= 4 {
            types::CompactBytes.encode(buf, &self.subscription)?;
        } else {
            types::Bytes.encode(buf, &self.subscription)?;
        }
        if version >= 4 {
            types::CompactBytes.encode(buf, &self.assignment)?;
        } else {
            types::Bytes.encode(buf, &self.assignment)?;
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
        if version >= 4 {
            total_size += types::CompactString.compute_size(&self.member_id)?;
        } else {
            total_size += types::String.compute_size(&self.member_id)?;
        }
        if version >= 3 {
            if version >= 4 {
                total_size += types::CompactString.compute_size(&self.group_instance_id)?;
            } else {
                total_size += types::String.compute_size(&self.group_instance_id)?;
            }
        }
        if version >= 4 {
            total_size += types::CompactString.compute_size(&self.client_id)?;
        } else {
            total_size += types::String.compute_size(&self.client_id)?;
        }
        if version >= 4 {
            total_size += types::CompactString.compute_size(&self.client_host)?;
        } else {
            total_size += types::String.compute_size(&self.client_host)?;
        }
        if version >= 1 {
            total_size += types::Int32.compute_size(&self.rebalance_timeout)?;
        }
        total_size += types::Int32.compute_size(&self.session_timeout)?;
        if version >= 4 {
            total_size += types::CompactBytes.compute_size(&self.subscription)?;
        } else {
            total_size += types::Bytes.compute_size(&self.subscription)?;
        }
        if version >= 4 {
            total_size += types::CompactBytes.compute_size(&self.assignment)?;
        } else {
            total_size += types::Bytes.compute_size(&self.assignment)?;
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

impl Decodable for MemberMetadata {
    fn decode<B: ByteBuf>(buf: &mut B, version: i16) -> Result<Self> {
        if version < 0 || version > 4 {
            bail!("specified version not supported by this message type");
        }
        let member_id = if version >= 4 {
            types::CompactString.decode(buf)?
        } else {
            types::String.decode(buf)?
        };
        let group_instance_id = if version >= 3 {
            if version >= 4 {
                types::CompactString.decode(buf)?
            } else {
                types::String.decode(buf)?
            }
        } else {
            None
        };
        let client_id = if version >= 4 {
            types::CompactString.decode(buf)?
        } else {
            types::String.decode(buf)?
        };
        let client_host = if version >= 4 {
            types::CompactString.decode(buf)?
        } else {
            types::String.decode(buf)?
        };
        let rebalance_timeout = if version >= 1 {
            types::Int32.decode(buf)?
        } else {
            -1
        };
        let session_timeout = types::Int32.decode(buf)?;
        let subscription = if version >= 4 {
            types::CompactBytes.decode(buf)?
        } else {
            types::Bytes.decode(buf)?
        };
        let assignment = if version >= 4 {
            types::CompactBytes.decode(buf)?
        } else {
            types::Bytes.decode(buf)?
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
            member_id,
            group_instance_id,
            client_id,
            client_host,
            rebalance_timeout,
            session_timeout,
            subscription,
            assignment,
            unknown_tagged_fields,
        })
    }
}

impl Default for MemberMetadata {
    fn default() -> Self {
        Self {
            member_id: Default::default(),
            group_instance_id: None,
            client_id: Default::default(),
            client_host: Default::default(),
            rebalance_timeout: -1,
            session_timeout: 0,
            subscription: Default::default(),
            assignment: Default::default(),
            unknown_tagged_fields: BTreeMap::new(),
        }
    }
}

impl Message for MemberMetadata {
    const VERSIONS: VersionRange = VersionRange { min: 0, max: 4 };
    const DEPRECATED_VERSIONS: Option<VersionRange> = None;
}
