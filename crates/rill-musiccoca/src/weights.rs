//! MusicCoCa's weights by name, in the layout of DBraun's flax.nnx port
//! (`text.layers.q.kernel` `[12,768,12,64]`, …): what the TFLite reader produces and the
//! model takes, so the two meet in one vocabulary.

use std::collections::BTreeMap;

use crate::Error;

/// One float32 tensor, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

/// Tensors by DBraun key.
#[derive(Debug, Default, Clone)]
pub struct Weights {
    map: BTreeMap<String, Tensor>,
}

impl Weights {
    /// No tensors.
    pub fn new() -> Weights {
        Weights::default()
    }

    /// Adds (or replaces) a tensor; `data.len()` must equal the product of `shape`.
    pub fn insert(&mut self, name: impl Into<String>, shape: Vec<usize>, data: Vec<f32>) {
        assert_eq!(
            shape.iter().product::<usize>(),
            data.len(),
            "tensor data length"
        );
        self.map.insert(name.into(), Tensor { shape, data });
    }

    /// The tensor `name`, which must have exactly `shape`.
    pub fn get(&self, name: &str, shape: &[usize]) -> Result<&Tensor, Error> {
        let t = self.map.get(name).ok_or_else(|| Error::Weight {
            name: name.into(),
            what: "missing".into(),
        })?;
        if t.shape != shape {
            return Err(Error::Weight {
                name: name.into(),
                what: format!("shape {:?}, expected {:?}", t.shape, shape),
            });
        }
        Ok(t)
    }

    /// Removes and returns the data of `name`, which must have exactly `shape`.
    pub fn take(&mut self, name: &str, shape: &[usize]) -> Result<Vec<f32>, Error> {
        self.get(name, shape)?;
        Ok(self.map.remove(name).map(|t| t.data).unwrap_or_default())
    }

    /// The names held, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }

    /// Number of tensors.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}
