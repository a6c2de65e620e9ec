//! `--partition`: one shard of a run, so that a CI matrix splits the catalogue across
//! jobs and `loopcheck merge` puts the shards' reports back together. As nextest's:
//! `slice:K/N` deals the planned case runs round-robin, `hash:K/N` keeps the runs whose
//! stable hash falls in shard K, so a run stays in its shard when cases are added.

use std::fmt;
use std::str::FromStr;

use crate::scenario::{Delivery, StateMode, run_label};

/// How runs are dealt out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Every N-th run of the plan, starting at the K-th.
    Slice,
    /// The runs whose hash of `case [state]` (`case [state, stream]` for a streamed run)
    /// is K-1 modulo N.
    Hash,
}

/// Shard `shard` (1-based) of `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    /// How runs are dealt out.
    pub scheme: Scheme,
    /// Which shard, from 1.
    pub shard: u64,
    /// How many shards.
    pub total: u64,
}

impl Partition {
    /// Whether the run at `position` of the plan, of case `id` in `state` with
    /// `delivery`, is in this shard.
    pub fn keeps(&self, position: usize, id: &str, state: StateMode, delivery: Delivery) -> bool {
        let index = match self.scheme {
            Scheme::Slice => position as u64,
            Scheme::Hash => fnv1a(format!("{id} [{}]", run_label(state, delivery)).as_bytes()),
        };
        index % self.total == self.shard - 1
    }
}

/// FNV-1a, 64 bits: stable across platforms and releases, unlike std's hasher.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A `--partition` that is not `slice:K/N` or `hash:K/N` with 1 <= K <= N.
#[derive(Debug, thiserror::Error)]
#[error("{}: expected slice:K/N or hash:K/N, with 1 <= K <= N", self.what())]
pub struct PartitionError {
    /// The text given.
    pub text: String,
}

impl PartitionError {
    /// What is wrong, without what was expected (a settings file says that its own way).
    pub fn what(&self) -> String {
        format!("invalid partition '{}'", self.text)
    }
}

impl FromStr for Partition {
    type Err = PartitionError;

    fn from_str(text: &str) -> Result<Self, PartitionError> {
        let expected = || PartitionError {
            text: text.to_owned(),
        };
        let (scheme, shards) = text.split_once(':').ok_or_else(expected)?;
        let scheme = match scheme {
            "slice" | "count" => Scheme::Slice,
            "hash" => Scheme::Hash,
            _ => return Err(expected()),
        };
        let (shard, total) = shards.split_once('/').ok_or_else(expected)?;
        let (shard, total): (u64, u64) = (
            shard.parse().map_err(|_| expected())?,
            total.parse().map_err(|_| expected())?,
        );
        if shard == 0 || shard > total {
            return Err(expected());
        }
        Ok(Self {
            scheme,
            shard,
            total,
        })
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = match self.scheme {
            Scheme::Slice => "slice",
            Scheme::Hash => "hash",
        };
        write!(f, "{scheme}:{}/{}", self.shard, self.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::StateMode::{PreviousResponseId, Stateless};

    fn runs() -> Vec<(String, StateMode)> {
        (0..40)
            .flat_map(|i| {
                [
                    (format!("area/{i:02}"), PreviousResponseId),
                    (format!("area/{i:02}"), Stateless),
                ]
            })
            .collect()
    }

    #[test]
    fn the_shards_of_either_scheme_cover_every_run_exactly_once() {
        for scheme in ["slice", "hash"] {
            let shards: Vec<Partition> = (1..=3)
                .map(|k| format!("{scheme}:{k}/3").parse().unwrap())
                .collect();
            for (position, (id, state)) in runs().iter().enumerate() {
                let owners = shards
                    .iter()
                    .filter(|p| p.keeps(position, id, *state, Delivery::Json))
                    .count();
                assert_eq!(owners, 1, "{scheme}: {id} [{state}]");
            }
            let sizes: Vec<usize> = shards
                .iter()
                .map(|p| {
                    runs()
                        .iter()
                        .enumerate()
                        .filter(|(i, (id, s))| p.keeps(*i, id, *s, Delivery::Json))
                        .count()
                })
                .collect();
            assert!(
                sizes.iter().all(|&n| n >= 15),
                "{scheme}: unbalanced {sizes:?}"
            );
        }
    }

    #[test]
    fn a_hashed_run_keeps_its_shard_whatever_its_position() {
        let p: Partition = "hash:2/4".parse().unwrap();
        assert_eq!(
            p.keeps(0, "dispatch/01-unknown-tool", Stateless, Delivery::Stream),
            p.keeps(57, "dispatch/01-unknown-tool", Stateless, Delivery::Stream)
        );
    }

    #[test]
    fn bad_partitions_say_what_is_expected() {
        for bad in [
            "slice:0/2",
            "slice:3/2",
            "hash:1",
            "round:1/2",
            "slice:a/2",
            "1/2",
        ] {
            let err = bad.parse::<Partition>().unwrap_err().to_string();
            assert!(
                err.contains("expected slice:K/N or hash:K/N"),
                "{bad}: {err}"
            );
        }
        assert_eq!(
            "count:1/2".parse::<Partition>().unwrap().to_string(),
            "slice:1/2"
        );
    }
}
