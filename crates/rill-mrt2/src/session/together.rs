//! Several music streams of one model stepped together: the language model goes
//! layer by layer across the sessions, two at a time through each layer's products
//! ([`rill_kernels::Ops::gemv2`]: each block of weights read once for both, from
//! memory once per pair instead of once per stream), a third stream after them
//! (its weights then mostly from the cache the pair left). Per session the same
//! operations on its own data in the same order, and every product has the bits of
//! its one-stream call, so tokens and state are bit for bit those of stepping it
//! alone.

use std::sync::Arc;

use rill_kernels::Pool;

use super::{depth_io, temporal_io, Session};
use crate::model::LEVELS;

impl Session {
    /// One frame of every session of `sessions` into `tokens` (one entry each), layer
    /// by layer across them. Sessions of different models are stepped one after
    /// another. Allocates nothing.
    ///
    /// # Panics
    /// If `tokens` and `sessions` differ in length.
    pub fn step_together(sessions: &mut [&mut Session], pool: &Pool, tokens: &mut [[u32; LEVELS]]) {
        assert_eq!(sessions.len(), tokens.len(), "one token frame per session");
        let Some(first) = sessions.first() else {
            return;
        };
        let model = Arc::clone(&first.model);
        if sessions.iter().any(|s| !Arc::ptr_eq(&s.model, &model)) {
            for (s, t) in sessions.iter_mut().zip(tokens.iter_mut()) {
                *t = s.step(pool, None);
            }
            return;
        }
        for s in sessions.iter_mut() {
            s.temporal_begin(pool, None);
        }
        for l in 0..model.temporal_layers() {
            for pair in sessions.chunks_mut(2) {
                match pair {
                    [a, b] => {
                        let mut ios = [
                            temporal_io(&model, &a.state, &mut a.scratch, l),
                            temporal_io(&model, &b.state, &mut b.scratch, l),
                        ];
                        model.temporal_layer_each(l, &mut ios, pool);
                    }
                    [a] => a.temporal_layer(l, pool),
                    _ => unreachable!("chunks of at most two"),
                }
            }
        }
        for s in sessions.iter_mut() {
            s.temporal_end(None);
            s.depth_from_temporal();
        }
        for k in 0..LEVELS {
            for s in sessions.iter_mut() {
                s.depth_begin(pool);
            }
            for j in 0..model.depth_layers() {
                for pair in sessions.chunks_mut(2) {
                    match pair {
                        [a, b] => {
                            let mut ios = [
                                depth_io(&model, &mut a.scratch, k, j),
                                depth_io(&model, &mut b.scratch, k, j),
                            ];
                            model.depth_layer_each(j, &mut ios, pool);
                            a.depth_keep(k, j);
                            b.depth_keep(k, j);
                        }
                        [a] => a.depth_layer(k, j, pool),
                        _ => unreachable!("chunks of at most two"),
                    }
                }
            }
            for (s, t) in sessions.iter_mut().zip(tokens.iter_mut()) {
                t[k] = s.depth_end(k, None, pool, None);
            }
        }
        for (s, t) in sessions.iter_mut().zip(tokens.iter()) {
            s.frame_end(*t);
        }
    }
}
