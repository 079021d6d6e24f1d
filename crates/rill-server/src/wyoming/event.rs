//! Wyoming event framing: a JSON header line `{"type": "…", "data": {…},
//! "data_length": N, "payload_length": M}\n`, then `N` bytes of JSON data (merged
//! over the header's `data`) and `M` bytes of payload. Every length is bounded
//! before anything is read or allocated; whatever does not parse is an error with
//! the reason, never a panic.

use serde_json::{Map, Value};

/// Longest header line, newline included.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;
/// Largest `data_length`.
pub const MAX_DATA_BYTES: usize = 64 * 1024;
/// Largest `payload_length` (a text-to-speech server is sent no audio; other
/// programs' events with a payload still parse, up to this size).
pub const MAX_PAYLOAD_BYTES: usize = 1024 * 1024;
/// The Wyoming protocol version this server writes in its headers.
pub const PROTOCOL_VERSION: &str = "1.8.0";

/// One event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// `describe`, `synthesize`, `audio-chunk`, ….
    pub kind: String,
    /// The header's `data` with the data bytes merged over it.
    pub data: Map<String, Value>,
    /// The payload (audio), empty when there is none.
    pub payload: Vec<u8>,
}

impl Event {
    /// An event without payload.
    pub fn new(kind: &str, data: Value) -> Event {
        let data = match data {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        Event {
            kind: kind.to_string(),
            data,
            payload: Vec::new(),
        }
    }

    /// An `error` event (`{"text", "code"}`).
    pub fn error(code: &str, text: impl Into<String>) -> Event {
        Event::new(
            "error",
            serde_json::json!({"text": text.into(), "code": code}),
        )
    }

    /// The bytes on the wire: header line, data JSON (when not empty), payload.
    pub fn encode(&self) -> Vec<u8> {
        let data = if self.data.is_empty() {
            Vec::new()
        } else {
            // A map of JSON values always serialises.
            serde_json::to_vec(&self.data).unwrap_or_default()
        };
        let mut header = Map::new();
        header.insert("type".into(), Value::from(self.kind.as_str()));
        header.insert("version".into(), Value::from(PROTOCOL_VERSION));
        if !data.is_empty() {
            header.insert("data_length".into(), Value::from(data.len()));
        }
        if !self.payload.is_empty() {
            header.insert("payload_length".into(), Value::from(self.payload.len()));
        }
        let mut out = serde_json::to_vec(&Value::Object(header)).unwrap_or_default();
        out.push(b'\n');
        out.extend_from_slice(&data);
        out.extend_from_slice(&self.payload);
        out
    }
}

/// A parsed header line.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub kind: String,
    pub data: Map<String, Value>,
    pub data_length: usize,
    pub payload_length: usize,
}

/// A length field: absent or null is 0; otherwise a non-negative integer up to `max`.
fn length(header: &Map<String, Value>, key: &str, max: usize) -> Result<usize, String> {
    let n = match header.get(key) {
        None | Some(Value::Null) => return Ok(0),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| format!("{key} {v} is not a byte count"))?,
    };
    match usize::try_from(n) {
        Ok(n) if n <= max => Ok(n),
        _ => Err(format!("{key} {n} is over the limit of {max} bytes")),
    }
}

/// Parses a header line (without or with its newline).
pub fn parse_header(line: &[u8]) -> Result<Header, String> {
    if line.len() > MAX_HEADER_BYTES {
        return Err(format!(
            "the header line is {} bytes; at most {MAX_HEADER_BYTES}",
            line.len()
        ));
    }
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let v: Value = serde_json::from_slice(line)
        .map_err(|e| format!("the header line is not a JSON object: {e}"))?;
    let Value::Object(mut header) = v else {
        return Err("the header line is not a JSON object".into());
    };
    let kind = match header.get("type") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err("the header has no \"type\" string".into()),
    };
    let data = match header.remove("data") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => return Err("the header's \"data\" is not a JSON object".into()),
    };
    Ok(Header {
        kind,
        data,
        data_length: length(&header, "data_length", MAX_DATA_BYTES)?,
        payload_length: length(&header, "payload_length", MAX_PAYLOAD_BYTES)?,
    })
}

