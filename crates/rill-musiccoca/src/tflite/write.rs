//! A writer of TFLite model files: subgraphs of named tensors (constants with their
//! data, or activations without) and operators, enough for rill's synthetic assets,
//! tests and fuzz seeds. It writes what [`super::TfliteModel`] reads; it does not write
//! operator options, quantisation parameters or signatures, so its files are not
//! runnable by TFLite.
//!
//! Constant data goes inside the flatbuffer (`Buffer.data`), or with
//! [`TensorData::External`] after it, found by `Buffer.offset`/`size` as TFLite's
//! writer does for models over 2 GB (the flatbuffer itself must stay under 2 GB).

use std::io::Write;
use std::path::Path;

use flatbuffers::FlatBufferBuilder;

use super::{tensor_type, FILE_IDENTIFIER};
use crate::Error;

/// The data of a tensor being written.
#[derive(Debug, Clone, PartialEq)]
pub enum TensorData {
    /// Not a constant (an activation, an input).
    None,
    /// A constant: these bytes, in `Buffer.data`.
    Bytes(Vec<u8>),
    /// A float32 constant, written little-endian in `Buffer.data`.
    F32(Vec<f32>),
    /// A constant whose bytes go after the flatbuffer (`Buffer.offset`/`size`).
    External(Vec<u8>),
}

/// One tensor being written.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorSpec {
    /// Its name.
    pub name: String,
    /// Its shape.
    pub shape: Vec<i32>,
    /// Its `TensorType` code.
    pub dtype: i8,
    /// Its data.
    pub data: TensorData,
}

/// One operator being written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorSpec {
    /// Its builtin code ([`super::builtin`]).
    pub builtin_code: i32,
    /// Input tensor indices.
    pub inputs: Vec<i32>,
    /// Output tensor indices.
    pub outputs: Vec<i32>,
}

/// One subgraph being written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubgraphSpec {
    /// Its name.
    pub name: String,
    /// Its tensors.
    pub tensors: Vec<TensorSpec>,
    /// Input tensor indices.
    pub inputs: Vec<i32>,
    /// Output tensor indices.
    pub outputs: Vec<i32>,
    /// Operators in execution order.
    pub operators: Vec<OperatorSpec>,
}

fn dims(shape: &[usize]) -> Vec<i32> {
    shape
        .iter()
        .map(|&d| i32::try_from(d).expect("a TFLite dimension fits in i32"))
        .collect()
}

impl SubgraphSpec {
    /// An empty subgraph named `name`.
    pub fn new(name: &str) -> SubgraphSpec {
        SubgraphSpec {
            name: name.to_string(),
            ..SubgraphSpec::default()
        }
    }

    /// Adds a tensor; returns its index.
    pub fn push(&mut self, t: TensorSpec) -> i32 {
        self.tensors.push(t);
        (self.tensors.len() - 1) as i32
    }

    /// Adds a float32 constant (`data.len()` must be the product of `shape`).
    pub fn constant(&mut self, name: &str, shape: &[usize], data: Vec<f32>) -> i32 {
        assert_eq!(shape.iter().product::<usize>(), data.len(), "{name}");
        self.push(TensorSpec {
            name: name.to_string(),
            shape: dims(shape),
            dtype: tensor_type::FLOAT32,
            data: TensorData::F32(data),
        })
    }

    /// Adds a tensor without data (an activation or input) of type `dtype`.
    pub fn activation(&mut self, name: &str, shape: &[usize], dtype: i8) -> i32 {
        self.push(TensorSpec {
            name: name.to_string(),
            shape: dims(shape),
            dtype,
            data: TensorData::None,
        })
    }

    /// Adds an operator.
    pub fn op(&mut self, builtin_code: i32, inputs: &[i32], outputs: &[i32]) {
        self.operators.push(OperatorSpec {
            builtin_code,
            inputs: inputs.to_vec(),
            outputs: outputs.to_vec(),
        });
    }
}

/// A whole model being written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelSpec {
    /// `Model.description`.
    pub description: String,
    /// The subgraphs (0 = main).
    pub subgraphs: Vec<SubgraphSpec>,
}

