//! A 64-byte-aligned, zero-initialised f32 buffer: the activation and packed-weight
//! storage of the codecs' convolution kernels, so every channel run of 16·k floats
//! starts on a cache line.

use std::ops::{Deref, DerefMut};

const ALIGN: usize = 16;

/// Zero-initialised floats whose first element is 64-byte aligned.
pub struct AVec {
    buf: Vec<f32>,
    off: usize,
    len: usize,
}

impl AVec {
    pub fn zeros(len: usize) -> AVec {
        let buf = vec![0f32; len + ALIGN];
        let off = ((64 - buf.as_ptr() as usize % 64) % 64) / 4;
        AVec { buf, off, len }
    }

    pub fn from_slice(v: &[f32]) -> AVec {
        let mut a = AVec::zeros(v.len());
        a.copy_from_slice(v);
        a
    }
}

impl Deref for AVec {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        &self.buf[self.off..self.off + self.len]
    }
}

impl DerefMut for AVec {
    fn deref_mut(&mut self) -> &mut [f32] {
        &mut self.buf[self.off..self.off + self.len]
    }
}

impl Clone for AVec {
    fn clone(&self) -> AVec {
        // A fresh allocation may be aligned differently: recompute the offset.
        AVec::from_slice(self)
    }
}

impl PartialEq for AVec {
    fn eq(&self, other: &AVec) -> bool {
        **self == **other
    }
}

impl std::fmt::Debug for AVec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AVec({} floats)", self.len)
    }
}
