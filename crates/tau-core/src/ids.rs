//! Ids nobody can guess: an approval id is what an answer names, so it must not be
//! predictable from the outside.

use std::fmt::Write;

/// No randomness could be had from the operating system.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the operating system gave no randomness: {0}")]
pub struct NoRandomness(#[source] getrandom::Error);

/// A new approval id: `ap_` and 128 random bits; `None` when there is no randomness.
pub fn new_approval_id() -> Option<tau_protocol::ApprovalId> {
    tau_protocol::ApprovalId::parse(&random_id("ap").ok()?).ok()
}

/// `{prefix}_` and 128 random bits as 32 lowercase hex digits.
pub fn random_id(prefix: &str) -> Result<String, NoRandomness> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(NoRandomness)?;
    let mut id = String::with_capacity(prefix.len() + 33);
    id.push_str(prefix);
    id.push('_');
    for byte in bytes {
        let _ = write!(id, "{byte:02x}");
    }
    Ok(id)
}

/// Two random digits, `10` to `99`: the number a person types or presses to pass a
/// question's second step. Drawn anew for every question, so no answer carries over.
pub fn random_code() -> Result<String, NoRandomness> {
    let mut bytes = [0u8; 2];
    getrandom::fill(&mut bytes).map_err(NoRandomness)?;
    // 65536 = 90 * 728 + 16: drop the 16 values past the last whole round, so every
    // number is equally likely.
    loop {
        let value = u16::from_le_bytes(bytes);
        if value < 90 * 728 {
            return Ok((10 + value % 90).to_string());
        }
        getrandom::fill(&mut bytes).map_err(NoRandomness)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_the_prefix_and_128_bits_and_differ() {
        let a = random_id("ap").unwrap();
        let b = random_id("ap").unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 35);
        assert!(a.starts_with("ap_"));
        assert!(
            a[3..]
                .bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
    }

    #[test]
    fn codes_are_two_digits_and_vary() {
        let codes: std::collections::BTreeSet<String> =
            (0..200).map(|_| random_code().unwrap()).collect();
        assert!(
            codes
                .iter()
                .all(|c| c.len() == 2 && (10..=99).contains(&c.parse::<u32>().unwrap()))
        );
        assert!(codes.len() > 20, "{codes:?}");
    }
}
