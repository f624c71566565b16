//! The ring provider against jsonwebtoken's own aws-lc-rs provider: what either signs, the
//! other verifies, for every algorithm; an altered token or another key's is refused.

use super::*;
use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::signature::{self as lc, KeyPair as _};
use jsonwebtoken::crypto::aws_lc::DEFAULT_PROVIDER as AWS_LC;

fn pem(label: &str, der: &[u8]) -> Vec<u8> {
    use base64::Engine;
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    format!("-----BEGIN {label}-----\n{body}\n-----END {label}-----\n").into_bytes()
}

/// A fresh key pair for `alg`, made by aws-lc-rs, as jsonwebtoken's keys.
fn keys(alg: Algorithm) -> (EncodingKey, DecodingKey) {
    match scheme(alg).unwrap() {
        Scheme::Hmac(_) => {
            let secret = b"a secret of thirty-two bytes or more, for HS512 too".as_slice();
            (
                EncodingKey::from_secret(secret).unwrap(),
                DecodingKey::from_secret(secret).unwrap(),
            )
        }
        Scheme::Rsa(..) => {
            let pair = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
            let der = AsDer::<aws_lc_rs::encoding::Pkcs8V1Der<'_>>::as_der(&pair).unwrap();
            let private = EncodingKey::from_rsa_pem(&pem("PRIVATE KEY", der.as_ref())).unwrap();
            // The JWKS form (modulus and exponent), through this provider's JWK helper.
            let (n, e) = rsa_components(private.as_bytes()).unwrap();
            (private, DecodingKey::from_rsa_raw_components(&n, &e))
        }
        Scheme::Ecdsa(..) => {
            let signing = if alg == Algorithm::ES256 {
                &lc::ECDSA_P256_SHA256_FIXED_SIGNING
            } else {
                &lc::ECDSA_P384_SHA384_FIXED_SIGNING
            };
            let pair = lc::EcdsaKeyPair::generate(signing).unwrap();
            let der = pair.to_pkcs8v1().unwrap();
            let private = EncodingKey::from_ec_pem(&pem("PRIVATE KEY", der.as_ref())).unwrap();
            let (_, x, y) = ec_coordinates(private.as_bytes(), alg).unwrap();
            let point = [&[4u8][..], &x, &y].concat();
            assert_eq!(point, pair.public_key().as_ref(), "the JWK helper's point");
            (private, DecodingKey::from_ec_der(&point))
        }
        Scheme::Ed25519 => {
            let pair = lc::Ed25519KeyPair::generate().unwrap();
            let der = pair.to_pkcs8v1().unwrap();
            let private = EncodingKey::from_ed_der(der.as_ref());
            (
                private,
                DecodingKey::from_ed_der(pair.public_key().as_ref()),
            )
        }
    }
}

fn sign(by: &CryptoProvider, alg: Algorithm, key: &EncodingKey, msg: &[u8]) -> Vec<u8> {
    (by.signer_factory)(&alg, key)
        .unwrap()
        .try_sign(msg)
        .unwrap()
}

fn verifies(
    by: &CryptoProvider,
    alg: Algorithm,
    key: &DecodingKey,
    msg: &[u8],
    sig: &[u8],
) -> bool {
    (by.verifier_factory)(&alg, key)
        .unwrap()
        .verify(msg, &sig.to_vec())
        .is_ok()
}

const EVERY: [Algorithm; 12] = {
    use Algorithm::*;
    [
        HS256, HS384, HS512, RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, EdDSA,
    ]
};

#[test]
fn what_either_provider_signs_the_other_verifies_for_every_algorithm() {
    let msg = b"eyJhbGciOi.eyJzdWIiOiJhbGljZSJ9";
    for alg in EVERY {
        let (private, public) = keys(alg);
        let ours = sign(&PROVIDER, alg, &private, msg);
        assert!(
            verifies(&AWS_LC, alg, &public, msg, &ours),
            "{alg:?} by ring"
        );
        let theirs = sign(&AWS_LC, alg, &private, msg);
        assert!(
            verifies(&PROVIDER, alg, &public, msg, &theirs),
            "{alg:?} by aws-lc"
        );
        assert!(
            verifies(&PROVIDER, alg, &public, msg, &ours),
            "{alg:?} round trip"
        );
    }
}

