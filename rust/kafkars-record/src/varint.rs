//! Zigzag varints as Kafka writes them (`ByteUtils.writeVarint` / `writeVarlong`).
//!
//! Readers take a buffer and a cursor and never read past the buffer's end.

use crate::error::RecordError;

/// Longest encoding of a 32-bit varint.
const MAX_VARINT_BYTES: usize = 5;
/// Longest encoding of a 64-bit varlong.
const MAX_VARLONG_BYTES: usize = 10;

/// Reads a zigzag varint at `*pos`, advancing `*pos` past it.
///
/// Like Kafka, an encoding longer than 5 bytes is an error; high bits of the fifth
/// byte that do not fit in 32 bits are dropped.
#[inline]
pub(crate) fn read_varint(buf: &[u8], pos: &mut usize) -> Result<i32, RecordError> {
    let raw = read_unsigned(buf, pos, MAX_VARINT_BYTES, "varint")?;
    let raw = raw as u32;
    Ok(((raw >> 1) as i32) ^ -((raw & 1) as i32))
}

/// Reads a zigzag varlong at `*pos`, advancing `*pos` past it (at most 10 bytes).
#[inline]
pub(crate) fn read_varlong(buf: &[u8], pos: &mut usize) -> Result<i64, RecordError> {
    let raw = read_unsigned(buf, pos, MAX_VARLONG_BYTES, "varlong")?;
    Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64))
}

#[inline]
fn read_unsigned(
    buf: &[u8],
    pos: &mut usize,
    max_bytes: usize,
    what: &str,
) -> Result<u64, RecordError> {
    let mut value: u64 = 0;
    for i in 0..max_bytes {
        let Some(&byte) = buf.get(*pos + i) else {
            return Err(RecordError::corrupt(format!(
                "{what} runs past the end of the record"
            )));
        };
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            *pos += i + 1;
            return Ok(value);
        }
    }
    Err(RecordError::corrupt(format!(
        "{what} is longer than {max_bytes} bytes"
    )))
}

/// Appends `value` as a zigzag varint.
#[inline]
pub(crate) fn put_varint(out: &mut Vec<u8>, value: i32) {
    put_unsigned(out, ((value << 1) ^ (value >> 31)) as u32 as u64);
}

/// Appends `value` as a zigzag varlong.
#[inline]
pub(crate) fn put_varlong(out: &mut Vec<u8>, value: i64) {
    put_unsigned(out, ((value << 1) ^ (value >> 63)) as u64);
}

#[inline]
fn put_unsigned(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Bytes `value` takes as a zigzag varint.
#[inline]
pub(crate) fn varint_size(value: i32) -> usize {
    unsigned_size(((value << 1) ^ (value >> 31)) as u32 as u64)
}

/// Bytes `value` takes as a zigzag varlong.
#[inline]
pub(crate) fn varlong_size(value: i64) -> usize {
    unsigned_size(((value << 1) ^ (value >> 63)) as u64)
}

#[inline]
fn unsigned_size(value: u64) -> usize {
    // One byte per started group of 7 bits, and at least one byte.
    let bits = 64 - (value | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_encodings() {
        // Zigzag: 0 → 0, -1 → 1, 1 → 2, -2 → 3, ...
        let cases: [(i32, &[u8]); 6] = [
            (0, &[0x00]),
            (-1, &[0x01]),
            (1, &[0x02]),
            (63, &[0x7e]),
            (64, &[0x80, 0x01]),
            (i32::MIN, &[0xff, 0xff, 0xff, 0xff, 0x0f]),
        ];
        for (value, bytes) in cases {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(out, bytes, "{value}");
            assert_eq!(varint_size(value), bytes.len());
            let mut pos = 0;
            assert_eq!(read_varint(bytes, &mut pos).unwrap(), value);
            assert_eq!(pos, bytes.len());
        }
    }

    #[test]
    fn rejects_overlong_and_truncated() {
        let mut pos = 0;
        assert!(read_varint(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00], &mut pos).is_err());
        let mut pos = 0;
        assert!(read_varlong(&[0x80; 11], &mut pos).is_err());
        let mut pos = 0;
        assert!(read_varint(&[0x80, 0x80], &mut pos).is_err());
        let mut pos = 0;
        assert!(read_varint(&[], &mut pos).is_err());
        assert_eq!(pos, 0);
    }

    proptest! {
        #[test]
        fn varint_round_trip(value: i32) {
            let mut out = vec![0xaa];
            put_varint(&mut out, value);
            prop_assert_eq!(out.len() - 1, varint_size(value));
            let mut pos = 1;
            prop_assert_eq!(read_varint(&out, &mut pos).unwrap(), value);
            prop_assert_eq!(pos, out.len());
        }

        #[test]
        fn varlong_round_trip(value: i64) {
            let mut out = Vec::new();
            put_varlong(&mut out, value);
            prop_assert_eq!(out.len(), varlong_size(value));
            let mut pos = 0;
            prop_assert_eq!(read_varlong(&out, &mut pos).unwrap(), value);
            prop_assert_eq!(pos, out.len());
        }

        #[test]
        fn varint_never_panics(bytes: Vec<u8>) {
            let mut pos = 0;
            let _ = read_varint(&bytes, &mut pos);
            prop_assert!(pos <= bytes.len());
            let mut pos = 0;
            let _ = read_varlong(&bytes, &mut pos);
            prop_assert!(pos <= bytes.len());
        }
    }
}
