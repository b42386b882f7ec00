//! TLS towards a broker's SSL and SASL_SSL listeners (rustls, ring provider), from
//! Kafka's client `ssl.*` settings as PEM: the trust store, an optional client
//! certificate and key, and the host name check switch.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::ring;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use crate::ClientError;

fn truststore(e: impl std::fmt::Display) -> ClientError {
    ClientError::TlsConfig(format!("ssl.truststore: {e}"))
}

fn keystore(e: impl std::fmt::Display) -> ClientError {
    ClientError::TlsConfig(format!("ssl.keystore: {e}"))
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

/// The rustls client configuration towards an SSL or SASL_SSL listener: the broker's
/// certificate must chain to `truststore_pem`; `identity` (key, chain) is presented when
/// the broker asks for one (`ssl.client.auth`); without `check_hostname`
/// (`ssl.endpoint.identification.algorithm` empty) any name is taken.
pub fn client_config(
    truststore_pem: &[u8],
    identity: Option<(&[u8], &[u8])>,
    check_hostname: bool,
) -> Result<Arc<ClientConfig>, ClientError> {
    let provider = Arc::new(ring::default_provider());
    let mut roots = RootCertStore::empty();
    for cert in certificates(truststore_pem).map_err(truststore)? {
        roots.add(cert).map_err(truststore)?;
    }
    let webpki =
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
            .build()
            .map_err(truststore)?;
    let verifier: Arc<dyn ServerCertVerifier> = if check_hostname {
        webpki
    } else {
        Arc::new(AnyHostname(webpki))
    };
    with_identity(provider, verifier, identity)
}

/// A TLS client that takes any certificate (librdkafka's
/// `enable.ssl.certificate.verification=false`, for tools against test brokers): the
/// connection is encrypted but the broker is not authenticated.
pub fn client_config_without_verification(
    identity: Option<(&[u8], &[u8])>,
) -> Result<Arc<ClientConfig>, ClientError> {
    let provider = Arc::new(ring::default_provider());
    let verifier = Arc::new(AnyCertificate(Arc::clone(&provider)));
    with_identity(provider, verifier, identity)
}

fn with_identity(
    provider: Arc<rustls::crypto::CryptoProvider>,
    verifier: Arc<dyn ServerCertVerifier>,
    identity: Option<(&[u8], &[u8])>,
) -> Result<Arc<ClientConfig>, ClientError> {
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ClientError::TlsConfig(format!("ssl.enabled.protocols: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let config = match identity {
        None => builder.with_no_client_auth(),
        Some((key_pem, chain_pem)) => {
            let chain = certificates(chain_pem).map_err(keystore)?;
            let key = PrivateKeyDer::from_pem_slice(key_pem)
                .map_err(|e| keystore(format!("unreadable PEM private key: {e}")))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| keystore(format!("certificate and key do not match: {e}")))?
        }
    };
    Ok(Arc::new(config))
}

/// Every certificate taken; the handshake signatures are still checked.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Kafka's empty `ssl.endpoint.identification.algorithm`: the chain is verified, the
/// host name is not.
#[derive(Debug)]
struct AnyHostname(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyHostname {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_that_cannot_make_a_client_name_the_setting() {
        let err = client_config(b"not pem", None, true).unwrap_err();
        assert!(err.to_string().starts_with("ssl.truststore: "), "{err}");
    }

    #[test]
    fn a_refused_certificate_says_so_in_the_usual_words() {
        let wrong_name = ClientError::from(rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName,
        ));
        assert!(wrong_name.is_authentication());
        let message = wrong_name.to_string();
        assert!(message.contains("certificate verify failed"), "{message}");
        assert!(message.contains("doesn't match"), "{message}");
        let untrusted = ClientError::from(std::io::Error::other(
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer),
        ));
        assert!(matches!(untrusted, ClientError::Tls(_)), "{untrusted}");
    }
}