/// Reads one event from the start of `bytes`: the event and the bytes it took,
/// `Ok(None)` when `bytes` holds only the beginning of one (read more and call
/// again), or what is wrong with it (the connection cannot continue after that).
pub fn read_event(bytes: &[u8]) -> Result<Option<(Event, usize)>, String> {
    let window = &bytes[..bytes.len().min(MAX_HEADER_BYTES)];
    let Some(newline) = window.iter().position(|&b| b == b'\n') else {
        if bytes.len() >= MAX_HEADER_BYTES {
            return Err(format!(
                "no header line ends within {MAX_HEADER_BYTES} bytes"
            ));
        }
        return Ok(None);
    };
    let header = parse_header(&bytes[..=newline])?;
    let data_start = newline + 1;
    let payload_start = data_start + header.data_length;
    let end = payload_start + header.payload_length;
    if bytes.len() < end {
        return Ok(None);
    }
    let mut data = header.data;
    if header.data_length > 0 {
        let extra: Value = serde_json::from_slice(&bytes[data_start..payload_start])
            .map_err(|e| format!("the event's data is not JSON: {e}"))?;
        let Value::Object(extra) = extra else {
            return Err("the event's data is not a JSON object".into());
        };
        data.extend(extra);
    }
    let event = Event {
        kind: header.kind,
        data,
        payload: bytes[payload_start..end].to_vec(),
    };
    Ok(Some((event, end)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_split_reads() {
        let mut e = Event::new(
            "audio-chunk",
            serde_json::json!({"rate": 22050, "width": 2}),
        );
        e.payload = vec![1, 2, 3, 4];
        let wire = e.encode();
        for cut in 0..wire.len() {
            assert_eq!(read_event(&wire[..cut]), Ok(None), "cut at {cut}");
        }
        let mut two = wire.clone();
        two.extend_from_slice(b"{\"type\":\"describe\"}\n");
        let (back, used) = read_event(&two).unwrap().unwrap();
        assert_eq!((back, used), (e, wire.len()));
        let (d, _) = read_event(&two[used..]).unwrap().unwrap();
        assert_eq!(d.kind, "describe");
        assert!(d.data.is_empty() && d.payload.is_empty());
    }

    #[test]
    fn header_data_and_data_bytes_merge() {
        let wire = b"{\"type\":\"synthesize\",\"data\":{\"text\":\"a\",\"x\":1},\"data_length\":12}\n{\"text\":\"b\"}";
        let (e, _) = read_event(wire).unwrap().unwrap();
        assert_eq!(e.data["text"], "b");
        assert_eq!(e.data["x"], 1);
    }

    #[test]
    fn garbage_is_an_error() {
        for bad in [
            &b"hello\n"[..],
            b"[1,2]\n",
            b"{\"data\":{}}\n",
            b"{\"type\":3}\n",
            b"{\"type\":\"x\",\"data\":[1]}\n",
            b"{\"type\":\"x\",\"data_length\":-1}\n",
            b"{\"type\":\"x\",\"data_length\":1e3}\n",
            b"{\"type\":\"x\",\"payload_length\":99999999999999999999}\n",
            b"{\"type\":\"x\",\"data_length\":3}\n[1]",
            b"{\"type\":\"x\",\"data_length\":2}\n\xff\xfe",
            b"\xff\xfe\n",
        ] {
            assert!(read_event(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        let long = vec![b' '; MAX_HEADER_BYTES];
        assert!(read_event(&long).is_err());
        assert_eq!(read_event(&long[..MAX_HEADER_BYTES - 1]), Ok(None));
    }
}
