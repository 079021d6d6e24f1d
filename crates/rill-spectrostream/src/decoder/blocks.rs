//! The decoder's architecture as tables: the upsampling blocks, where Winograd
//! pays, which layers take two-byte weights, and the profiling stage names.

use crate::config::{BlockSpec, BLOCK_COUNT, SPECTROSTREAM};

/// Freq bins at the decoder input (`480 / Π freq strides`).
pub(super) const INPUT_BINS: usize = SPECTROSTREAM.input_bins();
/// Channels per input bin (`64 · Π mults`).
pub(super) const INPUT_CHANNELS: usize = SPECTROSTREAM.input_channels();
/// STFT frames per codec frame (`Π time strides`).
pub(crate) const STFT_PER_FRAME: usize = SPECTROSTREAM.stft_per_frame();
/// ParallelChannels groups (stereo channels).
pub(super) const GROUPS: usize = SPECTROSTREAM.groups;

/// The upsampling blocks, derived from upstream's hyper-parameters (see
/// [`crate::config`]).
pub(super) const BLOCKS: [BlockSpec; BLOCK_COUNT] = SPECTROSTREAM.blocks();

/// Winograd output tile `[rows, bins]` of each block's 3×3 conv, `None` = direct.
/// The tile rows divide the block's rows per codec frame (4 from decoder_1 on).
/// decoder_0 (2 rows per frame, 5 bins, 1024 channels) is weight-bandwidth-bound in
/// step mode, where the 4×–2.7× larger transformed weights would cost more than the
/// products saved; decoder_1 (10 bins) gains most from `F(4×2)`.
pub(super) const WINOGRAD: [Option<[usize; 2]>; BLOCK_COUNT] = [
    None,
    Some([4, 2]),
    Some([4, 4]),
    Some([4, 4]),
    Some([4, 4]),
    Some([4, 4]),
    Some([4, 4]),
];

/// Winograd time tile of each block's transposed conv, `None` = direct: the blocks
/// with time stride 1 (3 time taps per phase, 4 rows per codec frame) use `F(4, 3)`.
pub(super) const WINOGRAD_T: [Option<usize>; BLOCK_COUNT] =
    [None, None, Some(4), Some(4), Some(4), Some(4), Some(4)];

/// Blocks whose weights [`crate::CodecPrecision::F16Weights`] rounds to f16 (besides
/// input_layer and the residual unit): decoder_0, and decoder_1 except its 3×3 conv.
pub(super) const F16_BLOCKS: usize = 2;

/// Profiling lap names of each block: transposed conv (with its input ELU), 3×3
/// conv, shortcut and history shift.
pub(super) const LAP_NAMES: [[&str; 3]; BLOCK_COUNT] = [
    ["decoder_0/convT", "decoder_0/conv3x3", "decoder_0/rest"],
    ["decoder_1/convT", "decoder_1/conv3x3", "decoder_1/rest"],
    ["decoder_2/convT", "decoder_2/conv3x3", "decoder_2/rest"],
    ["decoder_3/convT", "decoder_3/conv3x3", "decoder_3/rest"],
    ["decoder_4/convT", "decoder_4/conv3x3", "decoder_4/rest"],
    ["decoder_5/convT", "decoder_5/conv3x3", "decoder_5/rest"],
    ["decoder_6/convT", "decoder_6/conv3x3", "decoder_6/rest"],
];
