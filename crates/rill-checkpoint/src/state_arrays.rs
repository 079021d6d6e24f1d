//! Named state arrays against the layout a streaming state expects: how both
//! codecs (SpectroStream, NanoCodec) import a state they exported, from an
//! untrusted file. Every array must be present exactly once, with its exact shape
//! and finite values; the first problem is the error and nothing is taken.

/// One array as exported: name, shape, values.
pub type StateArray = (String, Vec<usize>, Vec<f32>);

/// Why given state arrays do not fit the expected layout (each names the array).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StateArrayError {
    #[error("state array {name} is not part of the state")]
    Unknown { name: String },
    #[error("state array {name} is given more than once")]
    Duplicate { name: String },
    #[error("state array {name} is missing")]
    Missing { name: String },
    #[error("state array {name}: expected shape {expected:?}, found {found:?}")]
    Shape {
        name: String,
        expected: Vec<usize>,
        found: Vec<usize>,
    },
    #[error("state array {name}: shape {shape:?} needs {needed} values, found {found}")]
    Length {
        name: String,
        shape: Vec<usize>,
        needed: usize,
        found: usize,
    },
    #[error("state array {name}: value {index} is {value}; the state holds finite numbers only")]
    NonFinite {
        name: String,
        index: usize,
        value: f32,
    },
}

/// The values of `given` in the order of `expected` (name, shape), once every
/// array has been checked. A NaN or infinity is refused: in a history row it
/// would poison every later frame.
pub fn match_state_arrays<'a>(
    expected: &[(String, Vec<usize>)],
    given: &'a [StateArray],
) -> Result<Vec<&'a [f32]>, StateArrayError> {
    for (i, (name, _, _)) in given.iter().enumerate() {
        if !expected.iter().any(|(n, _)| n == name) {
            return Err(StateArrayError::Unknown { name: name.clone() });
        }
        if given[..i].iter().any(|(n, _, _)| n == name) {
            return Err(StateArrayError::Duplicate { name: name.clone() });
        }
    }
    let mut found = Vec::with_capacity(expected.len());
    for (name, shape) in expected {
        let Some((_, s, v)) = given.iter().find(|(n, _, _)| n == name) else {
            return Err(StateArrayError::Missing { name: name.clone() });
        };
        if s != shape {
            return Err(StateArrayError::Shape {
                name: name.clone(),
                expected: shape.clone(),
                found: s.clone(),
            });
        }
        let needed: usize = shape.iter().product();
        if v.len() != needed {
            return Err(StateArrayError::Length {
                name: name.clone(),
                shape: shape.clone(),
                needed,
                found: v.len(),
            });
        }
        if let Some(index) = v.iter().position(|x| !x.is_finite()) {
            return Err(StateArrayError::NonFinite {
                name: name.clone(),
                index,
                value: v[index],
            });
        }
        found.push(&v[..]);
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Vec<(String, Vec<usize>)> {
        vec![("a".into(), vec![2, 2]), ("b".into(), vec![1])]
    }

    fn arrays() -> Vec<StateArray> {
        vec![
            ("b".into(), vec![1], vec![5.0]),
            ("a".into(), vec![2, 2], vec![1.0, 2.0, 3.0, 4.0]),
        ]
    }

    #[test]
    fn arrays_come_back_in_layout_order() {
        let given = arrays();
        let found = match_state_arrays(&layout(), &given).unwrap();
        assert_eq!(found, [&[1.0, 2.0, 3.0, 4.0][..], &[5.0][..]]);
    }

    #[test]
    fn every_problem_is_named() {
        let check = |given: Vec<StateArray>, want: StateArrayError| {
            assert_eq!(match_state_arrays(&layout(), &given), Err(want));
        };
        let mut g = arrays();
        g.push(("c".into(), vec![1], vec![0.0]));
        check(g, StateArrayError::Unknown { name: "c".into() });
        let mut g = arrays();
        g.push(g[0].clone());
        check(g, StateArrayError::Duplicate { name: "b".into() });
        check(
            arrays()[1..].to_vec(),
            StateArrayError::Missing { name: "b".into() },
        );
        let mut g = arrays();
        g[1].1 = vec![4];
        check(
            g,
            StateArrayError::Shape {
                name: "a".into(),
                expected: vec![2, 2],
                found: vec![4],
            },
        );
        let mut g = arrays();
        g[1].2.pop();
        check(
            g,
            StateArrayError::Length {
                name: "a".into(),
                shape: vec![2, 2],
                needed: 4,
                found: 3,
            },
        );
        let mut g = arrays();
        g[1].2[2] = f32::INFINITY;
        check(
            g,
            StateArrayError::NonFinite {
                name: "a".into(),
                index: 2,
                value: f32::INFINITY,
            },
        );
    }
}
