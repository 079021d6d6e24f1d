//! The few fields of sentencepiece's `ModelProto` (`sentencepiece_model.proto`, proto2)
//! that encoding reads, from the protobuf wire format.
//!
//! Hand-rolled rather than `prost`: three messages and a dozen fields, and proto2 rules
//! that `prost` does not follow and encoding depends on: an out-of-range value of a closed
//! enum leaves the field at its previous value (protobuf keeps it as an unknown field),
//! and a singular message field that occurs twice is merged field by field. A field with
//! an unexpected wire type is an unknown field, as in protobuf's C++ parser. Anything the
//! wire format forbids (truncated varint or length, wire type 6 or 7, field number 0,
//! unbalanced groups, groups nested past protobuf's recursion limit of 100) is an error.

/// `SentencePiece.Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PieceType {
    /// An ordinary piece (type 1, the default).
    Normal,
    /// The unknown piece (2).
    Unknown,
    /// A control symbol such as `</s>` (3): never produced by encoding.
    Control,
    /// A user-defined symbol (4): matched before normalisation, always preferred.
    UserDefined,
    /// Kept in the vocabulary but never produced (5).
    Unused,
    /// A byte piece `<0xXX>` (6), for byte fallback.
    Byte,
}

/// One vocabulary entry.
#[derive(Clone, Debug)]
pub struct Piece {
    pub piece: Vec<u8>,
    pub score: f32,
    pub kind: PieceType,
}

/// `TrainerSpec` fields that change encoding.
#[derive(Clone, Debug)]
pub struct TrainerSpec {
    /// `model_type`: 1 unigram (default), 2 BPE, 3 word, 4 char.
    pub model_type: i32,
    pub byte_fallback: bool,
    pub treat_whitespace_as_suffix: bool,
}

/// `NormalizerSpec` fields that change encoding.
#[derive(Clone, Debug)]
pub struct NormalizerSpec {
    pub precompiled_charsmap: Vec<u8>,
    pub add_dummy_prefix: bool,
    pub remove_extra_whitespaces: bool,
    pub escape_whitespaces: bool,
}

/// The parsed model.
#[derive(Clone, Debug)]
pub struct ModelProto {
    pub pieces: Vec<Piece>,
    pub trainer: TrainerSpec,
    pub normalizer: NormalizerSpec,
}

const MAX_DEPTH: usize = 100;

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

enum Value<'a> {
    Varint(u64),
    Fixed64,
    Bytes(&'a [u8]),
    Fixed32(u32),
    Group,
}

impl<'a> Reader<'a> {
    fn new(b: &'a [u8]) -> Self {
        Reader { b, i: 0 }
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for k in 0..10 {
            let Some(&byte) = self.b.get(self.i) else {
                return Err(format!("truncated varint at byte {}", self.i));
            };
            self.i += 1;
            v |= u64::from(byte & 0x7f) << (7 * k);
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(format!(
            "varint longer than 10 bytes before byte {}",
            self.i
        ))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .i
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| {
                format!(
                    "a field of {n} bytes at byte {} runs past the end ({} bytes)",
                    self.i,
                    self.b.len()
                )
            })?;
        let s = &self.b[self.i..end];
        self.i = end;
        Ok(s)
    }

    /// The next field, or `None` at the end (or at an end-group tag, returned as
    /// `Some((field, Group))` with the caller checking the nesting).
    fn field(&mut self) -> Result<Option<(u32, u8, Value<'a>)>, String> {
        if self.i == self.b.len() {
            return Ok(None);
        }
        let tag = self.varint()?;
        let field = tag >> 3;
        let wire = (tag & 7) as u8;
        if field == 0 || field > u64::from(u32::MAX >> 3) {
            return Err(format!("invalid field number {field}"));
        }
        let field = field as u32;
        let v = match wire {
            0 => Value::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Value::Fixed64
            }
            2 => {
                let n = self.varint()?;
                let n = usize::try_from(n).map_err(|_| format!("length {n} too large"))?;
                Value::Bytes(self.take(n)?)
            }
            3 | 4 => Value::Group,
            5 => {
                let s = self.take(4)?;
                Value::Fixed32(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
            }
            w => return Err(format!("invalid wire type {w} (field {field})")),
        };
        Ok(Some((field, wire, v)))
    }

