//! Several music streams of one model stepped together: the language model goes
//! layer by layer across the sessions, so each weight matrix serves every stream
//! back to back (read from memory once, then from the cache it left) instead of
//! being streamed again per stream. Per session the calls, their data and their
//! order are those of [`Session::step`], so tokens and state are bit for bit those
//! of stepping it alone.

use std::sync::Arc;

use rill_kernels::Pool;

use super::Session;
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
            for s in sessions.iter_mut() {
                s.temporal_layer(l, pool);
            }
        }
        for s in sessions.iter_mut() {
            s.temporal_end(None);
            s.scratch.depth_in.copy_from_slice(&s.scratch.x);
        }
        for k in 0..LEVELS {
            for s in sessions.iter_mut() {
                s.depth_begin(pool);
            }
            for j in 0..model.depth_layers() {
                for s in sessions.iter_mut() {
                    s.depth_layer(k, j, pool);
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
