//! Secrets a server hands out (session ids, control tokens, API keys): drawn from the
//! OS's random source, so none can be guessed from another, derived from a case, or
//! carried over from another server.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// `len` random letters and digits (5.95 bits each).
pub(crate) fn token(len: usize) -> String {
    let mut out = String::with_capacity(len);
    let mut pool = [0u8; 64];
    while out.len() < len {
        fill(&mut pool);
        // Bytes from 248 (4 x 62) up are skipped: they would make the first letters
        // likelier than the rest.
        for byte in pool.iter().filter(|byte| **byte < 248) {
            if out.len() == len {
                break;
            }
            out.push(char::from(ALPHABET[usize::from(byte % 62)]));
        }
    }
    out
}

/// `len` random bytes (a signing key).
pub(crate) fn random_bytes(len: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; len];
    fill(&mut bytes);
    bytes
}

/// Whether `given` is `expected`, in time that does not depend on where they differ.
pub(crate) fn same(given: &str, expected: &str) -> bool {
    given.len() == expected.len()
        && given
            .bytes()
            .zip(expected.bytes())
            .fold(0, |differ, (a, b)| differ | (a ^ b))
            == 0
}

fn fill(pool: &mut [u8]) {
    if getrandom::fill(pool).is_ok() {
        return;
    }
    // No OS source answered (not seen on Linux): std keys its hash maps from the OS by
    // its own path, and a keyed SipHash of a counter is as unpredictable to a client.
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let keys = std::collections::hash_map::RandomState::new();
    for chunk in pool.chunks_mut(8) {
        let mut hasher = keys.build_hasher();
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        let bytes = hasher.finish().to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_have_their_length_and_letters_and_differ() {
        let (a, b) = (token(32), token(32));
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|byte| ALPHABET.contains(&byte)), "{a}");
        assert_ne!(a, b);
    }

    #[test]
    fn same_compares_whole_strings() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "abcd"));
        assert!(!same("", "a"));
    }
}
