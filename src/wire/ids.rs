//! Opaque ids in the real API's formats.
//!
//! Real ids are a prefix plus 48 hex characters whose first 8 encode `created_at`;
//! items of one response share a tail. Model `call_id`s are `call_` plus 24 base62.
//! Generation is seeded per session so a case replays with the same ids.

/// A small deterministic generator (splitmix64): ids need to be unpredictable to a
/// controller, not cryptographically strong, and reproducible from a seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdGen {
    state: u64,
}

/// The random hex digits of an item id, and the words they take.
const ITEM_ID_RANDOM_HEX: usize = 24;
const ITEM_ID_WORDS: usize = ITEM_ID_RANDOM_HEX.div_ceil(16);

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The URL-safe base64 alphabet of Fernet tokens (`encrypted_content`).
const BASE64_URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// What an event's `obfuscation` padding is cut from: base62 characters drawn once, at
/// build time, from a fixed seed. Padding carries nothing (clients skip it), so each
/// event's is a random cut of this pool rather than characters drawn one by one: that
/// was a tenth of the work of a streamed text delta.
const PADDING: [u8; 1024] = padding_pool(0x6f62_6675_7363_6174);

/// [`PADDING`]: `seed` run through the same splitmix64 as [`IdGen::next_u64`], one
/// character per word.
const fn padding_pool(seed: u64) -> [u8; 1024] {
    let mut pool = [0u8; 1024];
    let mut state = seed;
    let mut index = 0;
    while index < pool.len() {
        let (next, word) = splitmix64(state);
        state = next;
        pool[index] = BASE62[(word % 62) as usize];
        index += 1;
    }
    pool
}

/// One step of splitmix64: the next state and the 64 random bits it gives. A `const fn`,
/// so the padding pool is drawn at build time by the same generator as the ids.
const fn splitmix64(state: u64) -> (u64, u64) {
    let state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (state, z ^ (z >> 31))
}

/// Characters drawn from one random word: ten base-62 digits (62^10 < 2^64) or ten
/// base-64 ones (60 bits).
const CHARS_PER_WORD: usize = 10;

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
        let (state, word) = splitmix64(self.state);
        self.state = state;
        word
    }

    /// `n` lowercase hex characters.
    pub fn hex(&mut self, n: usize) -> String {
        let mut out = Vec::with_capacity(n);
        self.push_hex(&mut out, n);
        text(out)
    }

    /// Appends `n` lowercase hex characters: each 64 random bits give 16, most
    /// significant first, and the rest of the last word is dropped.
    fn push_hex(&mut self, out: &mut Vec<u8>, n: usize) {
        let mut left = n;
        while left > 0 {
            let take = left.min(16);
            out.extend_from_slice(&hex_digits(self.next_u64())[..take]);
            left -= take;
        }
    }

    /// `n` base62 characters.
    pub fn base62(&mut self, n: usize) -> String {
        let mut out = Vec::with_capacity(n);
        self.base62_to(&mut out, n);
        text(out)
    }

    /// Appends `n` base62 characters to bytes being written (the same characters
    /// [`IdGen::base62`] would return).
    pub fn base62_to(&mut self, out: &mut Vec<u8>, n: usize) {
        self.push_drawn(out, n, BASE62);
    }

    /// Appends `n` characters of `alphabet`: each random word gives the next
    /// [`CHARS_PER_WORD`] characters, as its lowest digits in the alphabet's base. (One
    /// word per character made these draws a sixth of the engine's work per response.)
    fn push_drawn<const BASE: usize>(
        &mut self,
        out: &mut Vec<u8>,
        n: usize,
        alphabet: &[u8; BASE],
    ) {
        let start = out.len();
        out.resize(start + n, 0);
        for chars in out[start..].chunks_mut(CHARS_PER_WORD) {
            let mut word = self.next_u64();
            for byte in chars {
                *byte = alphabet[(word % BASE as u64) as usize];
                word /= BASE as u64;
            }
        }
    }

    /// An event's `obfuscation` padding: 3 to 16 base62 characters, cut from a random
    /// place in a fixed pool of them, drawn once at build time.
    pub fn padding(&mut self) -> &'static [u8] {
        let word = self.next_u64();
        let len = 3 + (word % 14) as usize;
        let start = ((word >> 8) % (PADDING.len() - 16) as u64) as usize;
        &PADDING[start..start + len]
    }

    /// A shared 16-hex tail for the items of one response.
    pub fn tail(&mut self) -> String {
        self.hex(16)
    }

    /// `prefix_` + 8 hex of `created_at` + 24 random hex + the response's 16-hex tail.
    pub fn item_id(&mut self, prefix: &str, created_at: u64, tail: &str) -> String {
        let mut id = Vec::with_capacity(prefix.len() + 1 + 8 + 24 + tail.len());
        id.extend_from_slice(prefix.as_bytes());
        id.push(b'_');
        // The low 32 bits of `created_at`, as 8 hex digits.
        id.extend_from_slice(&hex_digits(u64::from(created_at as u32) << 32)[..8]);
        self.push_hex(&mut id, ITEM_ID_RANDOM_HEX);
        id.extend_from_slice(tail.as_bytes());
        text(id)
    }

    /// Advances the generator as [`IdGen::item_id`] does, for an id that is not kept.
    pub fn skip_item_id(&mut self) {
        for _ in 0..ITEM_ID_WORDS {
            self.next_u64();
        }
    }

    /// A model call id: `call_` + 24 base62.
    pub fn call_id(&mut self) -> String {
        let mut id = Vec::with_capacity(5 + 24);
        id.extend_from_slice(b"call_");
        self.base62_to(&mut id, 24);
        text(id)
    }

    /// A request id as in `x-request-id`: `req_` + 32 hex.
    pub fn request_id(&mut self) -> String {
        let mut id = Vec::with_capacity(4 + 32);
        id.extend_from_slice(b"req_");
        self.push_hex(&mut id, 32);
        text(id)
    }

    /// An opaque reasoning blob shaped like the real `encrypted_content` (Fernet-style
    /// base64 starting `gAAAAA`).
    pub fn encrypted_content(&mut self) -> String {
        let mut out = Vec::with_capacity(8 + 150 + 2);
        out.extend_from_slice(b"gAAAAABo");
        self.push_drawn(&mut out, 150, BASE64_URL);
        out.extend_from_slice(b"==");
        text(out)
    }
}

