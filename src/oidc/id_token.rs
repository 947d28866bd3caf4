//! ID-token validation: the signature with `jsonwebtoken`, against the provider's JWKS (or the
//! client secret, for HS256 where configured), then the claims OpenID Connect Core §3.1.3.7 asks
//! a client to check.

use chrono::{DateTime, Utc};
use jsonwebtoken::{
    Algorithm, DecodingKey, Validation,
    errors::ErrorKind,
    jwk::{AlgorithmParameters, Jwk, JwkSet, KeyAlgorithm, PublicKeyUse},
};
use serde::Deserialize;

use super::{Identity, OidcError};

/// Clock skew tolerated on `exp`.
const LEEWAY_SECS: i64 = 60;

/// What the token must say, and the keys it may be signed with.
pub(crate) struct Expected<'a> {
    pub issuer: &'a str,
    pub client_id: &'a str,
    pub nonce: &'a str,
    pub now: DateTime<Utc>,
    /// The provider's public keys; `None` when no JWKS is known (hand-configured endpoints
    /// without `auth.jwks_uri`), which refuses every asymmetric signature.
    pub keys: Option<&'a JwkSet>,
    /// The client secret, when HS256 ID tokens are allowed (`auth.allow_hs256_id_tokens`).
    pub hs256_secret: Option<&'a str>,
}

#[derive(Deserialize)]
struct Claims {
    iss: String,
    sub: String,
    aud: Audience,
    exp: i64,
    azp: Option<String>,
    nonce: Option<String>,
    email: Option<String>,
    /// A boolean by the spec; a few providers send the string `"true"`.
    email_verified: Option<serde_json::Value>,
    name: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

impl Audience {
    fn as_slice(&self) -> &[String] {
        match self {
            Self::One(aud) => std::slice::from_ref(aud),
            Self::Many(auds) => auds,
        }
    }
}

/// The algorithm a token's header names, if we verify that kind at all. `none` is not in
/// `jsonwebtoken`'s list, so such a header fails to parse and is refused here.
fn header_algorithm(token: &str) -> Result<(Algorithm, Option<String>), OidcError> {
    let header = jsonwebtoken::decode_header(token)
        .map_err(|_| OidcError::InvalidIdToken("unsigned, or not a signed JWT"))?;
    Ok((header.alg, header.kid))
}

/// Whether the token names a `kid` that `keys` lacks (a rotation the cache has not seen yet).
pub(crate) fn names_unknown_kid(token: &str, keys: &JwkSet) -> bool {
    match header_algorithm(token) {
        Ok((_, Some(kid))) => keys.find(&kid).is_none(),
        _ => false,
    }
}

/// Whether `jwk` may verify a signature made with `alg`: a public key of the algorithm's family,
/// for signing, not restricted to another algorithm. Symmetric (`oct`) keys are never taken
/// from a JWKS: that document is public.
fn fits(jwk: &Jwk, alg: Algorithm) -> bool {
    let family_fits = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => matches!(
            alg,
            Algorithm::RS256
                | Algorithm::RS384
                | Algorithm::RS512
                | Algorithm::PS256
                | Algorithm::PS384
                | Algorithm::PS512
        ),
        AlgorithmParameters::EllipticCurve(_) => {
            matches!(alg, Algorithm::ES256 | Algorithm::ES384)
        }
        AlgorithmParameters::OctetKeyPair(_) => alg == Algorithm::EdDSA,
        // `oct` and whatever kinds the crate adds later.
        _ => false,
    };
    let use_fits = jwk
        .common
        .public_key_use
        .as_ref()
        .is_none_or(|key_use| *key_use == PublicKeyUse::Signature);
    let alg_fits = jwk
        .common
        .key_algorithm
        .is_none_or(|key_alg| key_algorithm_is(key_alg, alg));
    family_fits && use_fits && alg_fits
}

