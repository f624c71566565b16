//! JSON Web Token signatures over ring, as jsonwebtoken's [`CryptoProvider`]: ring is already
//! the process's TLS provider (src/http_client.rs), and jsonwebtoken's own providers would add
//! aws-lc-rs or the RustCrypto stack (whose `rsa` crate carries RUSTSEC-2023-0071) to the
//! package beside it. Every algorithm jsonwebtoken names, so that a program signing its own
//! tokens in the same process is served too; `OXP_AUTH=jwt` accepts HS256, RS256 and ES256.
//! The verifier installs it as the process's default unless the program installed one first
//! (which then serves both).

use jsonwebtoken::crypto::{CryptoProvider, JwtSigner, JwtVerifier, KeyUtils};
use jsonwebtoken::errors::{Error, ErrorKind, Result};
use jsonwebtoken::jwk::{EllipticCurve, ThumbprintHash};
use jsonwebtoken::signature::{self, Signer, Verifier};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, DecodingKeyKind, EncodingKey};
use ring::rand::SystemRandom;
use ring::signature::{self as sig, KeyPair as _};
use ring::{digest, hmac};

/// The provider.
pub(crate) static PROVIDER: CryptoProvider = CryptoProvider {
    signer_factory: signer,
    verifier_factory: verifier,
    key_utils: KeyUtils {
        rsa_pub_components_from_private_key: rsa_components,
        rsa_pub_components_from_public_key: rsa_public_components,
        ec_pub_components_from_private_key: ec_coordinates,
        ed_pub_components_from_private_key: ed_point,
        compute_digest: digest_of,
    },
};

/// Installs [`PROVIDER`] as the process's default, unless one is installed already.
pub(crate) fn install() {
    let _ = PROVIDER.install_default();
}

/// How ring computes an algorithm's signatures.
#[derive(Clone, Copy)]
enum Scheme {
    Hmac(hmac::Algorithm),
    Rsa(&'static sig::RsaParameters, &'static dyn sig::RsaEncoding),
    Ecdsa(
        &'static sig::EcdsaVerificationAlgorithm,
        &'static sig::EcdsaSigningAlgorithm,
    ),
    Ed25519,
}

/// `None`: an algorithm a later jsonwebtoken names (its enum is non-exhaustive) and this
/// provider does not know, which signs and verifies nothing.
fn scheme(alg: Algorithm) -> Option<Scheme> {
    use Algorithm::*;
    Some(match alg {
        HS256 => Scheme::Hmac(hmac::HMAC_SHA256),
        HS384 => Scheme::Hmac(hmac::HMAC_SHA384),
        HS512 => Scheme::Hmac(hmac::HMAC_SHA512),
        RS256 => Scheme::Rsa(&sig::RSA_PKCS1_2048_8192_SHA256, &sig::RSA_PKCS1_SHA256),
        RS384 => Scheme::Rsa(&sig::RSA_PKCS1_2048_8192_SHA384, &sig::RSA_PKCS1_SHA384),
        RS512 => Scheme::Rsa(&sig::RSA_PKCS1_2048_8192_SHA512, &sig::RSA_PKCS1_SHA512),
        PS256 => Scheme::Rsa(&sig::RSA_PSS_2048_8192_SHA256, &sig::RSA_PSS_SHA256),
        PS384 => Scheme::Rsa(&sig::RSA_PSS_2048_8192_SHA384, &sig::RSA_PSS_SHA384),
        PS512 => Scheme::Rsa(&sig::RSA_PSS_2048_8192_SHA512, &sig::RSA_PSS_SHA512),
        ES256 => Scheme::Ecdsa(
            &sig::ECDSA_P256_SHA256_FIXED,
            &sig::ECDSA_P256_SHA256_FIXED_SIGNING,
        ),
        ES384 => Scheme::Ecdsa(
            &sig::ECDSA_P384_SHA384_FIXED,
            &sig::ECDSA_P384_SHA384_FIXED_SIGNING,
        ),
        EdDSA => Scheme::Ed25519,
        _ => return None,
    })
}

