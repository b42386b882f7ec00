//! The one error type of this crate and its mapping to Kafka error codes (the code
//! table is kafka-protocol's `ResponseError`, the one the whole workspace uses).

use kafka_protocol::ResponseError;

const CORRUPT_MESSAGE: i16 = ResponseError::CorruptMessage.code();
const UNSUPPORTED_COMPRESSION_TYPE: i16 = ResponseError::UnsupportedCompressionType.code();
const INVALID_RECORD: i16 = ResponseError::InvalidRecord.code();

/// Why a record batch could not be read, validated or built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The buffer ends before the batch (or a field inside it) does.
    #[error("record batch is truncated")]
    Truncated,
    /// The magic byte is not 2; older message formats are not supported.
    #[error("unsupported record batch magic {0}")]
    InvalidMagic(i8),
    /// The bytes cannot be a record batch: impossible lengths, bad varints, trailing bytes.
    #[error("corrupt message: {0}")]
    CorruptMessage(String),
    /// The stored CRC-32C does not match the bytes it covers.
    #[error("record batch CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    CrcMismatch {
        /// The CRC written in the batch header.
        stored: u32,
        /// The CRC computed over attributes..end.
        computed: u32,
    },
    /// The batch is well formed but breaks a rule about its records
    /// (offset deltas, record count, keyless records on a compacted topic).
    #[error("invalid record: {0}")]
    InvalidRecord(String),
    /// The attributes name a compression codec id that does not exist.
    #[error("unsupported compression type {0}")]
    UnsupportedCompression(i16),
    /// The codec failed to compress or decompress the records.
    #[error("compression error: {0}")]
    Compression(String),
}

impl RecordError {
    /// The Kafka error code a broker returns for this error in a produce response.
    pub fn kafka_error_code(&self) -> i16 {
        match self {
            RecordError::InvalidRecord(_) => INVALID_RECORD,
            RecordError::UnsupportedCompression(_) => UNSUPPORTED_COMPRESSION_TYPE,
            // Kafka reports undecodable compressed data and bad magic as corruption too.
            RecordError::Truncated
            | RecordError::InvalidMagic(_)
            | RecordError::CorruptMessage(_)
            | RecordError::CrcMismatch { .. }
            | RecordError::Compression(_) => CORRUPT_MESSAGE,
        }
    }

    pub(crate) fn corrupt(msg: impl Into<String>) -> Self {
        RecordError::CorruptMessage(msg.into())
    }

    pub(crate) fn invalid(msg: impl Into<String>) -> Self {
        RecordError::InvalidRecord(msg.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_error_codes() {
        let crc = RecordError::CrcMismatch {
            stored: 1,
            computed: 2,
        };
        assert_eq!(crc.kafka_error_code(), CORRUPT_MESSAGE);
        assert_eq!(RecordError::Truncated.kafka_error_code(), CORRUPT_MESSAGE);
        assert_eq!(
            RecordError::InvalidMagic(1).kafka_error_code(),
            CORRUPT_MESSAGE
        );
        assert_eq!(
            RecordError::invalid("keyless").kafka_error_code(),
            INVALID_RECORD
        );
        assert_eq!(
            RecordError::UnsupportedCompression(7).kafka_error_code(),
            UNSUPPORTED_COMPRESSION_TYPE
        );
        assert!(crc.to_string().contains("0x00000001"));
    }
}
