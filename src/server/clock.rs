//! Time as the fake server tells it. A run is reproducible only if every byte the server
//! sends is a function of (case, state mode, seed), so the server never reads the wall
//! clock: `created_at` comes from a fixed epoch derived from the seed, one second later
//! for each timestamp taken, and ids embed that time as the real ones do.

/// The epoch of seed 0: 2025-10-01T00:00:00Z, a plausible `created_at`.
const BASE_EPOCH: u64 = 1_759_276_800;

/// Seeds move the epoch within about a year, so different seeds give different ids.
const EPOCH_SPAN: u64 = 365 * 24 * 3600;

/// A deterministic clock: a seeded epoch that ticks one second per reading.
#[derive(Debug, Clone)]
pub struct Clock {
    next: u64,
}

impl Clock {
    /// The clock of a session run with `seed`.
    pub fn seeded(seed: u64) -> Self {
        Self {
            next: BASE_EPOCH + seed % EPOCH_SPAN,
        }
    }

    /// The current time in whole seconds; each reading is one second after the last.
    pub fn now(&mut self) -> u64 {
        let now = self.next;
        self.next += 1;
        now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_tells_the_same_times() {
        let (mut a, mut b) = (Clock::seeded(7), Clock::seeded(7));
        assert_eq!((a.now(), a.now()), (b.now(), b.now()));
        assert_ne!(Clock::seeded(7).now(), Clock::seeded(8).now());
        let mut c = Clock::seeded(0);
        assert_eq!(c.now(), BASE_EPOCH);
        assert_eq!(c.now(), BASE_EPOCH + 1);
    }
}
