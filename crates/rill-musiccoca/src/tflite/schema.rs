//! The part of TFLite's flatbuffer schema (`tensorflow/lite/schema/schema.fbs`) that
//! rill reads, as accessor types over the `flatbuffers` crate, and the walk that copies
//! a verified file's tables into the owned structs of [`super`].
//!
//! Every table type is declared once by `fb_table!`, which generates both its
//! verifier and its accessors from the same field list, so a field is always read
//! with exactly the type the verifier checked it as. Table values are only ever
//! reached from the root that [`parse`] got through `flatbuffers::root_with_opts`
//! (the verifier); the types are private to this module.

use std::ops::Range;

use flatbuffers::{
    ForwardsUOffset, InvalidFlatbuffer, Table, Vector, Verifiable, Verifier, VerifierOptions,
};

use super::{BufferData, Operator, OperatorCode, Subgraph, TensorInfo};

macro_rules! fb_table {
    ($name:ident { $($field:ident : $ty:ty = $slot:expr),* $(,)? }) => {
        #[derive(Clone, Copy)]
        struct $name<'a> {
            tab: Table<'a>,
        }

        impl<'a> flatbuffers::Follow<'a> for $name<'a> {
            type Inner = $name<'a>;
            unsafe fn follow(buf: &'a [u8], loc: usize) -> Self::Inner {
                // SAFETY: `follow`'s own contract: the caller guarantees a table at `loc`
                // (the flatbuffers crate calls this only on verified positions here).
                $name { tab: unsafe { Table::new(buf, loc) } }
            }
        }

        impl<'a> Verifiable for $name<'a> {
            fn run_verifier(v: &mut Verifier, pos: usize) -> Result<(), InvalidFlatbuffer> {
                v.visit_table(pos)?
                    $(.visit_field::<$ty>(stringify!($field), $slot, false)?)*
                    .finish();
                Ok(())
            }
        }

        impl<'a> $name<'a> {
            $(
                fn $field(&self) -> Option<<$ty as flatbuffers::Follow<'a>>::Inner> {
                    // SAFETY: a table of this type exists only inside a buffer that
                    // passed `run_verifier` above, which visited this slot as `$ty`,
                    // the very type read here (both come from one macro field list).
                    unsafe { self.tab.get::<$ty>($slot, None) }
                }
            )*
        }
    };
}

type Str<'a> = ForwardsUOffset<&'a str>;
type Ints<'a> = ForwardsUOffset<Vector<'a, i32>>;
type Tables<'a, T> = ForwardsUOffset<Vector<'a, ForwardsUOffset<T>>>;

fb_table!(FbModel {
    version: u32 = 4,
    operator_codes: Tables<'a, FbOperatorCode<'a>> = 6,
    subgraphs: Tables<'a, FbSubGraph<'a>> = 8,
    description: Str<'a> = 10,
    buffers: Tables<'a, FbBuffer<'a>> = 12,
});

fb_table!(FbSubGraph {
    tensors: Tables<'a, FbTensor<'a>> = 4,
    inputs: Ints<'a> = 6,
    outputs: Ints<'a> = 8,
    operators: Tables<'a, FbOperator<'a>> = 10,
    name: Str<'a> = 12,
});

fb_table!(FbTensor {
    shape: Ints<'a> = 4,
    dtype: i8 = 6,
    buffer: u32 = 8,
    name: Str<'a> = 10,
});

fb_table!(FbBuffer {
    data: ForwardsUOffset<Vector<'a, u8>> = 4,
    offset: u64 = 6,
    size: u64 = 8,
});

fb_table!(FbOperatorCode {
    deprecated_builtin_code: i8 = 4,
    custom_code: Str<'a> = 6,
    version: i32 = 8,
    builtin_code: i32 = 10,
});

fb_table!(FbOperator {
    opcode_index: u32 = 4,
    inputs: Ints<'a> = 6,
    outputs: Ints<'a> = 8,
});

/// The tables of one file, copied out of the flatbuffer.
pub(super) struct Parsed {
    pub version: u32,
    pub description: Option<String>,
    pub operator_codes: Vec<OperatorCode>,
    pub subgraphs: Vec<Subgraph>,
    pub buffers: Vec<BufferData>,
}

fn ints(v: Option<Vector<'_, i32>>) -> Vec<i32> {
    v.map(|v| v.iter().collect()).unwrap_or_default()
}

/// Verifies `bytes` as a TFLite model and copies its tables out.
///
/// The verifier bounds every offset, vector and string by the bytes present, so
/// nothing here allocates more than a small multiple of the input: the apparent
/// size (the object DAG expanded into a tree) may be at most twice the input plus
/// 1 MiB, which a file of distinct tables never comes near.
pub(super) fn parse(bytes: &[u8]) -> Result<Parsed, String> {
    let opts = VerifierOptions {
        max_apparent_size: bytes
            .len()
            .saturating_mul(2)
            .saturating_add(1 << 20)
            .min(usize::MAX / 2),
        ..VerifierOptions::default()
    };
    let model = flatbuffers::root_with_opts::<FbModel>(&opts, bytes)
        .map_err(|e| format!("not a valid TFLite flatbuffer: {e}"))?;
    let base = bytes.as_ptr() as usize;
    let operator_codes = model
        .operator_codes()
        .map(|v| {
            v.iter()
                .map(|c| OperatorCode {
                    deprecated_builtin_code: c.deprecated_builtin_code().unwrap_or(0),
                    custom_code: c.custom_code().map(str::to_string),
                    version: c.version().unwrap_or(1),
                    builtin_code: c.builtin_code().unwrap_or(0),
                })
                .collect()
        })
        .unwrap_or_default();
    let buffers = model
        .buffers()
        .map(|v| {
            v.iter()
                .map(|b| {
                    let inline = b.data().map(|d| {
                        let s = d.bytes();
                        let start = s.as_ptr() as usize - base;
                        Range {
                            start,
                            end: start + s.len(),
                        }
                    });
                    BufferData {
                        inline,
                        offset: b.offset().unwrap_or(0),
                        size: b.size().unwrap_or(0),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let subgraphs = model
        .subgraphs()
        .map(|v| {
            v.iter()
                .map(|sg| Subgraph {
                    name: sg.name().unwrap_or_default().to_string(),
                    tensors: sg
                        .tensors()
                        .map(|ts| {
                            ts.iter()
                                .map(|t| TensorInfo {
                                    name: t.name().unwrap_or_default().to_string(),
                                    shape: ints(t.shape()),
                                    dtype: t.dtype().unwrap_or(0),
                                    buffer: t.buffer().unwrap_or(0),
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                    inputs: ints(sg.inputs()),
                    outputs: ints(sg.outputs()),
                    operators: sg
                        .operators()
                        .map(|ops| {
                            ops.iter()
                                .map(|op| Operator {
                                    opcode_index: op.opcode_index().unwrap_or(0),
                                    inputs: ints(op.inputs()),
                                    outputs: ints(op.outputs()),
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Parsed {
        version: model.version().unwrap_or(0),
        description: model.description().map(str::to_string),
        operator_codes,
        subgraphs,
        buffers,
    })
}
