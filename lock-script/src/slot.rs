//! Hash slots: which of Redis Cluster's 16 384 slots a key (or channel)
//! lives in. Here, below every transport, because the cluster routes by slot
//! and a single node behind a slot-checking proxy groups keys by slot.
//!
//! `slot = CRC16/XMODEM(tag) mod 16384`, where `tag` is the text between the
//! first `{` and the first `}` after it when that text is non-empty, and
//! the whole key otherwise; exactly as Redis Cluster computes it.

/// The number of hash slots of a Redis Cluster.
pub const SLOTS: u16 = 16384;

/// The part of `key` that is hashed: its hash tag, or the whole key.
///
/// ```
/// use lock_script::slot::hash_tag;
/// assert_eq!(hash_tag(b"redisson_lock__channel:{orders}"), b"orders");
/// assert_eq!(hash_tag(b"orders"), b"orders");
/// assert_eq!(hash_tag(b"a{}b"), b"a{}b"); // an empty tag does not count
/// assert_eq!(hash_tag(b"a{b{c}d}"), b"b{c");
/// ```
pub fn hash_tag(key: &[u8]) -> &[u8] {
    let Some(open) = key.iter().position(|&b| b == b'{') else {
        return key;
    };
    let rest = &key[open + 1..];
    match rest.iter().position(|&b| b == b'}') {
        Some(close) if close > 0 => &rest[..close],
        _ => key,
    }
}

/// The hash slot of `key`.
///
/// ```
/// use lock_script::slot::key_slot;
/// assert_eq!(key_slot("foo"), 12182);
/// assert_eq!(key_slot("{foo}:lock"), 12182);
/// ```
pub fn key_slot(key: &str) -> u16 {
    crc16(hash_tag(key.as_bytes())) % SLOTS
}

/// CRC16/XMODEM (polynomial 0x1021, initial value 0, no reflection), the
/// checksum Redis Cluster uses.
pub fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, &byte| {
        let index = ((crc >> 8) ^ u16::from(byte)) & 0xff;
        (crc << 8) ^ TABLE[usize::from(index)]
    })
}

const TABLE: [u16; 256] = table();

const fn table() -> [u16; 256] {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        // `i < 256`, so the cast is lossless.
        #[allow(clippy::cast_possible_truncation)]
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_matches_the_xmodem_check_value() {
        // The standard check input of CRC catalogues.
        assert_eq!(crc16(b"123456789"), 0x31c3);
        assert_eq!(crc16(b""), 0);
    }

    #[test]
    fn known_slots_from_the_cluster_spec_and_redis() {
        // Values as `CLUSTER KEYSLOT` gives them.
        assert_eq!(key_slot("foo"), 12182);
        assert_eq!(key_slot("bar"), 5061);
        assert_eq!(key_slot("somekey"), 11058);
        assert_eq!(key_slot("{user1000}.following"), key_slot("user1000"));
        assert_eq!(key_slot("{user1000}.followers"), key_slot("user1000"));
        assert_eq!(key_slot("foo{}{bar}"), key_slot("foo{}{bar}"));
        assert_eq!(key_slot("foo{{bar}}zap"), key_slot("{bar"));
        assert_eq!(key_slot("foo{bar}{zap}"), key_slot("bar"));
        assert_eq!(key_slot(""), 0);
    }

    #[test]
    fn tags_follow_the_first_brace_pair() {
        assert_eq!(hash_tag(b"{}"), b"{}");
        assert_eq!(hash_tag(b"{"), b"{");
        assert_eq!(hash_tag(b"}{"), b"}{");
        assert_eq!(hash_tag(b"x{y}"), b"y");
        assert_eq!(hash_tag(b"{y}x{z}"), b"y");
    }
}
