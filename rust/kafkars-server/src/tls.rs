//! TLS for `SSL` listeners (rustls, ring provider): the server configuration built from
//! Kafka's `ssl.*` settings as the Python configuration layer resolves them (PEM only).
//! The client side is `kafkars-client`'s.

use std::sync::Arc;

use rustls::crypto::{CryptoProvider, ring};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, SupportedProtocolVersion, version};

/// Kafka's `ssl.client.auth`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAuth {
    None,
    Requested,
    Required,
}

impl ClientAuth {
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "none" => Some(Self::None),
            "requested" => Some(Self::Requested),
            "required" => Some(Self::Required),
            _ => None,
        }
    }
}

/// One listener's TLS settings.
#[derive(Clone, Debug)]
pub struct TlsSettings {
    /// PEM certificates: the server's, then its chain.
    pub certificate_chain_pem: Vec<u8>,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub private_key_pem: Vec<u8>,
    /// PEM CA certificates that client certificates must chain to.
    pub truststore_pem: Option<Vec<u8>>,
    pub client_auth: ClientAuth,
    /// `ssl.enabled.protocols`: `TLSv1.2`, `TLSv1.3`.
    pub protocols: Vec<String>,
    /// `ssl.cipher.suites` (IANA names); empty keeps the provider's defaults.
    pub cipher_suites: Vec<String>,
}

/// A setting that cannot make a TLS server; the message names the setting.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("ssl.keystore: {0}")]
    Keystore(String),
    #[error("ssl.truststore: {0}")]
    Truststore(String),
    #[error("ssl.enabled.protocols: {0}")]
    Protocols(String),
    #[error("ssl.cipher.suites: {0}")]
    CipherSuites(String),
    #[error("ssl.client.auth: {0}")]
    ClientAuth(String),
}

fn certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("unreadable PEM certificate: {e}"))?;
    if certs.is_empty() {
        return Err("no PEM certificate found".into());
    }
    Ok(certs)
}

fn protocol_versions(names: &[String]) -> Result<Vec<&'static SupportedProtocolVersion>, TlsError> {
    let mut out = Vec::new();
    for name in names {
        match name.trim() {
            "TLSv1.3" => out.push(&version::TLS13),
            "TLSv1.2" => out.push(&version::TLS12),
            // Older protocols are insecure and rustls does not implement them.
            "TLSv1.1" | "TLSv1" | "SSLv3" => {}
            other => return Err(TlsError::Protocols(format!("unknown protocol {other}"))),
        }
    }
    if out.is_empty() {
        return Err(TlsError::Protocols(format!(
            "none of {names:?} is supported (TLSv1.2, TLSv1.3)"
        )));
    }
    Ok(out)
}

fn provider(cipher_suites: &[String]) -> Result<CryptoProvider, TlsError> {
    let mut provider = ring::default_provider();
    if !cipher_suites.is_empty() {
        let wanted: Vec<&str> = cipher_suites.iter().map(|s| s.trim()).collect();
        provider.cipher_suites.retain(|suite| {
            // rustls names TLS 1.3 suites TLS13_*; Kafka (Java) uses the IANA TLS_* names.
            let name = format!("{:?}", suite.suite());
            let iana = name.replacen("TLS13_", "TLS_", 1);
            wanted.contains(&name.as_str()) || wanted.contains(&iana.as_str())
        });
        if provider.cipher_suites.is_empty() {
            return Err(TlsError::CipherSuites(format!(
                "none of {wanted:?} is supported"
            )));
        }
    }
    Ok(provider)
}

/// The rustls server configuration for `settings`.
pub fn server_config(settings: &TlsSettings) -> Result<Arc<ServerConfig>, TlsError> {
    let chain = certificates(&settings.certificate_chain_pem).map_err(TlsError::Keystore)?;
    let key = PrivateKeyDer::from_pem_slice(&settings.private_key_pem)
        .map_err(|e| TlsError::Keystore(format!("unreadable PEM private key: {e}")))?;
    let provider = Arc::new(provider(&settings.cipher_suites)?);
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&protocol_versions(&settings.protocols)?)
        .map_err(|e| TlsError::Protocols(e.to_string()))?;
    let builder = match (settings.client_auth, &settings.truststore_pem) {
        (ClientAuth::None, _) => builder.with_no_client_auth(),
        (_, None) => {
            return Err(TlsError::ClientAuth(
                "client authentication needs ssl.truststore.location or \
                 ssl.truststore.certificates"
                    .into(),
            ));
        }
        (auth, Some(pem)) => {
            let mut roots = RootCertStore::empty();
            for cert in certificates(pem).map_err(TlsError::Truststore)? {
                roots
                    .add(cert)
                    .map_err(|e| TlsError::Truststore(e.to_string()))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if auth == ClientAuth::Requested {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            builder.with_client_cert_verifier(
                verifier
                    .build()
                    .map_err(|e| TlsError::Truststore(e.to_string()))?,
            )
        }
    };
    let config = builder
        .with_single_cert(chain, key)
        .map_err(|e| TlsError::Keystore(format!("certificate and key do not match: {e}")))?;
    Ok(Arc::new(config))
}

/// The subject of a DER certificate as Java's `X500Principal.getName()` prints it
/// (RFC 2253: most specific attribute first, comma-separated, special characters
/// escaped), which is what Kafka's default SSL principal is made of.
pub fn subject_dn(certificate_der: &[u8]) -> Option<String> {
    use x509_parser::prelude::{FromDer, X509Certificate};
    let (_, cert) = X509Certificate::from_der(certificate_der).ok()?;
    let mut rdns = Vec::new();
    for rdn in cert.subject().iter() {
        let mut parts = Vec::new();
        for attr in rdn.iter() {
            let oid = attr.attr_type().to_id_string();
            let name = match oid.as_str() {
                "2.5.4.3" => "CN",
                "2.5.4.6" => "C",
                "2.5.4.7" => "L",
                "2.5.4.8" => "ST",
                "2.5.4.9" => "STREET",
                "2.5.4.10" => "O",
                "2.5.4.11" => "OU",
                "0.9.2342.19200300.100.1.25" => "DC",
                "0.9.2342.19200300.100.1.1" => "UID",
                _ => oid.as_str(),
            };
            let value = attr.as_str().ok()?;
            parts.push(format!("{name}={}", escape_dn_value(value)));
        }
        rdns.push(parts.join("+"));
    }
    rdns.reverse();
    Some(rdns.join(","))
}

fn escape_dn_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dn_values_are_escaped_as_rfc_2253_says() {
        assert_eq!(escape_dn_value("alice"), "alice");
        assert_eq!(escape_dn_value("a,b+c"), "a\\,b\\+c");
        assert_eq!(escape_dn_value(" #x "), "\\ #x\\ ");
    }

    #[test]
    fn garbage_is_not_a_certificate() {
        assert_eq!(subject_dn(b"not a certificate"), None);
    }
}