impl ModelSpec {
    /// The model's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let (fbb, tail) = self.build();
        let mut out = fbb.finished_data().to_vec();
        out.extend_from_slice(&tail);
        out
    }

    /// Writes the model to `path` atomically (`NAME.partial`, then renamed).
    pub fn write_file(&self, path: &Path) -> Result<(), Error> {
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let (fbb, tail) = self.build();
        let (pending, mut file) = rill_io::AtomicFile::create(path).map_err(io)?;
        file.write_all(fbb.finished_data()).map_err(io)?;
        file.write_all(&tail).map_err(io)?;
        drop(file);
        pending.commit().map_err(io)
    }

    fn has_external(&self) -> bool {
        self.subgraphs
            .iter()
            .flat_map(|s| &s.tensors)
            .any(|t| matches!(t.data, TensorData::External(_)))
    }

    /// The flatbuffer and the bytes that follow it (external data). With external
    /// data, the flatbuffer is built twice: offsets are fixed-width fields, so the
    /// first build's length holds for the second, which has the true offsets.
    fn build(&self) -> (FlatBufferBuilder<'static>, Vec<u8>) {
        if !self.has_external() {
            return (self.build_with(0), Vec::new());
        }
        let len = self.build_with(0).finished_data().len();
        let start = len.next_multiple_of(16);
        let fbb = self.build_with(start as u64);
        assert_eq!(fbb.finished_data().len(), len, "flatbuffer length changed");
        let mut tail = vec![0u8; start - len];
        for t in self.subgraphs.iter().flat_map(|s| &s.tensors) {
            if let TensorData::External(b) = &t.data {
                tail.resize((len + tail.len()).next_multiple_of(16) - len, 0);
                tail.extend_from_slice(b);
            }
        }
        (fbb, tail)
    }

    /// The flatbuffer, external data placed from file offset `external_start`.
    fn build_with(&self, external_start: u64) -> FlatBufferBuilder<'static> {
        let data_bytes: usize = self
            .subgraphs
            .iter()
            .flat_map(|s| &s.tensors)
            .map(|t| match &t.data {
                TensorData::Bytes(b) => b.len(),
                TensorData::F32(v) => 4 * v.len(),
                _ => 0,
            })
            .sum();
        let tensors: usize = self.subgraphs.iter().map(|s| s.tensors.len()).sum();
        let mut fbb = FlatBufferBuilder::with_capacity(data_bytes + 512 * tensors + 4096);

        // Operator codes: one per distinct builtin code, in order of first use.
        let mut codes: Vec<i32> = Vec::new();
        for op in self.subgraphs.iter().flat_map(|s| &s.operators) {
            if !codes.contains(&op.builtin_code) {
                codes.push(op.builtin_code);
            }
        }

        // Buffers: 0 is the empty sentinel, then one per constant.
        let empty = fbb.start_table();
        let mut buffers = vec![fbb.end_table(empty)];
        let mut scratch = Vec::new();
        let mut next_external = external_start;
        let mut sg_offsets = Vec::new();
        for sg in &self.subgraphs {
            let mut tensor_offsets = Vec::new();
            for t in &sg.tensors {
                let buffer = match &t.data {
                    TensorData::None => 0u32,
                    data => {
                        let b = match data {
                            TensorData::Bytes(b) => {
                                let v = fbb.create_vector(b);
                                let s = fbb.start_table();
                                fbb.push_slot_always(4, v);
                                fbb.end_table(s)
                            }
                            TensorData::F32(v) => {
                                scratch.clear();
                                scratch.extend(v.iter().flat_map(|x| x.to_le_bytes()));
                                let v = fbb.create_vector(&scratch);
                                let s = fbb.start_table();
                                fbb.push_slot_always(4, v);
                                fbb.end_table(s)
                            }
                            TensorData::External(b) => {
                                let off = next_external.next_multiple_of(16);
                                next_external = off + b.len() as u64;
                                let s = fbb.start_table();
                                fbb.push_slot_always::<u64>(6, off);
                                fbb.push_slot_always::<u64>(8, b.len() as u64);
                                fbb.end_table(s)
                            }
                            TensorData::None => unreachable!(),
                        };
                        buffers.push(b);
                        (buffers.len() - 1) as u32
                    }
                };
                let shape = fbb.create_vector(&t.shape);
                let name = fbb.create_string(&t.name);
                let s = fbb.start_table();
                fbb.push_slot_always(4, shape);
                fbb.push_slot::<i8>(6, t.dtype, 0);
                fbb.push_slot::<u32>(8, buffer, 0);
                fbb.push_slot_always(10, name);
                tensor_offsets.push(fbb.end_table(s));
            }
            let mut op_offsets = Vec::new();
            for op in &sg.operators {
                let index = codes
                    .iter()
                    .position(|&c| c == op.builtin_code)
                    .unwrap_or(0);
                let inputs = fbb.create_vector(&op.inputs);
                let outputs = fbb.create_vector(&op.outputs);
                let s = fbb.start_table();
                fbb.push_slot::<u32>(4, index as u32, 0);
                fbb.push_slot_always(6, inputs);
                fbb.push_slot_always(8, outputs);
                op_offsets.push(fbb.end_table(s));
            }
            let tensors = fbb.create_vector(&tensor_offsets);
            let inputs = fbb.create_vector(&sg.inputs);
            let outputs = fbb.create_vector(&sg.outputs);
            let operators = fbb.create_vector(&op_offsets);
            let name = fbb.create_string(&sg.name);
            let s = fbb.start_table();
            fbb.push_slot_always(4, tensors);
            fbb.push_slot_always(6, inputs);
            fbb.push_slot_always(8, outputs);
            fbb.push_slot_always(10, operators);
            fbb.push_slot_always(12, name);
            sg_offsets.push(fbb.end_table(s));
        }
        let mut code_offsets = Vec::new();
        for &c in &codes {
            let s = fbb.start_table();
            fbb.push_slot::<i8>(4, c.min(127) as i8, 0);
            fbb.push_slot::<i32>(8, 1, 1);
            fbb.push_slot::<i32>(10, c, 0);
            code_offsets.push(fbb.end_table(s));
        }
        let codes_v = fbb.create_vector(&code_offsets);
        let subgraphs = fbb.create_vector(&sg_offsets);
        let description = fbb.create_string(&self.description);
        let buffers = fbb.create_vector(&buffers);
        let s = fbb.start_table();
        fbb.push_slot::<u32>(4, 3, 0);
        fbb.push_slot_always(6, codes_v);
        fbb.push_slot_always(8, subgraphs);
        fbb.push_slot_always(10, description);
        fbb.push_slot_always(12, buffers);
        let root = fbb.end_table(s);
        fbb.finish(root, Some(FILE_IDENTIFIER));
        fbb
    }
}
