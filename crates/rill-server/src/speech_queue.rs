//! The order speech requests run in, and their share of the CPU beside the music.
//!
//! One policy for every speech door (`/api/tts`, `/v1/audio/speech`, Wyoming):
//!
//! * **One synthesis at a time** per voice (it uses every core it may); the others
//!   wait first come, first served in a bounded queue ([`DEFAULT_SPEECH_QUEUE`]),
//!   each told how many requests are ahead of it when it arrives (HTTP header
//!   [`QUEUE_HEADER`]). A request that finds the queue full is refused (HTTP 503
//!   with `Retry-After`, Wyoming `error` with code `busy`) and the reason. A waiting
//!   request whose client goes away leaves the queue.
//! * **Music first.** A synthesis runs on the music's engine
//!   ([`rill_stream::Speaker`]): one speech cycle at a time, only when no music stream
//!   has room for a frame, so it can never make an admitted music stream underrun,
//!   and the engine's calibrated music capacity is not changed by it. Alone on the
//!   machine it has all of it (real time when the CPU allows); beside music it runs
//!   in the leftover capacity, slower than real time (`/api/info`'s `expected_rtf`).

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// Speech requests that may wait behind the running one.
pub const DEFAULT_SPEECH_QUEUE: usize = 4;
/// Response header: requests ahead of this one when it arrived (0 = it started at once).
pub const QUEUE_HEADER: &str = "x-rill-queue-position";

/// The requests of one voice: the running one first, then the waiting ones.
#[derive(Debug)]
pub struct SpeechQueue {
    /// Most requests waiting behind the running one.
    limit: usize,
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// Tickets in arrival order; the first is running (or about to).
    order: VecDeque<u64>,
    next: u64,
}

/// The queue was full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueFull {
    /// Requests waiting (the limit).
    pub waiting: usize,
}

impl std::fmt::Display for QueueFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "busy: one synthesis is running and {} more are waiting (the queue's limit); retry when one ends",
            self.waiting
        )
    }
}

/// A place in the queue; leaving it (drop) lets the next request run.
#[derive(Debug)]
pub struct Ticket {
    queue: Arc<SpeechQueue>,
    id: u64,
    /// Requests ahead of this one when it joined.
    pub ahead: usize,
}

impl SpeechQueue {
    /// A queue letting `limit` requests wait behind the running one.
    pub fn new(limit: usize) -> Arc<SpeechQueue> {
        Arc::new(SpeechQueue {
            limit,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays consistent whatever panicked while it was held.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Joins the queue, or refuses when `limit` requests already wait.
    pub fn join(self: &Arc<Self>) -> Result<Ticket, QueueFull> {
        let mut s = self.lock();
        let ahead = s.order.len();
        if ahead > self.limit {
            return Err(QueueFull {
                waiting: self.limit,
            });
        }
        let id = s.next;
        s.next += 1;
        s.order.push_back(id);
        Ok(Ticket {
            queue: Arc::clone(self),
            id,
            ahead,
        })
    }

    /// Whether a synthesis is running.
    pub fn running(&self) -> bool {
        !self.lock().order.is_empty()
    }

    /// Requests waiting behind the running one.
    pub fn waiting(&self) -> usize {
        self.lock().order.len().saturating_sub(1)
    }
}

impl Ticket {
    /// Blocks until this request is first in line (true), or until `gone()` says its
    /// client went away (false; checked every 100 ms while waiting).
    pub fn wait(&self, gone: impl Fn() -> bool) -> bool {
        let q = &self.queue;
        let mut s = q.lock();
        loop {
            if s.order.front() == Some(&self.id) {
                return true;
            }
            if gone() {
                return false;
            }
            s = q
                .changed
                .wait_timeout(s, Duration::from_millis(100))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let q = &self.queue;
        let mut s = q.lock();
        s.order.retain(|&t| t != self.id);
        drop(s);
        q.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_come_first_served_within_the_limit() {
        let q = SpeechQueue::new(2);
        let a = q.join().unwrap();
        let b = q.join().unwrap();
        let c = q.join().unwrap();
        assert_eq!((a.ahead, b.ahead, c.ahead), (0, 1, 2));
        assert_eq!(q.join().unwrap_err(), QueueFull { waiting: 2 });
        assert!(q.running());
        assert_eq!(q.waiting(), 2);
        assert!(a.wait(|| false));
        // Not first: gives up when its client is gone.
        assert!(!c.wait(|| true));
        // A waiting request leaving keeps the others' order.
        drop(b);
        assert_eq!(q.waiting(), 1);
        let t = std::thread::spawn(move || c.wait(|| false));
        std::thread::sleep(Duration::from_millis(50));
        assert!(!t.is_finished(), "ran before the running request ended");
        drop(a);
        assert!(t.join().unwrap());
        assert!(!q.running());
    }
}
