//! How far a server lets its clients go: body sizes, bytes in flight, slow headers and
//! bodies, open connections, and how it waits out a failing `accept` (no descriptors
//! left) instead of spinning on it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A server's limits on its clients.
#[derive(Debug, Clone, Copy)]
pub struct HttpLimits {
    /// One request body; a larger one is answered 413.
    pub max_body: usize,
    /// The bodies being read and handled at once, together; past it a request is
    /// answered 503. Bytes count as they arrive, not as announced.
    pub body_budget: usize,
    /// A request's headers must arrive within this (an idle keep-alive connection is
    /// closed after it too).
    pub header_timeout: Duration,
    /// A body that sends nothing for this long is dropped with its connection.
    pub body_idle: Duration,
    /// Connections served at once; more wait in the listen queue.
    pub connections: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            max_body: 64 * 1024 * 1024,
            body_budget: 256 * 1024 * 1024,
            header_timeout: Duration::from_secs(30),
            body_idle: Duration::from_secs(30),
            connections: 1024,
        }
    }
}

/// The body bytes a server holds, against its budget.
#[derive(Debug)]
pub(crate) struct BodyBudget {
    limit: usize,
    held: AtomicUsize,
}

impl BodyBudget {
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            held: AtomicUsize::new(0),
        })
    }

    /// Nothing held yet; grows with [`Reservation::hold`].
    pub fn reservation(self: &Arc<Self>) -> Reservation {
        Reservation {
            budget: self.clone(),
            bytes: 0,
        }
    }
}

/// Bytes one request holds; given back when dropped.
#[derive(Debug)]
pub(crate) struct Reservation {
    budget: Arc<BodyBudget>,
    bytes: usize,
}

impl Reservation {
    /// Holds `bytes` in all (more than before, or nothing changes); false when the
    /// budget has not that much left.
    pub fn hold(&mut self, bytes: usize) -> bool {
        let more = bytes.saturating_sub(self.bytes);
        let limit = self.budget.limit;
        let taken = self
            .budget
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(more).filter(|total| *total <= limit)
            });
        if taken.is_ok() {
            self.bytes += more;
        }
        taken.is_ok()
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.held.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// The waits between failed `accept`s: doubling from 1 ms to 1 s, back to 1 ms after
/// one succeeds. Out of descriptors, `accept` fails at once for as long as the pending
/// connection waits; retrying at once spins a core.
#[derive(Debug)]
pub(crate) struct Backoff {
    next: Duration,
}

const FIRST_WAIT: Duration = Duration::from_millis(1);
const LONGEST_WAIT: Duration = Duration::from_secs(1);

impl Default for Backoff {
    fn default() -> Self {
        Self { next: FIRST_WAIT }
    }
}

impl Backoff {
    /// How long to wait after a failure.
    pub fn failed(&mut self) -> Duration {
        let wait = self.next;
        self.next = (self.next * 2).min(LONGEST_WAIT);
        wait
    }

    pub fn succeeded(&mut self) {
        self.next = FIRST_WAIT;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_share_the_budget_and_give_it_back() {
        let budget = BodyBudget::new(100);
        let mut a = budget.reservation();
        let mut b = budget.reservation();
        assert!(a.hold(60));
        assert!(!b.hold(41), "past the budget");
        assert!(b.hold(40));
        assert!(a.hold(60), "holding no more than before takes nothing");
        drop(a);
        assert!(b.hold(100));
        drop(b);
        assert_eq!(budget.held.load(Ordering::Acquire), 0);
    }

    #[test]
    fn accept_failures_wait_longer_each_time_up_to_a_second() {
        let mut backoff = Backoff::default();
        let waits: Vec<Duration> = (0..14).map(|_| backoff.failed()).collect();
        assert_eq!(waits[0], Duration::from_millis(1));
        assert_eq!(waits[1], Duration::from_millis(2));
        assert!(waits.windows(2).all(|pair| pair[1] >= pair[0]));
        assert_eq!(waits[13], LONGEST_WAIT);
        // 14 failures in a row take over 3 s, where a spinning loop fails 100,000 times.
        assert!(waits.iter().sum::<Duration>() > Duration::from_secs(3));
        backoff.succeeded();
        assert_eq!(backoff.failed(), FIRST_WAIT);
    }
}
