//! Size-prefixed frames and the request header.

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader as WireHeader};
use kafka_protocol::protocol::Decodable;

/// Why a frame could not be read; each one closes the connection.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FrameError {
    #[error("frame size {size} is larger than socket.request.max.bytes {max}")]
    TooLarge { size: i64, max: usize },
    #[error("negative frame size {0}")]
    Negative(i32),
    #[error("frame shorter than a request header")]
    TooShort,
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The parsed request header. `api` is `None` for an API key this build does not know.
#[derive(Clone, Debug)]
pub struct RequestHeader {
    pub api_key: i16,
    pub api_version: i16,
    pub correlation_id: i32,
    pub client_id: Option<String>,
    pub api: Option<ApiKey>,
    /// True when kafka-protocol cannot decode this version of the API.
    pub unsupported_version: bool,
}

impl RequestHeader {
    /// Version of the response header for this request (1 adds tagged fields).
    pub fn response_header_version(&self) -> i16 {
        match self.api {
            // ApiVersions always answers with header v0 so old clients can parse an error.
            Some(ApiKey::ApiVersions) | None => 0,
            Some(_) if self.unsupported_version => 0,
            Some(api) => api.response_header_version(self.api_version),
        }
    }
}

/// Splits a frame into its header and the still-encoded body. Only the fixed leading
/// fields are trusted for unknown APIs or versions; everything else is decoded by
/// kafka-protocol with the header version that API uses.
pub(crate) fn parse_header(frame: BytesMut) -> Result<(RequestHeader, Bytes), FrameError> {
    let mut buf = frame.freeze();
    if buf.len() < 8 {
        return Err(FrameError::TooShort);
    }
    let api_key = i16::from_be_bytes([buf[0], buf[1]]);
    let api_version = i16::from_be_bytes([buf[2], buf[3]]);
    let correlation_id = i32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
    let api = ApiKey::try_from(api_key).ok();
    let unsupported_version = api.is_none_or(|api| {
        let range = api.valid_versions();
        api_version < range.min || api_version > range.max
    });
    let mut header = RequestHeader {
        api_key,
        api_version,
        correlation_id,
        client_id: None,
        api,
        unsupported_version,
    };
    match api {
        Some(api) if !unsupported_version => {
            let version = api.request_header_version(api_version);
            let wire = WireHeader::decode(&mut buf, version).map_err(|_| FrameError::TooShort)?;
            header.client_id = wire.client_id.map(|s| s.to_string());
        }
        _ => buf.advance(8),
    }
    Ok((header, buf))
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use kafka_protocol::messages::{ApiKey, RequestKind};

    /// A Metadata v1 body whose topics array claims 2^31-1 entries: the decoder must
    /// refuse it from the bytes left, not try to allocate for the count.
    #[test]
    fn hostile_array_count_is_refused_without_allocating() {
        let mut body = Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff]);
        let err = RequestKind::decode(ApiKey::Metadata, &mut body, 1).unwrap_err();
        assert!(format!("{err:#}").contains("larger than"), "{err:#}");
    }

    #[test]
    fn hostile_compact_lengths_are_refused() {
        // Metadata v9 (flexible): topics compact array with a varint count near u32::MAX.
        let mut body = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert!(RequestKind::decode(ApiKey::Metadata, &mut body, 9).is_err());
        // CreateTopics v5: one topic whose compact name claims ~4 GiB.
        let mut body = Bytes::from_static(&[0x02, 0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert!(RequestKind::decode(ApiKey::CreateTopics, &mut body, 5).is_err());
        // SaslAuthenticate v0: auth bytes claiming 2 GiB.
        let mut body = Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, 0x00]);
        assert!(RequestKind::decode(ApiKey::SaslAuthenticate, &mut body, 0).is_err());
    }
}