fn key_algorithm_is(key_alg: KeyAlgorithm, alg: Algorithm) -> bool {
    matches!(
        (key_alg, alg),
        (KeyAlgorithm::RS256, Algorithm::RS256)
            | (KeyAlgorithm::RS384, Algorithm::RS384)
            | (KeyAlgorithm::RS512, Algorithm::RS512)
            | (KeyAlgorithm::PS256, Algorithm::PS256)
            | (KeyAlgorithm::PS384, Algorithm::PS384)
            | (KeyAlgorithm::PS512, Algorithm::PS512)
            | (KeyAlgorithm::ES256, Algorithm::ES256)
            | (KeyAlgorithm::ES384, Algorithm::ES384)
            | (KeyAlgorithm::EdDSA, Algorithm::EdDSA)
    )
}

/// The keys that may have signed the token: HS256's client secret when allowed, otherwise the
/// JWKS entries of the header's `kid` (every fitting entry when the header names none).
fn candidate_keys(
    alg: Algorithm,
    kid: Option<&str>,
    expected: &Expected<'_>,
) -> Result<Vec<DecodingKey>, OidcError> {
    match alg {
        Algorithm::HS256 => {
            let secret = expected.hs256_secret.ok_or(OidcError::InvalidIdToken(
                "HS256 ID tokens are not accepted from this provider",
            ))?;
            let key = DecodingKey::from_secret(secret.as_bytes())
                .map_err(|_| OidcError::InvalidIdToken("unusable client secret"))?;
            Ok(vec![key])
        }
        Algorithm::HS384 | Algorithm::HS512 => Err(OidcError::InvalidIdToken(
            "HMAC ID tokens other than HS256 are not accepted",
        )),
        _ => {
            let keys = expected.keys.ok_or(OidcError::InvalidIdToken(
                "no JWKS is known for this provider (set auth.jwks_uri)",
            ))?;
            let keys: Vec<DecodingKey> = keys
                .keys
                .iter()
                .filter(|jwk| kid.is_none_or(|kid| jwk.common.key_id.as_deref() == Some(kid)))
                .filter(|jwk| fits(jwk, alg))
                .filter_map(|jwk| DecodingKey::from_jwk(jwk).ok())
                .collect();
            if keys.is_empty() {
                return Err(OidcError::InvalidIdToken(
                    "no key in the provider's JWKS fits the token",
                ));
            }
            Ok(keys)
        }
    }
}

/// Verifies `token`'s signature and claims; the signed-in identity if all hold.
pub(crate) fn validate(token: &str, expected: &Expected<'_>) -> Result<Identity, OidcError> {
    let (alg, kid) = header_algorithm(token)?;
    let keys = candidate_keys(alg, kid.as_deref(), expected)?;
    // Only the signature and the audience here; the other claims are checked below, `exp`
    // against the service's clock rather than the system's.
    let mut validation = Validation::new(alg);
    validation.validate_exp = false;
    validation.set_required_spec_claims(&["iss", "sub", "aud", "exp"]);
    validation.set_audience(&[expected.client_id]);
    let mut verified = None;
    for key in &keys {
        match jsonwebtoken::decode::<Claims>(token, key, &validation) {
            Ok(data) => {
                verified = Some(data.claims);
                break;
            }
            // Another key of the same `kid` (or of none) may still fit.
            Err(err) if matches!(err.kind(), ErrorKind::InvalidSignature) => {}
            Err(err) => return Err(refusal(err.kind())),
        }
    }
    let claims = verified.ok_or(OidcError::InvalidIdToken("bad signature"))?;
    check_claims(claims, expected)
}

fn refusal(kind: &ErrorKind) -> OidcError {
    OidcError::InvalidIdToken(match kind {
        ErrorKind::InvalidAudience => "audience mismatch",
        ErrorKind::MissingRequiredClaim(_) => "a required claim is missing",
        ErrorKind::InvalidAlgorithm => "the algorithm does not fit the key",
        ErrorKind::InvalidSignature => "bad signature",
        _ => "malformed token",
    })
}