#[test]
fn an_altered_message_or_signature_or_another_key_is_refused() {
    let msg = b"eyJhbGciOi.eyJzdWIiOiJhbGljZSJ9";
    for alg in EVERY {
        let (private, public) = keys(alg);
        let (_, other) = if matches!(scheme(alg), Some(Scheme::Hmac(_))) {
            (
                EncodingKey::from_secret(b"x").unwrap(),
                DecodingKey::from_secret(b"another secret entirely, also long").unwrap(),
            )
        } else {
            keys(alg)
        };
        let mut signature = sign(&AWS_LC, alg, &private, msg);
        assert!(!verifies(
            &PROVIDER,
            alg,
            &public,
            b"eyJhbGciOi.eyJzdWIiOiJib2IifQ",
            &signature
        ));
        assert!(
            !verifies(&PROVIDER, alg, &other, msg, &signature),
            "{alg:?}: another key"
        );
        signature[3] ^= 1;
        assert!(
            !verifies(&PROVIDER, alg, &public, msg, &signature),
            "{alg:?}: altered"
        );
        assert!(
            !verifies(&PROVIDER, alg, &public, msg, &[]),
            "{alg:?}: empty"
        );
    }
}

#[test]
fn a_key_of_another_family_is_refused_before_any_signature_is_read() {
    let secret = DecodingKey::from_secret(b"a secret").unwrap();
    for alg in [Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA] {
        let refused = (PROVIDER.verifier_factory)(&alg, &secret).err().unwrap();
        assert!(
            matches!(refused.kind(), ErrorKind::InvalidKeyFormat),
            "{alg:?}"
        );
    }
    let (rsa, _) = keys(Algorithm::RS256);
    assert!((PROVIDER.signer_factory)(&Algorithm::HS256, &rsa).is_err());
}

#[test]
fn thumbprints_hash_as_jsonwebtoken_own_provider_does() {
    for hash in [
        ThumbprintHash::SHA256,
        ThumbprintHash::SHA384,
        ThumbprintHash::SHA512,
    ] {
        let ours = (PROVIDER.key_utils.compute_digest)(b"{\"e\":\"AQAB\"}", hash.clone());
        let theirs = (AWS_LC.key_utils.compute_digest)(b"{\"e\":\"AQAB\"}", hash);
        assert_eq!(ours, theirs);
    }
}

#[test]
fn jwk_helpers_read_public_keys_as_jsonwebtoken_own_provider_does() {
    // An RSA public key as jsonwebtoken keeps it (DER RSAPublicKey): its modulus and exponent.
    let pair = lc::RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
    let der = pair.public_key().as_ref();
    let ours = (PROVIDER.key_utils.rsa_pub_components_from_public_key)(der).unwrap();
    let theirs = (AWS_LC.key_utils.rsa_pub_components_from_public_key)(der).unwrap();
    assert_eq!(ours, theirs);
    assert!(
        (PROVIDER.key_utils.rsa_pub_components_from_public_key)(b"\x30\x03\x02\x01\x01").is_err()
    );
    // An Ed25519 private key's public point.
    let der = lc::Ed25519KeyPair::generate()
        .unwrap()
        .to_pkcs8v1()
        .unwrap();
    let curve = EllipticCurve::Ed25519;
    let ours = (PROVIDER.key_utils.ed_pub_components_from_private_key)(der.as_ref(), &curve);
    let theirs = (AWS_LC.key_utils.ed_pub_components_from_private_key)(der.as_ref(), &curve);
    assert_eq!(ours.unwrap(), theirs.unwrap());
}
