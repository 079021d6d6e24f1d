//! Serialising a [`Snapshot`] for a [`crate::State`]'s bytes.

use rill_codec::Codec;
use rill_mrt2::Mrt2;
use rill_stream::Snapshot;

use crate::error::{Error, Result};

pub fn encode(_snapshot: &Snapshot, _lm: &Mrt2) -> Vec<u8> {
    Vec::new()
}

pub fn decode(_bytes: &[u8], _lm: &Mrt2, _codec: &Codec) -> Result<Snapshot> {
    Err(Error::Runtime(
        "state serialisation is not available yet".into(),
    ))
}