    /// Skips a group whose start tag (field `field`) was just read.
    fn skip_group(&mut self, field: u32, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err("groups nested too deeply".into());
        }
        loop {
            match self.field()? {
                None => return Err(format!("group {field} is not closed")),
                Some((f, 4, _)) if f == field => return Ok(()),
                Some((f, 4, _)) => return Err(format!("group {field} closed by end tag {f}")),
                Some((f, 3, _)) => self.skip_group(f, depth + 1)?,
                Some(_) => {}
            }
        }
    }

    /// Calls `each` on every field of this message (groups skipped, unknown fields
    /// passed on for the caller to ignore).
    fn message(mut self, mut each: impl FnMut(u32, Value<'a>)) -> Result<(), String> {
        while let Some((field, wire, v)) = self.field()? {
            match wire {
                3 => self.skip_group(field, 1)?,
                4 => return Err(format!("end-group tag {field} without a start")),
                _ => each(field, v),
            }
        }
        Ok(())
    }
}

fn piece(b: &[u8]) -> Result<Piece, String> {
    let mut p = Piece {
        piece: Vec::new(),
        score: 0.0,
        kind: PieceType::Normal,
    };
    Reader::new(b).message(|field, v| match (field, v) {
        (1, Value::Bytes(s)) => p.piece = s.to_vec(),
        (2, Value::Fixed32(x)) => p.score = f32::from_bits(x),
        (3, Value::Varint(t)) => {
            p.kind = match t as i32 {
                1 => PieceType::Normal,
                2 => PieceType::Unknown,
                3 => PieceType::Control,
                4 => PieceType::UserDefined,
                5 => PieceType::Unused,
                6 => PieceType::Byte,
                _ => p.kind,
            }
        }
        _ => {}
    })?;
    Ok(p)
}

/// Parses a serialized `ModelProto`.
pub fn parse(bytes: &[u8]) -> Result<ModelProto, String> {
    let mut pieces = Vec::new();
    let mut trainer = TrainerSpec {
        model_type: 1,
        byte_fallback: false,
        treat_whitespace_as_suffix: false,
    };
    let mut normalizer = NormalizerSpec {
        precompiled_charsmap: Vec::new(),
        add_dummy_prefix: true,
        remove_extra_whitespaces: true,
        escape_whitespaces: true,
    };
    let mut err = None;
    Reader::new(bytes).message(|field, v| {
        let Value::Bytes(b) = v else { return };
        let r = match field {
            1 => piece(b).map(|p| pieces.push(p)),
            2 => Reader::new(b).message(|f, v| match (f, v) {
                (3, Value::Varint(t)) if (1..=4).contains(&(t as i32)) => {
                    trainer.model_type = t as i32
                }
                (24, Value::Varint(x)) => trainer.treat_whitespace_as_suffix = x != 0,
                (35, Value::Varint(x)) => trainer.byte_fallback = x != 0,
                _ => {}
            }),
            3 => Reader::new(b).message(|f, v| match (f, v) {
                (2, Value::Bytes(s)) => normalizer.precompiled_charsmap = s.to_vec(),
                (3, Value::Varint(x)) => normalizer.add_dummy_prefix = x != 0,
                (4, Value::Varint(x)) => normalizer.remove_extra_whitespaces = x != 0,
                (5, Value::Varint(x)) => normalizer.escape_whitespaces = x != 0,
                _ => {}
            }),
            // Unknown fields and the others (self-test data, denormalizer) are skipped,
            // but must still be well-formed messages where protobuf parses them.
            4 => {
                let mut inner = Ok(());
                Reader::new(b)
                    .message(|f, v| {
                        if let (1, Value::Bytes(s)) = (f, v) {
                            if let Err(e) = Reader::new(s).message(|_, _| {}) {
                                inner = Err(e);
                            }
                        }
                    })
                    .and(inner)
            }
            5 => Reader::new(b).message(|_, _| {}),
            _ => Ok(()),
        };
        if let Err(e) = r {
            err.get_or_insert(e);
        }
    })?;
    if let Some(e) = err {
        return Err(e);
    }
    Ok(ModelProto {
        pieces,
        trainer,
        normalizer,
    })
}