/// The 16 lowercase hex digits of `word`, most significant first. Each half's nibbles
/// are spread into the bytes of a word and turned into digits all at once: ids take
/// about 150 hex digits per response.
fn hex_digits(word: u64) -> [u8; 16] {
    const ONES: u64 = 0x0101_0101_0101_0101;
    // Nibble k of `half` (from the least significant) into byte k of the word.
    let spread = |half: u32| {
        let x = u64::from(half);
        let x = ((x & 0xffff_0000) << 16) | (x & 0xffff);
        let x = ((x & 0x0000_ff00_0000_ff00) << 8) | (x & 0x0000_00ff_0000_00ff);
        ((x & 0x00f0_00f0_00f0_00f0) << 4) | (x & 0x000f_000f_000f_000f)
    };
    // `0`..`9` from 0..9; 10..15 (those that reach 16 when 6 is added) skip to `a`..`f`.
    let digits = |nibbles: u64| {
        let letters = ((nibbles + 6 * ONES) >> 4) & ONES;
        (nibbles + u64::from(b'0') * ONES + letters * u64::from(b'a' - b'0' - 10)).to_be_bytes()
    };
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&digits(spread((word >> 32) as u32)));
    out[8..].copy_from_slice(&digits(spread(word as u32)));
    out
}

/// An id as text. Its bytes are UTF-8 by construction (`&str` prefixes and tails, then
/// digits and letters from this module's ASCII tables), so they are not checked again:
/// about 90 instructions per id, on the seven ids of every response. Debug builds check.
fn text(bytes: Vec<u8>) -> String {
    debug_assert!(
        std::str::from_utf8(&bytes).is_ok(),
        "generated ids are UTF-8"
    );
    // SAFETY: the bytes are whole `&str`s and ASCII characters, so they are UTF-8.
    unsafe { String::from_utf8_unchecked(bytes) }
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
    fn hex_is_each_word_in_full_then_the_start_of_the_next() {
        let mut words = IdGen::new(3);
        let (a, b) = (words.next_u64(), words.next_u64());
        let expected = format!("{a:016x}{b:016x}");
        assert_eq!(IdGen::new(3).hex(32), expected);
        assert_eq!(IdGen::new(3).hex(24), expected[..24]);
        assert_eq!(IdGen::new(3).hex(7), expected[..7]);
    }

    #[test]
    fn drawn_characters_are_ten_digits_of_each_word() {
        let mut words = IdGen::new(9);
        let (first, second) = (words.next_u64(), words.next_u64());
        let digits = |mut word: u64, n: usize| -> String {
            (0..n)
                .map(|_| {
                    let digit = BASE62[(word % 62) as usize];
                    word /= 62;
                    char::from(digit)
                })
                .collect()
        };
        let mut drawn = IdGen::new(9);
        assert_eq!(drawn.base62(12), digits(first, 10) + &digits(second, 2));
        // Twelve characters took two words: the next draw is the third.
        assert_eq!(drawn.next_u64(), words.next_u64());
        let content = IdGen::new(9).encrypted_content();
        assert_eq!(content.len(), 160);
        assert!(content.starts_with("gAAAAABo") && content.ends_with("=="));
        assert!(content[8..158].bytes().all(|b| BASE64_URL.contains(&b)));
    }

    #[test]
    fn padding_is_base62_of_3_to_16_characters_from_one_word_each() {
        assert!(PADDING.iter().all(|b| BASE62.contains(b)));
        // Every character of the alphabet is in the pool, near its share.
        for c in BASE62 {
            let count = PADDING.iter().filter(|b| *b == c).count();
            assert!(
                (5..=35).contains(&count),
                "{} appears {count} times",
                char::from(*c)
            );
        }
        let (mut padding, mut words) = (IdGen::new(5), IdGen::new(5));
        let mut lengths = std::collections::BTreeSet::new();
        for _ in 0..2000 {
            let cut = padding.padding();
            words.next_u64();
            assert!((3..=16).contains(&cut.len()));
            lengths.insert(cut.len());
        }
        assert_eq!(lengths.len(), 14, "every length from 3 to 16 comes up");
        // One word per padding: the draws after it are the same.
        assert_eq!(padding.next_u64(), words.next_u64());
    }

    #[test]
    fn hex_digits_are_the_words_formatted() {
        let mut words = IdGen::new(11);
        let edges = [0, 1, 9, 10, 15, 16, u64::MAX, 0x0123_4567_89ab_cdef];
        for word in edges.into_iter().chain((0..1000).map(|_| words.next_u64())) {
            assert_eq!(hex_digits(word), format!("{word:016x}").as_bytes());
        }
    }

    #[test]
    fn a_skipped_item_id_draws_what_an_item_id_draws() {
        let (mut drawn, mut skipped) = (IdGen::new(5), IdGen::new(5));
        drawn.item_id("msg", 1, "0123456789abcdef");
        skipped.skip_item_id();
        assert_eq!(drawn.next_u64(), skipped.next_u64());
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
