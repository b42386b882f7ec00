//! TransactionLogValue
//!
//! See the schema for this message [here](https://github.com/apache/kafka/blob/trunk/clients/src/main/resources/common/message/TransactionLogValue.json).
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
pub struct PartitionsSchema {
    ///
    ///
    /// Supported API versions: 0-1
    pub topic: StrBytes,

    ///
    ///
    /// Supported API versions: 0-1
    pub partition_ids: Vec<i32>,

    /// Other tagged fields
    pub unknown_tagged_fields: BTreeMap<i32, Bytes>,
}

impl PartitionsSchema {
    /// Sets `topic` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 0-1
    pub fn with_topic(mut self, value: StrBytes) -> Self {
        self.topic = value;
        self
    }
    /// Sets `partition_ids` to the passed value.
    ///
    ///
    ///
    /// Supported API versions: 0-1
    pub fn with_partition_ids(mut self, value: Vec<i32>) -> Self {
        self.partition_ids = value;
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

impl Encodable for PartitionsSchema {
    fn encode<B: ByteBufMut>(&self, buf: &mut B, version: i16) -> Result<()> {
        if version < 0 || version > 1 {
            bail!("specified version not supported by this message type");
        }
        if version >= 1 {
            types::CompactString.encode(buf, &self.topic)?;
        } else {
            types::String.encode(buf, &self.topic)?;
        }
        if version >= 1 {
            types::CompactArray(types::Int32).encode(buf, &self.partition_ids)?;
        } else {
            types::Array(types::Int32).encode(buf, &self.partition_ids)?;
        }
        if version >= 1 {
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
        if version >= 1 {
            total_size += types::CompactString.compute_size(&self.topic)?;
        } else {
            total_size += types::String.compute_size(&self.topic)?;
        }
        if version >= 1 {
            total_size += types::CompactArray(types::Int32).compute_size(&self.partition_ids)?;
        } else {
            total_size += types::Array(types::Int32).compute_size(&self.partition_ids)?;
        }
        if version >= 1 {
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

impl Decodable for PartitionsSchema {
    fn decode<B: ByteBuf>(buf: &mut B, version: i16) -> Result<Self> {
        if version < 0 || version > 1 {
            bail!("specified version not supported by this message type");
        }
        let topic = if version >= 1 {
            types::CompactString.decode(buf)?
        } else {
            types::String.decode(buf)?
        };
        let partition_ids = if version >= 1 {
            types::CompactArray(types::Int32).decode(buf)?
        } else {
            types::Array(types::Int32).decode(buf)?
        };
        let mut unknown_tagged_fields = BTreeMap::new();
        if version >= 1 {
            let num_tagged_fields = types::UnsignedVarInt.decode(buf)?;
            for _ in 0..num_tagged_fields {
                let tag: u32 = types::UnsignedVarInt.decode(buf)?;
                let size: u32 = types::UnsignedVarInt.decode(buf)?;
                let unknown_value = buf.try_get_bytes(size as usize)?;
                unknown_tagged_fields.insert(tag as i32, unknown_value);
            }
        }
        Ok(Self {
            topic,
            partition_ids,
            unknown_tagged_fields,
        })
    }
}

impl Default for PartitionsSchema {
    fn default() -> Self {
        Self {
            topic: Default::default(),
            partition_ids: Default::default(),
            unknown_tagged_fields: BTreeMap::new(),
        }
    }
}

impl Message for PartitionsSchema {
    const VERSIONS: VersionRange = VersionRange { min: 0, max: 1 };
    const DEPRECATED_VERSIONS: Option<VersionRange> = None;
}

/// Valid versions: 0-1
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub struct TransactionLogValue {
    /// Producer id in use by the transactional id
    ///
    /// Supported API versions: 0-1
    pub producer_id: i64,

    /// Producer id used by the last committed transaction
    ///
    /// Supported API versions: 1
    pub previous_producer_id: i64,

    /// Latest producer ID sent to the producer for the given transactional ID
    ///
    /// Supported API versions: 1
    pub next_producer_id: i64,

    /// Epoch associated with the producer id
    ///
    /// Supported API versions: 0-1
    pub producer_epoch: i16,

    /// Transaction timeout in milliseconds
    ///
    /// Supported API versions: 0-1
    pub transaction_timeout_ms: i32,

    /// TransactionState the transaction is in
    ///
    /// Supported API versions: 0-1
    pub transaction_status: i8,

    /// Set of partitions involved in the transaction
    ///
    /// Supported API versions: 0-1
    pub transaction_partitions: Option<Vec<PartitionsSchema>>,

    /// Time the transaction was last updated
    ///
    /// Supported API versions: 0-1
    pub transaction_last_update_timestamp_ms: i64,

    /// Time the transaction was started
    ///
    /// Supported API versions: 0-1
    pub transaction_start_timestamp_ms: i64,

    /// The transaction version used by the client
    ///
    /// Supported API versions: 1
    pub client_transaction_version: i16,

    /// Other tagged fields
    pub unknown_tagged_fields: BTreeMap<i32, Bytes>,
}

impl TransactionLogValue {
    /// Sets `producer_id` to the passed value.
    ///
    /// Producer id in use by the transactional id
    ///
    /// Supported API versions: 0-1
    pub fn with_producer_id(mut self, value: i64) -> Self {
        self.producer_id = value;
        self
    }
    /// Sets `previous_producer_id` to the passed value.
    ///
    /// Producer id used by the last committed transaction
    ///
    /// Supported API versions: 1
    pub fn with_previous_producer_id(mut self, value: i64) -> Self {
        self.previous_producer_id = value;
        self
    }
    /// Sets `next_producer_id` to the passed value.
    ///
    /// Latest producer ID sent to the producer for the given transactional ID
    ///
    /// Supported API versions: 1
    pub fn with_next_producer_id(mut self, value: i64) -> Self {
        self.next_producer_id = value;
        self
    }
    /// Sets `producer_epoch` to the passed value.
    ///
    /// Epoch associated with the producer id
    ///
    /// Supported API versions: 0-1
    pub fn with_producer_epoch(mut self, value: i16) -> Self {
        self.producer_epoch = value;
        self
    }
    /// Sets `transaction_timeout_ms` to the passed value.
    ///
    /// Transaction timeout in milliseconds
    ///
    /// Supported API versions: 0-1
    pub fn with_transaction_timeout_ms(mut self, value: i32) -> Self {
        self.transaction_timeout_ms = value;
        self
    }
    /// Sets `transaction_status` to the passed value.
    ///
    /// TransactionState the transaction is in
    ///
    /// Supported API versions: 0-1
    pub fn with_transaction_status(mut self, value: i8) -> Self {
        self.transaction_status = value;
        self
    }
    /// Sets `transaction_partitions` to the passed value.
    ///
    /// Set of partitions involved in the transaction
    ///
    /// Supported API versions: 0-1
    pub fn with_transaction_partitions(mut self, value: Option<Vec<PartitionsSchema>>) -> Self {
        self.transaction_partitions = value;
        self
    }
    /// Sets `transaction_last_update_timestamp_ms` to the passed value.
    ///
    /// Time the transaction was last updated
    ///
    /// Supported API versions: 0-1
    pub fn with_transaction_last_update_timestamp_ms(mut self, value: i64) -> Self {
        self.transaction_last_update_timestamp_ms = value;
        self
    }
    /// Sets `transaction_start_timestamp_ms` to the passed value.
    ///
    /// Time the transaction was started
    ///
    /// Supported API versions: 0-1
    pub fn with_transaction_start_timestamp_ms(mut self, value: i64) -> Self {
        self.transaction_start_timestamp_ms = value;
        self
    }
    /// Sets `client_transaction_version` to the passed value.
    ///
    /// The transaction version used by the client
    ///
    /// Supported API versions: 1
    pub fn with_client_transaction_version(mut self, value: i16) -> Self {
        self.client_transaction_version = value;
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

impl Encodable for TransactionLogValue {
    fn encode<B: ByteBufMut>(&self, buf: &mut B, version: i16) -> Result<()> {
        if version < 0 || version > 1 {
            bail!("specified version not supported by this message type");
        }
        types::Int64.encode(buf, &self.producer_id)?;
        types::Int16.encode(buf, &self.producer_epoch)?;
        types::Int32.encode(buf, &self.transaction_timeout_ms)?;
        types::Int8.encode(buf, &self.transaction_status)?;
        if version >= 1 {
            types::CompactArray(types::Struct { version })
                .encode(buf, &self.transaction_partitions)?;
        } else {
            types::Array(types::Struct { version }).encode(buf, &self.transaction_partitions)?;
        }
        types::Int64.encode(buf, &self.transaction_last_update_timestamp_ms)?;
        types::Int64.encode(buf, &self.transaction_start_timestamp_ms)?;
        if version >= 1 {
            let mut num_tagged_fields = self.unknown_tagged_fields.len();
            if self.previous_producer_id != -1 {
                num_tagged_fields += 1;
            }
            if self.next_producer_id != -1 {
                num_tagged_fields += 1;
            }
            if self.client_transaction_version != 0 {
                num_tagged_fields += 1;
            }
            if num_tagged_fields > std::u32::MAX as usize {
                bail!(
                    "Too many tagged fields to encode ({} fields)",
                    num_tagged_fields
                );
            }
            types::UnsignedVarInt.encode(buf, num_tagged_fields as u32)?;
            if self.previous_producer_id != -1 {
                let computed_size = types::Int64.compute_size(&self.previous_producer_id)?;
                if computed_size > std::u32::MAX as usize {
                    bail!(
                        "Tagged field is too large to encode ({} bytes)",
                        computed_size
                    );
                }
                types::UnsignedVarInt.encode(buf, 0)?;
                types::UnsignedVarInt.encode(buf, computed_size as u32)?;
                types::Int64.encode(buf, &self.previous_producer_id)?;
            }
            if self.next_producer_id != -1 {
                let computed_size = types::Int64.compute_size(&self.next_producer_id)?;
                if computed_size > std::u32::MAX as usize {
                    bail!(
                        "Tagged field is too large to encode ({} bytes)",
                        computed_size
                    );
                }
                types::UnsignedVarInt.encode(buf, 1)?;
                types::UnsignedVarInt.encode(buf, computed_size as u32)?;
                types::Int64.encode(buf, &self.next_producer_id)?;
            }
            if self.client_transaction_version != 0 {
                let computed_size = types::Int16.compute_size(&self.client_transaction_version)?;
                if computed_size > std::u32::MAX as usize {
                    bail!(
                        "Tagged field is too large to encode ({} bytes)",
                        computed_size
                    );
                }
                types::UnsignedVarInt.encode(buf, 2)?;
                types::UnsignedVarInt.encode(buf, computed_size as u32)?;
                types::Int16.encode(buf, &self.client_transaction_version)?;
            }

            write_unknown_tagged_fields(buf, 3.., &self.unknown_tagged_fields)?;
        }
        Ok(())
    }
    fn compute_size(&self, version: i16) -> Result<usize> {
        let mut total_size = 0;
        total_size += types::Int64.compute_size(&self.producer_id)?;
        total_size += types::Int16.compute_size(&self.producer_epoch)?;
        total_size += types::Int32.compute_size(&self.transaction_timeout_ms)?;
        total_size += types::Int8.compute_size(&self.transaction_status)?;
        if version >= 1 {
            total_size += types::CompactArray(types::Struct { version })
                .compute_size(&self.transaction_partitions)?;
        } else {
            total_size += types::Array(types::Struct { version })
                .compute_size(&self.transaction_partitions)?;
        }
        total_size += types::Int64.compute_size(&self.transaction_last_update_timestamp_ms)?;
        total_size += types::Int64.compute_size(&self.transaction_start_timestamp_ms)?;
        if version >= 1 {
            let mut num_tagged_fields = self.unknown_tagged_fields.len();
            if self.previous_producer_id != -1 {
                num_tagged_fields += 1;
            }
            if self.next_producer_id != -1 {
                num_tagged_fields += 1;
            }
            if self.client_transaction_version != 0 {
                num_tagged_fields += 1;
            }
            if num_tagged_fields > std::u32::MAX as usize {
                bail!(
                    "Too many tagged fields to encode ({} fields)",
                    num_tagged_fields
                );
            }
            total_size += types::UnsignedVarInt.compute_size(num_tagged_fields as u32)?;
            if self.previous_producer_id != -1 {
                let computed_size = types::Int64.compute_size(&self.previous_producer_id)?;
                if computed_size > std::u32::MAX as usize {
                    bail!(
                        "Tagged field is too large to encode ({} bytes)",
                        computed_size
                    );
                }
                total_size += types::UnsignedVarInt.compute_size(0)?;
                total_size += types::UnsignedVarInt.compute_size(computed_size as u32)?;
                total_size += computed_size;
            }
            if self.next_producer_id != -1 {
                let computed_size = types::Int64.compute_size(&self.next_producer_id)?;
                if computed_size > std::u32::MAX as usize {
                    bail!(
                        "Tagged field is too large to encode ({} bytes)",
                        computed_size
                    );
                }
                total_size += types::UnsignedVarInt.compute_size(1)?;
                total_size += types::UnsignedVarInt.compute_size(computed_size as u32)?;
                total_size += computed_size;
            }
            if self.client_transaction_version != 0 {
                let computed_size = types::Int16.compute_size(&self.client_transaction_version)?;
                if computed_size > std::u32::MAX as usize {
                    bail!(
                        "Tagged field is too large to encode ({} bytes)",
                        computed_size
                    );
                }
                total_size += types::UnsignedVarInt.compute_size(2)?;
                total_size += types::UnsignedVarInt.compute_size(computed_size as u32)?;
                total_size += computed_size;
            }

            total_size += compute_unknown_tagged_fields_size(&self.unknown_tagged_fields)?;
        }
        Ok(total_size)
    }
}

impl Decodable for TransactionLogValue {
    fn decode<B: ByteBuf>(buf: &mut B, version: i16) -> Result<Self> {
        if version < 0 || version > 1 {
            bail!("specified version not supported by this message type");
        }
        let producer_id = types::Int64.decode(buf)?;
        let mut previous_producer_id = -1;
        let mut next_producer_id = -1;
        let producer_epoch = types::Int16.decode(buf)?;
        let transaction_timeout_ms = types::Int32.decode(buf)?;
        let transaction_status = types::Int8.decode(buf)?;
        let transaction_partitions = if version >= 1 {
            types::CompactArray(types::Struct { version }).decode(buf)?
        } else {
            types::Array(types::Struct { version }).decode(buf)?
        };
        let transaction_last_update_timestamp_ms = types::Int64.decode(buf)?;
        let transaction_start_timestamp_ms = types::Int64.decode(buf)?;
        let mut client_transaction_version = 0;
        let mut unknown_tagged_fields = BTreeMap::new();
        if version >= 1 {
            let num_tagged_fields = types::UnsignedVarInt.decode(buf)?;
            for _ in 0..num_tagged_fields {
                let tag: u32 = types::UnsignedVarInt.decode(buf)?;
                let size: u32 = types::UnsignedVarInt.decode(buf)?;
                match tag {
                    0 => {
                        previous_producer_id = types::Int64.decode(buf)?;
                    }
                    1 => {
                        next_producer_id = types::Int64.decode(buf)?;
                    }
                    2 => {
                        client_transaction_version = types::Int16.decode(buf)?;
                    }
                    _ => {
                        let unknown_value = buf.try_get_bytes(size as usize)?;
                        unknown_tagged_fields.insert(tag as i32, unknown_value);
                    }
                }
            }
        }
        Ok(Self {
            producer_id,
            previous_producer_id,
            next_producer_id,
            producer_epoch,
            transaction_timeout_ms,
            transaction_status,
            transaction_partitions,
            transaction_last_update_timestamp_ms,
            transaction_start_timestamp_ms,
            client_transaction_version,
            unknown_tagged_fields,
        })
    }
}

impl Default for TransactionLogValue {
    fn default() -> Self {
        Self {
            producer_id: 0,
            previous_producer_id: -1,
            next_producer_id: -1,
            producer_epoch: 0,
            transaction_timeout_ms: 0,
            transaction_status: 0,
            transaction_partitions: Some(Default::default()),
            transaction_last_update_timestamp_ms: 0,
            transaction_start_timestamp_ms: 0,
            client_transaction_version: 0,
            unknown_tagged_fields: BTreeMap::new(),
        }
    }
}

impl Message for TransactionLogValue {
    const VERSIONS: VersionRange = VersionRange { min: 0, max: 1 };
    const DEPRECATED_VERSIONS: Option<VersionRange> = None;
}
