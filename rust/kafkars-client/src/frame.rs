//! Framing: a request as a size-prefixed frame behind the request header its version
//! uses (v1, or v2 for flexible versions), a response read back with its correlation id
//! checked, and a frame read off a stream without trusting its size. kafka-protocol
//! encodes and decodes the messages, as it does for the broker, so each format has one
//! implementation.

use std::io::Read;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use crate::ClientError;

/// `request` as a size-prefixed frame behind the request header its version uses.
pub fn frame_request(
    request: &RequestKind,
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    client_id: Option<&str>,
) -> Result<BytesMut, ClientError> {
    let encode_error = |e: anyhow::Error| ClientError::Encode {
        api,
        version,
        reason: format!("{e:#}"),
    };
    let header = RequestHeader::default()
        .with_request_api_key(api as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(client_id.map(|c| StrBytes::from_string(c.to_owned())));
    let mut frame = BytesMut::with_capacity(256);
    frame.put_i32(0); // size, filled in below
    header
        .encode(&mut frame, api.request_header_version(version))
        .map_err(encode_error)?;
    request.encode(&mut frame, version).map_err(encode_error)?;
    let size = i32::try_from(frame.len() - 4).map_err(|_| ClientError::Encode {
        api,
        version,
        reason: "request over 2 GiB".into(),
    })?;
    frame[..4].copy_from_slice(&size.to_be_bytes());
    Ok(frame)
}

/// Reads a response frame (without its size prefix) to a request of `api` at `version`
/// sent with `correlation_id`. Byte fields of the result are slices of `frame`.
pub fn parse_response(
    mut frame: Bytes,
    api: ApiKey,
    version: i16,
    correlation_id: i32,
) -> Result<ResponseKind, ClientError> {
    let decode_error = |e: anyhow::Error| ClientError::Decode {
        api,
        version,
        reason: format!("{e:#}"),
    };
    let header = ResponseHeader::decode(&mut frame, api.response_header_version(version))
        .map_err(decode_error)?;
    if header.correlation_id != correlation_id {
        return Err(ClientError::Correlation {
            expected: correlation_id,
            got: header.correlation_id,
        });
    }
    ResponseKind::decode(api, &mut frame, version).map_err(decode_error)
}

/// Reads one frame (its size, then that many bytes) from `stream`. A size over `limit`
/// is refused before anything is allocated, and the buffer grows with the bytes that
/// arrive, not with the size the peer claims.
pub fn read_frame(stream: &mut impl Read, limit: usize) -> Result<Bytes, ClientError> {
    let mut size = [0u8; 4];
    stream.read_exact(&mut size)?;
    let size = i32::from_be_bytes(size);
    let size = usize::try_from(size)
        .ok()
        .filter(|s| *s <= limit)
        .ok_or(ClientError::FrameSize { size, limit })?;
    let mut body = Vec::new();
    stream.take(size as u64).read_to_end(&mut body)?;
    if body.len() != size {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the broker closed the connection mid-response",
        )
        .into());
    }
    Ok(Bytes::from(body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{MetadataRequest, MetadataResponse};

    #[test]
    fn request_frames_carry_size_header_and_body() {
        let request = RequestKind::Metadata(MetadataRequest::default());
        let frame = frame_request(&request, ApiKey::Metadata, 1, 7, Some("c")).unwrap();
        let size = i32::from_be_bytes(frame[..4].try_into().unwrap());
        assert_eq!(size as usize, frame.len() - 4);
        // api key 3, version 1, correlation 7, client id "c", topics: empty array.
        assert_eq!(
            &frame[4..],
            &[0, 3, 0, 1, 0, 0, 0, 7, 0, 1, b'c', 0, 0, 0, 0]
        );
    }

    #[test]
    fn responses_check_the_correlation_id() {
        let mut body = BytesMut::new();
        body.put_i32(9);
        MetadataResponse::default().encode(&mut body, 1).unwrap();
        let frame = body.freeze();
        assert!(matches!(
            parse_response(frame.clone(), ApiKey::Metadata, 1, 9),
            Ok(ResponseKind::Metadata(_))
        ));
        assert!(matches!(
            parse_response(frame, ApiKey::Metadata, 1, 8),
            Err(ClientError::Correlation {
                expected: 8,
                got: 9
            })
        ));
        assert!(parse_response(Bytes::from_static(&[0, 0]), ApiKey::Metadata, 1, 9).is_err());
    }

    #[test]
    fn flexible_versions_use_request_header_v2() {
        let request = RequestKind::Metadata(MetadataRequest::default());
        let frame = frame_request(&request, ApiKey::Metadata, 9, 7, Some("c")).unwrap();
        // Header v2 ends with an empty tagged-field section after the client id.
        assert_eq!(&frame[4..15], &[0, 3, 0, 9, 0, 0, 0, 7, 0, 1, b'c']);
        assert_eq!(frame[15], 0);
    }

    #[test]
    fn frame_sizes_are_checked_before_reading() {
        // A claimed 2 GiB frame is refused without allocating it.
        let mut huge: &[u8] = &[0x7f, 0xff, 0xff, 0xff, 1, 2, 3];
        assert!(matches!(
            read_frame(&mut huge, 1024),
            Err(ClientError::FrameSize { limit: 1024, .. })
        ));
        let mut negative: &[u8] = &[0xff, 0xff, 0xff, 0xff];
        assert!(matches!(
            read_frame(&mut negative, 1024),
            Err(ClientError::FrameSize { size: -1, .. })
        ));
        let mut cut: &[u8] = &[0, 0, 0, 5, 1, 2];
        assert!(matches!(
            read_frame(&mut cut, 1024),
            Err(ClientError::Io(_))
        ));
        let mut whole: &[u8] = &[0, 0, 0, 2, 1, 2, 9];
        assert_eq!(&read_frame(&mut whole, 1024).unwrap()[..], &[1, 2]);
    }
}
