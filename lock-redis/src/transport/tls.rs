//! [`TlsOptions`]: which certificate authorities to trust and which client
//! certificate to present on `rediss://` connections. One value serves every
//! deployment: [`RedisConfig::tls`](crate::RedisConfig::tls) for one server,
//! and the cluster configuration, which hands the same options to its seeds,
//! every node connection and its pub/sub connections.
//!
//! Without options a `rediss://` connection trusts the system's root
//! certificates and presents no client certificate. The server's
//! certificate must name the host of the URL (or, in a cluster, the address
//! each node announces).

use std::fmt;
use std::path::Path;

use lock_core::{LockError, Result};

/// TLS settings for `rediss://` connections (feature `tls`).
///
/// ```
/// use lock_redis::{RedisConfig, TlsOptions};
///
/// # fn demo(ca: Vec<u8>, cert: Vec<u8>, key: Vec<u8>) {
/// let tls = TlsOptions::new()
///     .ca_pem(ca)                  // trust this CA instead of the system roots
///     .client_cert_pem(cert, key); // mutual TLS
/// let config = RedisConfig::new("rediss://10.0.0.5:6380/").tls(tls);
/// # let _ = config; }
/// ```
///
/// The key is never printed by `Debug`.
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TlsOptions {
    /// PEM certificates of the authorities to trust, instead of the
    /// system's root certificates.
    pub ca_pem: Option<Vec<u8>>,
    /// A PEM client certificate chain to present (mutual TLS), with
    /// [`TlsOptions::client_key_pem`].
    pub client_cert_pem: Option<Vec<u8>>,
    /// The PEM private key of [`TlsOptions::client_cert_pem`].
    pub client_key_pem: Option<Vec<u8>>,
}

impl TlsOptions {
    /// No custom CA, no client certificate: the system's roots are trusted.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`TlsOptions::ca_pem`].
    pub fn ca_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca_pem = Some(pem.into());
        self
    }

    /// Sets [`TlsOptions::client_cert_pem`] and
    /// [`TlsOptions::client_key_pem`].
    pub fn client_cert_pem(mut self, cert: impl Into<Vec<u8>>, key: impl Into<Vec<u8>>) -> Self {
        self.client_cert_pem = Some(cert.into());
        self.client_key_pem = Some(key.into());
        self
    }

    /// Reads the options from PEM files: a CA bundle, and a client
    /// certificate with its key (both or neither).
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] naming a file that cannot be read, or
    /// a certificate without its key (or a key without its certificate).
    pub fn from_files(ca: Option<&Path>, cert: Option<&Path>, key: Option<&Path>) -> Result<Self> {
        let read = |path: &Path| {
            std::fs::read(path).map_err(|e| {
                LockError::invalid(format!("cannot read TLS file {}: {e}", path.display()))
            })
        };
        let mut options = Self::new();
        if let Some(ca) = ca {
            options.ca_pem = Some(read(ca)?);
        }
        match (cert, key) {
            (Some(cert), Some(key)) => {
                options = options.client_cert_pem(read(cert)?, read(key)?);
            }
            (None, None) => {}
            _ => {
                return Err(LockError::invalid(
                    "a TLS client certificate needs its key, and a key its certificate",
                ))
            }
        }
        Ok(options)
    }

    /// Checks the options without any I/O: the certificates and the key
    /// parse, and a certificate comes with its key.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] saying what is wrong; always, without
    /// the `tls` feature.
    pub fn validate(&self) -> Result<()> {
        #[cfg(feature = "tls")]
        {
            self.certificates().map(drop)
        }
        #[cfg(not(feature = "tls"))]
        {
            Err(LockError::invalid(
                "TLS options need lock-redis's `tls` feature",
            ))
        }
    }

    /// The options as redis-rs takes them, checked.
    #[cfg(feature = "tls")]
    fn certificates(&self) -> Result<redis::TlsCertificates> {
        use rustls::pki_types::pem::PemObject as _;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};

        let client_tls = match (&self.client_cert_pem, &self.client_key_pem) {
            (Some(cert), Some(key)) => {
                let chain = CertificateDer::pem_slice_iter(cert)
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|e| {
                        LockError::invalid(format!("bad TLS client certificate PEM: {e}"))
                    })?;
                if chain.is_empty() {
                    return Err(LockError::invalid(
                        "the TLS client certificate PEM holds no certificate",
                    ));
                }
                PrivateKeyDer::from_pem_slice(key)
                    .map_err(|e| LockError::invalid(format!("bad TLS client key PEM: {e}")))?;
                Some(redis::ClientTlsConfig {
                    client_cert: cert.clone(),
                    client_key: key.clone(),
                })
            }
            (None, None) => None,
            _ => {
                return Err(LockError::invalid(
                    "a TLS client certificate needs its key, and a key its certificate",
                ))
            }
        };
        if let Some(ca) = &self.ca_pem {
            let roots = CertificateDer::pem_slice_iter(ca)
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| LockError::invalid(format!("bad TLS CA certificate PEM: {e}")))?;
            if roots.is_empty() {
                return Err(LockError::invalid("the TLS CA PEM holds no certificate"));
            }
        }
        Ok(redis::TlsCertificates {
            client_tls,
            root_cert: self.ca_pem.clone(),
        })
    }

    /// A rustls client configuration with these options: the CA (or the
    /// system's roots) and the client certificate. For connections made
    /// outside redis-rs (the cluster's pub/sub connections).
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] as [`TlsOptions::validate`], or when
    /// the system's roots cannot be loaded.
    #[cfg(feature = "tls")]
    pub fn rustls_config(&self) -> Result<std::sync::Arc<rustls::ClientConfig>> {
        use rustls::pki_types::pem::PemObject as _;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};

        self.validate()?;
        install_crypto_provider();
        let mut roots = rustls::RootCertStore::empty();
        match &self.ca_pem {
            Some(ca) => {
                for cert in CertificateDer::pem_slice_iter(ca) {
                    let cert = cert
                        .map_err(|e| LockError::invalid(format!("bad TLS CA certificate: {e}")))?;
                    roots
                        .add(cert)
                        .map_err(|e| LockError::invalid(format!("bad TLS CA certificate: {e}")))?;
                }
            }
            None => {
                let native = rustls_native_certs::load_native_certs();
                if native.certs.is_empty() {
                    return Err(LockError::invalid(format!(
                        "no system root certificates to trust ({:?}); give a CA",
                        native.errors
                    )));
                }
                roots.add_parsable_certificates(native.certs);
            }
        }
        let builder = rustls::ClientConfig::builder().with_root_certificates(roots);
        let config = match (&self.client_cert_pem, &self.client_key_pem) {
            (Some(cert), Some(key)) => {
                let chain = CertificateDer::pem_slice_iter(cert)
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|e| LockError::invalid(format!("bad TLS client certificate: {e}")))?;
                let key = PrivateKeyDer::from_pem_slice(key)
                    .map_err(|e| LockError::invalid(format!("bad TLS client key: {e}")))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| LockError::invalid(format!("bad TLS client certificate: {e}")))?
            }
            _ => builder.with_no_client_auth(),
        };
        Ok(std::sync::Arc::new(config))
    }
}

