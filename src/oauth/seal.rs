//! Sealing: AES-256-GCM (ring) under a key derived with HKDF-SHA256 from the server's
//! `OAUTH_KEY` secret, so every execution environment opens what another sealed. The same key
//! seals flow state (links, the provider's `state`) and the vault's records, each under its
//! own associated data: a sealed value opens only for the purpose, and the vault key, it was
//! sealed for, so a record copied to another user's key does not open.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hkdf::{HKDF_SHA256, Salt};
use ring::rand::{SecureRandom, SystemRandom};

/// The sealing key.
pub(crate) struct Keys {
    key: LessSafeKey,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys(..)")
    }
}

const INFO: &[u8] = b"oxp-lambda oauth v1";

impl Keys {
    /// Keys derived from the secret `material` (any length; 32 random bytes or more advised).
    pub(crate) fn derive(material: &[u8]) -> Self {
        let prk = Salt::new(HKDF_SHA256, b"oxp-lambda").extract(material);
        let okm = prk
            .expand(&[INFO], &AES_256_GCM)
            .expect("AES-256 is a valid HKDF output length");
        Self {
            key: LessSafeKey::new(UnboundKey::from(okm)),
        }
    }

    /// Keys from fresh random material: for a local server whose secret source holds no
    /// `OAUTH_KEY` (its memory vault dies with it anyway).
    pub(crate) fn random() -> Self {
        Self::derive(&random_bytes::<32>())
    }

    /// `plain` sealed for `purpose`: a random nonce, then the ciphertext and its tag.
    pub(crate) fn seal(&self, purpose: &str, plain: &[u8]) -> Vec<u8> {
        let nonce = random_bytes::<NONCE_LEN>();
        let mut out = Vec::with_capacity(NONCE_LEN + plain.len() + 16);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(plain);
        let tag = self
            .key
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(purpose.as_bytes()),
                &mut out[NONCE_LEN..],
            )
            .expect("sealing a bounded value cannot fail");
        out.extend_from_slice(tag.as_ref());
        out
    }

    /// What `sealed` holds, if it was sealed by this key for `purpose` and not altered.
    pub(crate) fn open(&self, purpose: &str, sealed: &[u8]) -> Option<Vec<u8>> {
        if sealed.len() < NONCE_LEN + 16 {
            return None;
        }
        let (nonce, rest) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut buf = rest.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(purpose.as_bytes()), &mut buf)
            .ok()?;
        Some(plain.to_vec())
    }

    /// [`Keys::seal`] as URL-safe text.
    pub(crate) fn seal_text(&self, purpose: &str, plain: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(self.seal(purpose, plain))
    }

    /// [`Keys::open`] of URL-safe text (bounded: a link's token is short).
    pub(crate) fn open_text(&self, purpose: &str, text: &str) -> Option<Vec<u8>> {
        if text.len() > 4096 {
            return None;
        }
        self.open(purpose, &URL_SAFE_NO_PAD.decode(text).ok()?)
    }
}

/// `N` random bytes from the system's generator.
pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    SystemRandom::new()
        .fill(&mut bytes)
        .expect("the system random generator works");
    bytes
}

/// A random URL-safe token of 32 bytes.
pub(crate) fn random_token() -> String {
    URL_SAFE_NO_PAD.encode(random_bytes::<32>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_value_opens_only_with_its_key_and_purpose_and_unaltered() {
        let keys = Keys::derive(b"a shared secret");
        let sealed = keys.seal("token:github:alice", b"gho_secret");
        assert_eq!(
            keys.open("token:github:alice", &sealed).as_deref(),
            Some(&b"gho_secret"[..])
        );
        assert!(keys.open("token:github:bob", &sealed).is_none());
        assert!(
            Keys::derive(b"another secret")
                .open("token:github:alice", &sealed)
                .is_none()
        );
        let mut altered = sealed.clone();
        *altered.last_mut().unwrap() ^= 1;
        assert!(keys.open("token:github:alice", &altered).is_none());
        assert!(!String::from_utf8_lossy(&sealed).contains("gho_secret"));
    }

    #[test]
    fn a_value_sealed_before_the_move_to_ring_still_opens() {
        // Until 2026-11-30 sealing was aws-lc-rs's: the vault's records and the links sealed
        // then must open after an upgrade. Sealed here by aws-lc-rs as that code did.
        use aws_lc_rs::aead as lc;
        use aws_lc_rs::hkdf as lc_hkdf;
        let prk =
            lc_hkdf::Salt::new(lc_hkdf::HKDF_SHA256, b"oxp-lambda").extract(b"a shared secret");
        let okm = prk.expand(&[INFO], &lc::AES_256_GCM).unwrap();
        let key = lc::LessSafeKey::new(lc::UnboundKey::from(okm));
        let nonce = [7u8; NONCE_LEN];
        let mut sealed = [&nonce[..], b"gho_secret"].concat();
        let tag = key
            .seal_in_place_separate_tag(
                lc::Nonce::assume_unique_for_key(nonce),
                lc::Aad::from(&b"token:github:alice"[..]),
                &mut sealed[NONCE_LEN..],
            )
            .unwrap();
        sealed.extend_from_slice(tag.as_ref());
        let keys = Keys::derive(b"a shared secret");
        assert_eq!(
            keys.open("token:github:alice", &sealed).as_deref(),
            Some(&b"gho_secret"[..])
        );
    }

    #[test]
    fn the_same_secret_derives_the_same_key_in_every_environment() {
        let sealed = Keys::derive(b"k").seal_text("state", b"x");
        assert_eq!(
            Keys::derive(b"k").open_text("state", &sealed).as_deref(),
            Some(&b"x"[..])
        );
        assert!(Keys::random().open_text("state", &sealed).is_none());
        assert!(
            Keys::derive(b"k")
                .open_text("state", "not base64 !")
                .is_none()
        );
    }
}