/// Signs with one algorithm and one key.
struct Signs(Algorithm, EncodingKey);

/// Verifies with one algorithm and one key.
struct Verifies(Algorithm, DecodingKey);

fn signer(alg: &Algorithm, key: &EncodingKey) -> Result<Box<dyn JwtSigner>> {
    usable(alg, key.family())?;
    Ok(Box::new(Signs(*alg, key.clone())))
}

fn verifier(alg: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>> {
    usable(alg, key.family())?;
    Ok(Box::new(Verifies(*alg, key.clone())))
}

/// A key is used with its own family's algorithms only, and an algorithm this provider knows.
fn usable(alg: &Algorithm, family: AlgorithmFamily) -> Result<()> {
    if family != alg.family() {
        return Err(ErrorKind::InvalidKeyFormat.into());
    }
    match scheme(*alg) {
        Some(_) => Ok(()),
        None => Err(ErrorKind::InvalidAlgorithm.into()),
    }
}

impl Signer<Vec<u8>> for Signs {
    fn try_sign(&self, msg: &[u8]) -> std::result::Result<Vec<u8>, signature::Error> {
        let (rng, key) = (SystemRandom::new(), self.1.as_bytes());
        match scheme(self.0).ok_or_else(signature::Error::new)? {
            Scheme::Hmac(alg) => Ok(hmac::sign(&hmac::Key::new(alg, key), msg).as_ref().to_vec()),
            Scheme::Rsa(_, encoding) => {
                let pair = sig::RsaKeyPair::from_der(key)
                    .or_else(|_| sig::RsaKeyPair::from_pkcs8(key))
                    .map_err(failed)?;
                let mut out = vec![0; pair.public().modulus_len()];
                pair.sign(encoding, &rng, msg, &mut out).map_err(failed)?;
                Ok(out)
            }
            Scheme::Ecdsa(_, alg) => {
                let pair = sig::EcdsaKeyPair::from_pkcs8(alg, key, &rng).map_err(failed)?;
                Ok(pair.sign(&rng, msg).map_err(failed)?.as_ref().to_vec())
            }
            Scheme::Ed25519 => {
                let pair = sig::Ed25519KeyPair::from_pkcs8_maybe_unchecked(key).map_err(failed)?;
                Ok(pair.sign(msg).as_ref().to_vec())
            }
        }
    }
}

impl JwtSigner for Signs {
    fn algorithm(&self) -> Algorithm {
        self.0
    }
}

impl Verifier<Vec<u8>> for Verifies {
    fn verify(&self, msg: &[u8], signature: &Vec<u8>) -> std::result::Result<(), signature::Error> {
        let scheme = scheme(self.0).ok_or_else(signature::Error::new)?;
        let verified = match (scheme, self.1.kind()) {
            (Scheme::Hmac(alg), DecodingKeyKind::SecretOrDer(secret)) => {
                hmac::verify(&hmac::Key::new(alg, secret), msg, signature)
            }
            (Scheme::Rsa(alg, _), DecodingKeyKind::SecretOrDer(der)) => {
                sig::UnparsedPublicKey::new(alg, der).verify(msg, signature)
            }
            (Scheme::Rsa(alg, _), DecodingKeyKind::RsaModulusExponent { n, e }) => {
                sig::RsaPublicKeyComponents { n, e }.verify(alg, msg, signature)
            }
            (Scheme::Ecdsa(alg, _), DecodingKeyKind::SecretOrDer(point)) => {
                sig::UnparsedPublicKey::new(alg, point).verify(msg, signature)
            }
            (Scheme::Ed25519, DecodingKeyKind::SecretOrDer(point)) => {
                sig::UnparsedPublicKey::new(&sig::ED25519, point).verify(msg, signature)
            }
            _ => return Err(signature::Error::new()),
        };
        verified.map_err(failed)
    }
}

impl JwtVerifier for Verifies {
    fn algorithm(&self) -> Algorithm {
        self.0
    }
}

/// ring's errors say nothing more than that it failed.
fn failed<E>(_: E) -> signature::Error {
    signature::Error::new()
}

fn rsa_components(der: &[u8]) -> Result<(Vec<u8>, Vec<u8>)> {
    let pair = sig::RsaKeyPair::from_der(der)
        .or_else(|_| sig::RsaKeyPair::from_pkcs8(der))
        .map_err(|e| Error::from(ErrorKind::InvalidRsaKey(e.to_string())))?;
    let public = sig::RsaPublicKeyComponents::<Vec<u8>>::from(pair.public());
    Ok((public.n, public.e))
}

/// An RSA public key's modulus and exponent, from its DER `RSAPublicKey` (the form
/// jsonwebtoken keeps: a PEM's SubjectPublicKeyInfo is unwrapped when it is read).
fn rsa_public_components(der: &[u8]) -> Result<(Vec<u8>, Vec<u8>)> {
    use simple_asn1::ASN1Block::{Integer, Sequence};
    let invalid = || Error::from(ErrorKind::InvalidRsaKey("not an RSAPublicKey".into()));
    let blocks = simple_asn1::from_der(der).map_err(|_| invalid())?;
    let zero = simple_asn1::BigInt::default();
    match blocks.as_slice() {
        [Sequence(_, parts)] => match parts.as_slice() {
            [Integer(_, n), Integer(_, e)] if *n > zero && *e > zero => {
                Ok((n.to_bytes_be().1, e.to_bytes_be().1))
            }
            _ => Err(invalid()),
        },
        _ => Err(invalid()),
    }
}

/// An Ed25519 private key's (PKCS#8) public point.
fn ed_point(der: &[u8], curve: &EllipticCurve) -> Result<Vec<u8>> {
    if *curve != EllipticCurve::Ed25519 {
        return Err(ErrorKind::InvalidAlgorithm.into());
    }
    let pair = sig::Ed25519KeyPair::from_pkcs8_maybe_unchecked(der)
        .map_err(|_| ErrorKind::InvalidEddsaKey)?;
    Ok(pair.public_key().as_ref().to_vec())
}

fn ec_coordinates(der: &[u8], alg: Algorithm) -> Result<(EllipticCurve, Vec<u8>, Vec<u8>)> {
    let (curve, width) = match alg {
        Algorithm::ES256 => (EllipticCurve::P256, 32),
        Algorithm::ES384 => (EllipticCurve::P384, 48),
        _ => return Err(ErrorKind::InvalidEcdsaKey.into()),
    };
    let Some(Scheme::Ecdsa(_, signing)) = scheme(alg) else {
        return Err(ErrorKind::InvalidEcdsaKey.into());
    };
    let pair = sig::EcdsaKeyPair::from_pkcs8(signing, der, &SystemRandom::new())
        .map_err(|_| ErrorKind::InvalidEcdsaKey)?;
    match pair.public_key().as_ref().split_first() {
        Some((4, point)) if point.len() == 2 * width => {
            let (x, y) = point.split_at(width);
            Ok((curve, x.to_vec(), y.to_vec()))
        }
        _ => Err(ErrorKind::InvalidEcdsaKey.into()),
    }
}

fn digest_of(data: &[u8], hash: ThumbprintHash) -> Result<Vec<u8>> {
    let alg = match hash {
        ThumbprintHash::SHA256 => &digest::SHA256,
        ThumbprintHash::SHA384 => &digest::SHA384,
        ThumbprintHash::SHA512 => &digest::SHA512,
        _ => return Err(ErrorKind::InvalidAlgorithm.into()),
    };
    Ok(digest::digest(alg, data).as_ref().to_vec())
}

#[cfg(test)]
#[path = "jwt_crypto_tests.rs"]
mod tests;
