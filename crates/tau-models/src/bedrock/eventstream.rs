//! The `application/vnd.amazon.eventstream` framing Bedrock streams in.
//!
//! A frame: total length (u32), headers length (u32), CRC32 of those 8 bytes, headers,
//! payload, CRC32 of everything before it. Lengths and checksums are checked before any
//! byte is trusted; a broken frame is an error, never a panic.

/// Frames larger than this are refused rather than buffered.
const MAX_FRAME: usize = 16 * 1024 * 1024;
const PRELUDE: usize = 12;
const MIN_FRAME: usize = PRELUDE + 4;

/// One decoded frame: its string headers and its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Frame {
    pub headers: Vec<(String, String)>,
    pub payload: Vec<u8>,
}

impl Frame {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FrameError {
    #[error("event-stream frame length {0} is out of range")]
    Length(usize),
    #[error("event-stream frame checksum mismatch")]
    Checksum,
    #[error("event-stream frame headers are malformed")]
    Headers,
}

/// Buffers bytes until whole frames can be read.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    buffer: Vec<u8>,
}

impl Decoder {
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// True when bytes of an unfinished frame are waiting.
    pub(crate) fn has_partial(&self) -> bool {
        !self.buffer.is_empty()
    }

    /// The next whole frame, if the buffer holds one.
    pub(crate) fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
        let Some(total) = read_u32(&self.buffer, 0) else {
            return Ok(None);
        };
        if !(MIN_FRAME..=MAX_FRAME).contains(&total) {
            return Err(FrameError::Length(total));
        }
        let Some(prelude) = self.buffer.get(..PRELUDE) else {
            return Ok(None);
        };
        let (lengths, prelude_crc) = prelude.split_at(8);
        if Some(crc32fast::hash(lengths)) != be_u32(prelude_crc, 0) {
            return Err(FrameError::Checksum);
        }
        let Some(frame) = self.buffer.get(..total) else {
            return Ok(None);
        };
        let (body, message_crc) = frame.split_at(total - 4);
        if Some(crc32fast::hash(body)) != be_u32(message_crc, 0) {
            return Err(FrameError::Checksum);
        }
        let headers_len = read_u32(body, 4).ok_or(FrameError::Headers)?;
        let rest = body.get(PRELUDE..).ok_or(FrameError::Headers)?;
        if headers_len > rest.len() {
            return Err(FrameError::Length(headers_len));
        }
        let (headers, payload) = rest.split_at(headers_len);
        let frame = Frame {
            headers: parse_headers(headers)?,
            payload: payload.to_vec(),
        };
        self.buffer.drain(..total);
        Ok(Some(frame))
    }
}

fn be_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let raw: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(u32::from_be_bytes(raw))
}

fn read_u32(bytes: &[u8], at: usize) -> Option<usize> {
    be_u32(bytes, at).and_then(|v| usize::try_from(v).ok())
}

/// Keeps string headers (the only kind Bedrock's `:event-type` and friends use); other
/// value types are skipped by their fixed or stated length.
fn parse_headers(mut bytes: &[u8]) -> Result<Vec<(String, String)>, FrameError> {
    let mut headers = Vec::new();
    while let Some((&name_len, rest)) = bytes.split_first() {
        let name = take(rest, name_len.into())?;
        let rest = rest.get(name.len()..).ok_or(FrameError::Headers)?;
        let (&kind, rest) = rest.split_first().ok_or(FrameError::Headers)?;
        let value_len = match kind {
            0 | 1 => 0,
            2 => 1,
            3 => 2,
            4 => 4,
            5 | 8 => 8,
            9 => 16,
            6 | 7 => {
                let raw: [u8; 2] = take(rest, 2)?.try_into().map_err(|_| FrameError::Headers)?;
                2 + usize::from(u16::from_be_bytes(raw))
            }
            _ => return Err(FrameError::Headers),
        };
        let value = take(rest, value_len)?;
        if kind == 7 {
            let name = String::from_utf8(name.to_vec()).map_err(|_| FrameError::Headers)?;
            let text = value.get(2..).ok_or(FrameError::Headers)?;
            let text = String::from_utf8(text.to_vec()).map_err(|_| FrameError::Headers)?;
            headers.push((name, text));
        }
        bytes = rest.get(value_len..).ok_or(FrameError::Headers)?;
    }
    Ok(headers)
}