/// A redis-rs client for `info` with `tls` applied (`tls` must be `None`
/// unless `info` is a `rediss://` address). The one place connections get
/// their TLS settings, for single nodes and cluster nodes alike.
///
/// # Errors
/// [`LockError::InvalidArgument`] for TLS options on a plain address, or
/// options that do not [validate](TlsOptions::validate).
pub fn client(info: redis::ConnectionInfo, tls: Option<&TlsOptions>) -> Result<redis::Client> {
    #[cfg(feature = "tls")]
    install_crypto_provider();
    // redis-rs parses `rediss://` whenever any crate of the build enables
    // its rustls support, and then panics at connect without a crypto
    // provider, which only this crate's `tls` feature installs.
    #[cfg(not(feature = "tls"))]
    if matches!(info.addr(), redis::ConnectionAddr::TcpTls { .. }) {
        return Err(LockError::invalid(
            "a rediss:// URL needs lock-redis's `tls` feature",
        ));
    }
    let info = crate::transport::connections::no_delay(info);
    let Some(tls) = tls else {
        return redis::Client::open(info)
            .map_err(|e| LockError::invalid(format!("invalid redis configuration: {e}")));
    };
    tls.validate()?;
    if !matches!(info.addr(), redis::ConnectionAddr::TcpTls { .. }) {
        return Err(LockError::invalid(
            "TLS options need a rediss:// URL (the URL says redis://)",
        ));
    }
    #[cfg(feature = "tls")]
    {
        redis::Client::build_with_tls(info, tls.certificates()?)
            .map_err(|e| LockError::invalid(format!("invalid TLS configuration: {e}")))
    }
    #[cfg(not(feature = "tls"))]
    {
        Err(LockError::invalid(
            "TLS options need lock-redis's `tls` feature",
        ))
    }
}

/// rustls needs a process-wide crypto provider; install `ring`'s unless the
/// application installed one already.
#[cfg(feature = "tls")]
pub(crate) fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race with another installer is fine: one is installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

impl fmt::Debug for TlsOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set = |v: &Option<Vec<u8>>| if v.is_some() { "<set>" } else { "<none>" };
        f.debug_struct("TlsOptions")
            .field("ca_pem", &set(&self.ca_pem))
            .field("client_cert_pem", &set(&self.client_cert_pem))
            .field("client_key_pem", &set(&self.client_key_pem))
            .finish()
    }
}
