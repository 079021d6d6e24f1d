//! The one way the foreign-container parsers (GGUF, pickle) read bytes: a cursor
//! over a byte slice that checks every length against the bytes left before it
//! takes them, so a hostile file ends in an error, never a panic. Each parser
//! words the error in its own terms from the [`Short`] read.

/// A read past the end: `needed` bytes at byte `at` of an input of `len` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Short {
    pub at: usize,
    pub needed: usize,
    pub len: usize,
}

/// A little-endian cursor over `bytes`.
#[derive(Debug, Clone)]
pub(crate) struct Bounded<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Bounded<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Bounded { bytes, pos: 0 }
    }

    /// Bytes read so far.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// The bytes not read yet, without reading them.
    pub fn rest(&self) -> &'a [u8] {
        &self.bytes[self.pos..]
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Short> {
        match self.pos.checked_add(n) {
            Some(end) if end <= self.bytes.len() => {
                let s = &self.bytes[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            _ => Err(Short {
                at: self.pos,
                needed: n,
                len: self.bytes.len(),
            }),
        }
    }

    /// The next `N` bytes as an array.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], Short> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    pub fn u8(&mut self) -> Result<u8, Short> {
        Ok(self.take(1)?[0])
    }

    pub fn u16(&mut self) -> Result<u16, Short> {
        self.array().map(u16::from_le_bytes)
    }

    pub fn u32(&mut self) -> Result<u32, Short> {
        self.array().map(u32::from_le_bytes)
    }

    pub fn u64(&mut self) -> Result<u64, Short> {
        self.array().map(u64::from_le_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_little_endian_and_stops_at_the_end() {
        let mut r = Bounded::new(&[1, 2, 0, 3, 0, 0, 0, 9]);
        assert_eq!(r.u8(), Ok(1));
        assert_eq!(r.u16(), Ok(2));
        assert_eq!(r.u32(), Ok(3));
        assert_eq!((r.pos(), r.remaining()), (7, 1));
        assert_eq!(
            r.u64(),
            Err(Short {
                at: 7,
                needed: 8,
                len: 8
            })
        );
        assert_eq!(r.pos(), 7, "a short read takes nothing");
        assert_eq!(r.take(usize::MAX).unwrap_err().needed, usize::MAX);
        assert_eq!(r.rest(), &[9]);
    }
}