fn take(bytes: &[u8], len: usize) -> Result<&[u8], FrameError> {
    bytes.get(..len).ok_or(FrameError::Headers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Writes one frame with string headers.
    pub(crate) fn encode_frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
        let mut header_bytes = Vec::new();
        for (name, value) in headers {
            header_bytes.push(u8::try_from(name.len()).unwrap_or(u8::MAX));
            header_bytes.extend_from_slice(name.as_bytes());
            header_bytes.push(7);
            let len = u16::try_from(value.len()).unwrap_or(u16::MAX);
            header_bytes.extend_from_slice(&len.to_be_bytes());
            header_bytes.extend_from_slice(value.as_bytes());
        }
        let total = PRELUDE + header_bytes.len() + payload.len() + 4;
        let mut frame = Vec::with_capacity(total);
        frame.extend_from_slice(&u32::try_from(total).unwrap_or(u32::MAX).to_be_bytes());
        frame.extend_from_slice(
            &u32::try_from(header_bytes.len())
                .unwrap_or(u32::MAX)
                .to_be_bytes(),
        );
        let prelude_crc = crc32fast::hash(&frame);
        frame.extend_from_slice(&prelude_crc.to_be_bytes());
        frame.extend_from_slice(&header_bytes);
        frame.extend_from_slice(payload);
        let message_crc = crc32fast::hash(&frame);
        frame.extend_from_slice(&message_crc.to_be_bytes());
        frame
    }

    fn event(kind: &str, payload: &str) -> Vec<u8> {
        encode_frame(
            &[(":message-type", "event"), (":event-type", kind)],
            payload.as_bytes(),
        )
    }

    #[test]
    fn frames_split_anywhere_decode_whole() {
        let mut bytes = event("messageStart", r#"{"role":"assistant"}"#);
        bytes.extend(event("messageStop", r#"{"stopReason":"end_turn"}"#));
        for cut in 0..bytes.len() {
            let mut decoder = Decoder::default();
            let mut frames = Vec::new();
            for part in [&bytes[..cut], &bytes[cut..]] {
                decoder.push(part);
                while let Some(frame) = decoder.next_frame().unwrap() {
                    frames.push(frame);
                }
            }
            assert!(!decoder.has_partial());
            assert_eq!(
                frames
                    .iter()
                    .map(|f| (
                        f.header(":event-type").unwrap().to_owned(),
                        f.payload.clone()
                    ))
                    .collect::<Vec<_>>(),
                vec![
                    (
                        "messageStart".to_owned(),
                        br#"{"role":"assistant"}"#.to_vec()
                    ),
                    (
                        "messageStop".to_owned(),
                        br#"{"stopReason":"end_turn"}"#.to_vec()
                    ),
                ],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn corrupt_frames_are_errors() {
        let good = event("messageStart", "{}");
        let mut flipped = good.clone();
        let last = flipped.len() - 5;
        flipped[last] ^= 0xff;
        let mut decoder = Decoder::default();
        decoder.push(&flipped);
        assert_eq!(decoder.next_frame(), Err(FrameError::Checksum));

        let mut decoder = Decoder::default();
        decoder.push(&[0, 0, 0, 3, 0, 0, 0, 0]);
        assert_eq!(decoder.next_frame(), Err(FrameError::Length(3)));

        let mut decoder = Decoder::default();
        decoder.push(&[0xff; 12]);
        assert!(decoder.next_frame().is_err());
    }

    #[test]
    fn garbage_never_panics() {
        // A simple generator: every length prefix and byte pattern the loop reaches.
        for seed in 0u32..2000 {
            let mut bytes = Vec::new();
            let mut x = seed.wrapping_mul(2_654_435_761);
            for _ in 0..64 {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                bytes.push((x & 0xff) as u8);
            }
            let mut decoder = Decoder::default();
            decoder.push(&bytes);
            let _ = decoder.next_frame();
        }
        // Valid lengths and CRCs around broken headers.
        let frame = encode_frame(&[("x", "y")], b"");
        let mut decoder = Decoder::default();
        let mut broken = frame.clone();
        broken[12] = 200; // a header name longer than the headers
        let crc_at = broken.len() - 4;
        let crc = crc32fast::hash(&broken[..crc_at]);
        broken[crc_at..].copy_from_slice(&crc.to_be_bytes());
        decoder.push(&broken);
        assert_eq!(decoder.next_frame(), Err(FrameError::Headers));
    }
}
