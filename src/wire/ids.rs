//! Opaque ids in the real API's formats.
//!
//! Real ids are a prefix plus 48 hex characters whose first 8 encode `created_at`;
//! items of one response share a tail. Model `call_id`s are `call_` plus 24 base62.
//! Generation is seeded per session so a case replays with the same ids.

/// A small deterministic generator (splitmix64): ids need to be unpredictable to a
/// controller, not cryptographically strong, and reproducible from a seed.
#[derive(Debug, Clone)]
pub struct IdGen {
    state: u64,
}

const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

impl IdGen {
    /// A generator seeded from `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// A generator whose seed is derived from a string (e.g. case id and state mode).
    pub fn from_key(key: &str) -> Self {
        // FNV-1a: stable across runs and platforms, unlike the std hasher.
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in key.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        Self::new(hash)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// `n` lowercase hex characters.
    pub fn hex(&mut self, n: usize) -> String {
        let mut out = String::with_capacity(n);
        while out.len() < n {
            out.push_str(&format!("{:016x}", self.next_u64()));
        }
        out.truncate(n);
        out
    }

    /// `n` base62 characters.
    pub fn base62(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| BASE62[(self.next_u64() % 62) as usize] as char)
            .collect()
    }

    /// A shared 16-hex tail for the items of one response.
    pub fn tail(&mut self) -> String {
        self.hex(16)
    }

    /// `prefix_` + 8 hex of `created_at` + 24 random hex + the response's 16-hex tail.
    pub fn item_id(&mut self, prefix: &str, created_at: u64, tail: &str) -> String {
        format!("{prefix}_{:08x}{}{tail}", created_at as u32, self.hex(24))
    }

    /// A model call id: `call_` + 24 base62.
    pub fn call_id(&mut self) -> String {
        format!("call_{}", self.base62(24))
    }

    /// A request id as in `x-request-id`: `req_` + 32 hex.
    pub fn request_id(&mut self) -> String {
        format!("req_{}", self.hex(32))
    }

    /// An opaque reasoning blob shaped like the real `encrypted_content` (Fernet-style
    /// base64 starting `gAAAAA`).
    pub fn encrypted_content(&mut self) -> String {
        const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let body: String = (0..150)
            .map(|_| B64[(self.next_u64() % 64) as usize] as char)
            .collect();
        format!("gAAAAABo{body}==")
    }
}

/// True when `id` has the prefix of the given item kind (`rs`, `fc`, `msg`, ...).
pub fn has_prefix(id: &str, prefix: &str) -> bool {
    id.strip_prefix(prefix)
        .is_some_and(|rest| rest.starts_with('_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_real_shapes() {
        let mut ids = IdGen::new(7);
        let tail = ids.tail();
        let fc = ids.item_id("fc", 1_759_064_126, &tail);
        assert!(fc.starts_with("fc_68d9303e"));
        assert_eq!(fc.len(), 3 + 48);
        let call = ids.call_id();
        assert_eq!(call.len(), 5 + 24);
        assert!(call[5..].bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_ne!(fc, call);
        assert!(ids.request_id().starts_with("req_"));
    }

    #[test]
    fn same_key_same_ids() {
        let a = IdGen::from_key("case/x:stateless").call_id();
        let b = IdGen::from_key("case/x:stateless").call_id();
        let c = IdGen::from_key("case/x:previous_response_id").call_id();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