fn check_claims(claims: Claims, expected: &Expected<'_>) -> Result<Identity, OidcError> {
    let issuer = expected.issuer.trim_end_matches('/');
    if claims.iss.trim_end_matches('/') != issuer {
        return Err(OidcError::InvalidIdToken("issuer mismatch"));
    }
    let audiences = claims.aud.as_slice();
    if !audiences.iter().any(|aud| aud == expected.client_id) {
        return Err(OidcError::InvalidIdToken("audience mismatch"));
    }
    // Core §3.1.3.7 items 4 and 5: with several audiences the token must say it was issued to
    // us, and an `azp` naming another client is refused whatever the audience.
    match claims.azp.as_deref() {
        Some(azp) if azp != expected.client_id => {
            return Err(OidcError::InvalidIdToken("authorized party mismatch"));
        }
        None if audiences.len() > 1 => {
            return Err(OidcError::InvalidIdToken(
                "several audiences and no authorized party",
            ));
        }
        _ => {}
    }
    if claims.exp + LEEWAY_SECS < expected.now.timestamp() {
        return Err(OidcError::InvalidIdToken("expired"));
    }
    if claims.nonce.as_deref() != Some(expected.nonce) {
        return Err(OidcError::InvalidIdToken("nonce mismatch"));
    }
    if claims.sub.is_empty() {
        return Err(OidcError::InvalidIdToken("empty subject"));
    }
    let email_verified = match &claims.email_verified {
        Some(serde_json::Value::Bool(verified)) => *verified,
        Some(serde_json::Value::String(verified)) => verified.eq_ignore_ascii_case("true"),
        _ => false,
    };
    Ok(Identity {
        issuer: issuer.to_string(),
        subject: claims.sub,
        email_verified: email_verified && claims.email.is_some(),
        email: claims.email,
        name: claims.name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{EncodingKey, Header};
    use serde_json::{Value, json};

    const RSA_A: &str = include_str!("../../tests/fixtures/oidc/rsa_a.pem");
    const RSA_B: &str = include_str!("../../tests/fixtures/oidc/rsa_b.pem");
    const EC_P256: &str = include_str!("../../tests/fixtures/oidc/ec_p256.pem");
    const ISSUER: &str = "https://idp.example.com";
    const CLIENT: &str = "client";
    const NONCE: &str = "n1";

    fn rsa(pem: &str) -> EncodingKey {
        EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap()
    }

    fn ec() -> EncodingKey {
        EncodingKey::from_ec_pem(EC_P256.as_bytes()).unwrap()
    }

    fn jwk(key: &EncodingKey, alg: Algorithm, kid: &str) -> Jwk {
        let mut jwk = Jwk::from_encoding_key(key, alg).unwrap();
        jwk.common.key_id = Some(kid.into());
        jwk
    }

    /// The provider's published keys: RSA key A as `rsa-1`, the EC key as `ec-1`.
    fn published() -> JwkSet {
        JwkSet {
            keys: vec![
                jwk(&rsa(RSA_A), Algorithm::RS256, "rsa-1"),
                jwk(&ec(), Algorithm::ES256, "ec-1"),
            ],
        }
    }

    fn claims(now: DateTime<Utc>) -> Value {
        json!({"iss": ISSUER, "sub": "u1", "aud": CLIENT, "exp": now.timestamp() + 300,
               "iat": now.timestamp(), "nonce": NONCE, "email": "a@example.com",
               "email_verified": true})
    }

    fn sign(claims: &Value, alg: Algorithm, kid: Option<&str>, key: &EncodingKey) -> String {
        let mut header = Header::new(alg);
        header.kid = kid.map(str::to_string);
        jsonwebtoken::encode(&header, claims, key).unwrap()
    }

    fn check(token: &str, keys: &JwkSet, now: DateTime<Utc>) -> Result<Identity, OidcError> {
        validate(
            token,
            &Expected {
                issuer: ISSUER,
                client_id: CLIENT,
                nonce: NONCE,
                now,
                keys: Some(keys),
                hs256_secret: None,
            },
        )
    }

    fn refusal_of(result: Result<Identity, OidcError>) -> &'static str {
        match result {
            Err(OidcError::InvalidIdToken(why)) => why,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn an_rs256_token_signed_with_a_published_key_is_accepted() {
        let now = Utc::now();
        let token = sign(&claims(now), Algorithm::RS256, Some("rsa-1"), &rsa(RSA_A));
        let identity = check(&token, &published(), now).unwrap();
        assert_eq!(identity.subject, "u1");
        assert_eq!(identity.issuer, ISSUER);
        assert_eq!(identity.email.as_deref(), Some("a@example.com"));
        assert!(identity.email_verified);
    }

    #[test]
    fn an_es256_token_signed_with_a_published_key_is_accepted() {
        let now = Utc::now();
        let token = sign(&claims(now), Algorithm::ES256, Some("ec-1"), &ec());
        assert_eq!(check(&token, &published(), now).unwrap().subject, "u1");
    }

    #[test]
    fn a_token_without_a_kid_is_tried_against_each_fitting_key() {
        let now = Utc::now();
        let token = sign(&claims(now), Algorithm::RS256, None, &rsa(RSA_A));
        assert_eq!(check(&token, &published(), now).unwrap().subject, "u1");
    }

    #[test]
    fn an_unsigned_token_is_refused() {
        use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
        let now = Utc::now();
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
        let payload = URL_SAFE_NO_PAD.encode(claims(now).to_string());
        for token in [
            format!("{header}.{payload}."),
            format!("{header}.{payload}"),
        ] {
            assert_eq!(
                refusal_of(check(&token, &published(), now)),
                "unsigned, or not a signed JWT"
            );
        }
    }

    #[test]
    fn a_token_signed_with_another_key_is_refused() {
        let now = Utc::now();
        // Key B under the published key A's `kid`, and under no `kid` at all.
        for kid in [Some("rsa-1"), None] {
            let token = sign(&claims(now), Algorithm::RS256, kid, &rsa(RSA_B));
            assert_eq!(
                refusal_of(check(&token, &published(), now)),
                "bad signature"
            );
        }
    }

    #[test]
    fn a_kid_the_jwks_lacks_is_refused_and_reported_unknown() {
        let now = Utc::now();
        let token = sign(&claims(now), Algorithm::RS256, Some("rsa-2"), &rsa(RSA_B));
        assert!(names_unknown_kid(&token, &published()));
        assert_eq!(
            refusal_of(check(&token, &published(), now)),
            "no key in the provider's JWKS fits the token"
        );
        let known = sign(&claims(now), Algorithm::RS256, Some("rsa-1"), &rsa(RSA_A));
        assert!(!names_unknown_kid(&known, &published()));
    }

    #[test]
    fn an_algorithm_the_key_was_not_published_for_is_refused() {
        let now = Utc::now();
        // The RSA key is published for RS256; a PS256 signature by it is not taken.
        let token = sign(&claims(now), Algorithm::PS256, Some("rsa-1"), &rsa(RSA_A));
        assert_eq!(
            refusal_of(check(&token, &published(), now)),
            "no key in the provider's JWKS fits the token"
        );
    }

    #[test]
    fn each_wrong_claim_is_refused() {
        let now = Utc::now();
        let ts = now.timestamp();
        let cases: [(&str, &str, Value, &str); 7] = [
            (
                "another issuer",
                "iss",
                json!("https://evil.example.com"),
                "issuer mismatch",
            ),
            (
                "another audience",
                "aud",
                json!("other"),
                "audience mismatch",
            ),
            (
                "several audiences, no azp",
                "aud",
                json!([CLIENT, "other"]),
                "several audiences and no authorized party",
            ),
            (
                "azp of another client",
                "azp",
                json!("other"),
                "authorized party mismatch",
            ),
            (
                "expired beyond the leeway",
                "exp",
                json!(ts - 3600),
                "expired",
            ),
            ("another nonce", "nonce", json!("n2"), "nonce mismatch"),
            ("no nonce", "nonce", Value::Null, "nonce mismatch"),
        ];
        for (name, field, value, why) in cases {
            let mut bad = claims(now);
            bad[field] = value;
            let token = sign(&bad, Algorithm::RS256, Some("rsa-1"), &rsa(RSA_A));
            assert_eq!(refusal_of(check(&token, &published(), now)), why, "{name}");
        }
    }

    #[test]
    fn several_audiences_are_accepted_when_azp_names_us() {
        let now = Utc::now();
        let mut good = claims(now);
        good["aud"] = json!(["other", CLIENT]);
        good["azp"] = json!(CLIENT);
        let token = sign(&good, Algorithm::RS256, Some("rsa-1"), &rsa(RSA_A));
        assert_eq!(check(&token, &published(), now).unwrap().subject, "u1");
    }

    #[test]
    fn expiry_is_judged_by_the_given_clock_with_a_minute_of_leeway() {
        let now = Utc::now();
        let token = sign(&claims(now), Algorithm::RS256, Some("rsa-1"), &rsa(RSA_A));
        let later = now + chrono::Duration::seconds(300 + LEEWAY_SECS - 5);
        assert!(check(&token, &published(), later).is_ok());
        let too_late = now + chrono::Duration::seconds(300 + LEEWAY_SECS + 5);
        assert_eq!(refusal_of(check(&token, &published(), too_late)), "expired");
    }

    #[test]
    fn hs256_is_refused_unless_allowed_and_then_needs_the_client_secret() {
        let now = Utc::now();
        let secret = EncodingKey::from_secret(b"client-secret").unwrap();
        let token = sign(&claims(now), Algorithm::HS256, None, &secret);
        assert_eq!(
            refusal_of(check(&token, &published(), now)),
            "HS256 ID tokens are not accepted from this provider"
        );
        let with_secret = |secret: &str| {
            validate(
                &token,
                &Expected {
                    issuer: ISSUER,
                    client_id: CLIENT,
                    nonce: NONCE,
                    now,
                    keys: Some(&published()),
                    hs256_secret: Some(secret),
                },
            )
        };
        assert_eq!(with_secret("client-secret").unwrap().subject, "u1");
        assert_eq!(refusal_of(with_secret("another-secret")), "bad signature");
    }

    #[test]
    fn a_symmetric_key_in_the_jwks_is_never_used() {
        let now = Utc::now();
        let shared = EncodingKey::from_secret(b"published-secret").unwrap();
        let keys = JwkSet {
            keys: vec![jwk(&shared, Algorithm::HS256, "oct-1")],
        };
        let token = sign(&claims(now), Algorithm::HS256, Some("oct-1"), &shared);
        assert_eq!(
            refusal_of(check(&token, &keys, now)),
            "HS256 ID tokens are not accepted from this provider"
        );
    }

    #[test]
    fn without_a_jwks_asymmetric_tokens_are_refused() {
        let now = Utc::now();
        let token = sign(&claims(now), Algorithm::RS256, Some("rsa-1"), &rsa(RSA_A));
        let result = validate(
            &token,
            &Expected {
                issuer: ISSUER,
                client_id: CLIENT,
                nonce: NONCE,
                now,
                keys: None,
                hs256_secret: None,
            },
        );
        assert_eq!(
            refusal_of(result),
            "no JWKS is known for this provider (set auth.jwks_uri)"
        );
    }

    #[test]
    fn email_verified_is_true_only_when_the_provider_asserts_it() {
        let now = Utc::now();
        let cases = [
            ("true", json!(true), true),
            ("the string true", json!("true"), true),
            ("false", json!(false), false),
            ("the string false", json!("false"), false),
            ("absent", Value::Null, false),
        ];
        for (name, value, verified) in cases {
            let mut c = claims(now);
            c["email_verified"] = value;
            let token = sign(&c, Algorithm::RS256, Some("rsa-1"), &rsa(RSA_A));
            let identity = check(&token, &published(), now).unwrap();
            assert_eq!(identity.email_verified, verified, "{name}");
        }
    }
}
