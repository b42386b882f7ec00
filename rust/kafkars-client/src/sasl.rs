//! The client side of SASL PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802, RFC 7677):
//! the tokens sent in SaslAuthenticate. The crypto is ring's, the one rustls already
//! builds.

use std::num::NonZeroU32;

use data_encoding::BASE64;
use ring::rand::SecureRandom;
use ring::{digest, hmac, pbkdf2};

/// A SASL login: the mechanism and the `username`/`password` of a JAAS config.
#[derive(Clone)]
pub struct SaslLogin {
    pub mechanism: String,
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for SaslLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password: connection settings are printed in debug logs.
        f.debug_struct("SaslLogin")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

/// One authentication: `first()` is the first token, `next()` takes each server reply
/// and gives the next token, or `None` once the exchange is complete.
pub enum SaslClient {
    Plain(Vec<u8>),
    Scram(ScramClient),
}

impl SaslClient {
    pub fn new(login: &SaslLogin) -> Result<Self, String> {
        match login.mechanism.as_str() {
            "PLAIN" => Ok(Self::Plain(
                format!("\0{}\0{}", login.username, login.password).into_bytes(),
            )),
            "SCRAM-SHA-256" | "SCRAM-SHA-512" => Ok(Self::Scram(ScramClient::new(
                &login.mechanism,
                &login.username,
                &login.password,
                &random_nonce()?,
            )?)),
            other => Err(format!("SASL mechanism {other} is not supported")),
        }
    }

    pub fn first(&self) -> Vec<u8> {
        match self {
            Self::Plain(token) => token.clone(),
            Self::Scram(scram) => scram.client_first().into_bytes(),
        }
    }

    pub fn next(&mut self, reply: &[u8]) -> Result<Option<Vec<u8>>, String> {
        match self {
            Self::Plain(_) => Ok(None),
            Self::Scram(scram) => scram.next(reply),
        }
    }
}

fn random_nonce() -> Result<String, String> {
    let mut bytes = [0u8; 24];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| "no random bytes for the SCRAM nonce".to_string())?;
    Ok(BASE64.encode(&bytes))
}

/// SCRAM's client: client-first, then client-final with the proof, then the server's
/// signature checked (a server that does not know the password cannot forge it).
pub struct ScramClient {
    hmac: hmac::Algorithm,
    digest: &'static digest::Algorithm,
    pbkdf2: pbkdf2::Algorithm,
    password: String,
    nonce: String,
    client_first_bare: String,
    /// The server signature the final reply must carry, once client-final is sent.
    expected_server_final: Option<String>,
}

impl ScramClient {
    fn new(mechanism: &str, username: &str, password: &str, nonce: &str) -> Result<Self, String> {
        let (hmac, digest, pbkdf2) = match mechanism {
            "SCRAM-SHA-256" => (
                hmac::HMAC_SHA256,
                &digest::SHA256,
                pbkdf2::PBKDF2_HMAC_SHA256,
            ),
            "SCRAM-SHA-512" => (
                hmac::HMAC_SHA512,
                &digest::SHA512,
                pbkdf2::PBKDF2_HMAC_SHA512,
            ),
            other => return Err(format!("{other} is not a SCRAM mechanism")),
        };
        // RFC 5802's saslname: ',' and '=' escaped.
        let name = username.replace('=', "=3D").replace(',', "=2C");
        Ok(Self {
            hmac,
            digest,
            pbkdf2,
            password: password.to_string(),
            nonce: nonce.to_string(),
            client_first_bare: format!("n={name},r={nonce}"),
            expected_server_final: None,
        })
    }

    fn client_first(&self) -> String {
        format!("n,,{}", self.client_first_bare)
    }

    fn next(&mut self, reply: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let reply =
            std::str::from_utf8(reply).map_err(|_| "the server's SCRAM reply is not UTF-8")?;
        match self.expected_server_final.take() {
            None => self.client_final(reply).map(|m| Some(m.into_bytes())),
            Some(expected) if reply == expected => Ok(None),
            Some(_) => Err("the server's SCRAM signature is wrong".into()),
        }
    }

    fn client_final(&mut self, server_first: &str) -> Result<String, String> {
        let attribute = |key: &str| {
            server_first
                .split(',')
                .find_map(|part| part.strip_prefix(key)?.strip_prefix('='))
        };
        if let Some(error) = attribute("e") {
            return Err(format!("the server refused: {error}"));
        }
        let nonce = attribute("r")
            .filter(|r| r.starts_with(&self.nonce))
            .ok_or("the server's SCRAM nonce does not extend ours")?;
        let salt = attribute("s")
            .and_then(|s| BASE64.decode(s.as_bytes()).ok())
            .ok_or("the server's SCRAM salt is missing")?;
        let iterations = attribute("i")
            .and_then(|i| i.parse::<u32>().ok())
            .and_then(NonZeroU32::new)
            .ok_or("the server's SCRAM iteration count is missing")?;
        let mut salted = vec![0u8; self.digest.output_len()];
        pbkdf2::derive(
            self.pbkdf2,
            iterations,
            &salt,
            self.password.as_bytes(),
            &mut salted,
        );
        let salted = hmac::Key::new(self.hmac, &salted);
        let client_key = hmac::sign(&salted, b"Client Key");
        let stored_key = digest::digest(self.digest, client_key.as_ref());
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{server_first},{without_proof}", self.client_first_bare);
        let signature = hmac::sign(
            &hmac::Key::new(self.hmac, stored_key.as_ref()),
            auth_message.as_bytes(),
        );
        let proof: Vec<u8> = client_key
            .as_ref()
            .iter()
            .zip(signature.as_ref())
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = hmac::sign(&salted, b"Server Key");
        let server_signature = hmac::sign(
            &hmac::Key::new(self.hmac, server_key.as_ref()),
            auth_message.as_bytes(),
        );
        self.expected_server_final =
            Some(format!("v={}", BASE64.encode(server_signature.as_ref())));
        Ok(format!("{without_proof},p={}", BASE64.encode(&proof)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677's example exchange (user "user", password "pencil").
    #[test]
    fn scram_sha_256_matches_rfc_7677() {
        let mut client =
            ScramClient::new("SCRAM-SHA-256", "user", "pencil", "rOprNGfwEbeRWgbNEkqO").unwrap();
        assert_eq!(client.client_first(), "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let server_first = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
            s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let final_message = client.next(server_first).unwrap().unwrap();
        assert_eq!(
            String::from_utf8(final_message).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
             p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        assert_eq!(
            client
                .next(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
                .unwrap(),
            None
        );
    }

    #[test]
    fn a_forged_server_signature_or_nonce_is_refused() {
        let mut client = ScramClient::new("SCRAM-SHA-512", "u", "p", "abc").unwrap();
        let _ = client.next(b"r=abcdef,s=c2FsdA==,i=4096").unwrap();
        assert!(client.next(b"v=AAAA").is_err());
        let mut client = ScramClient::new("SCRAM-SHA-512", "u", "p", "abc").unwrap();
        assert!(client.next(b"r=zzz,s=c2FsdA==,i=4096").is_err());
    }

    #[test]
    fn plain_sends_one_token() {
        let login = SaslLogin {
            mechanism: "PLAIN".into(),
            username: "broker".into(),
            password: "secret".into(),
        };
        let mut client = SaslClient::new(&login).unwrap();
        assert_eq!(client.first(), b"\0broker\0secret");
        assert_eq!(client.next(b"").unwrap(), None);
        assert!(!format!("{login:?}").contains("secret"));
    }
}
