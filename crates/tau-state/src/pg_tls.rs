//! TLS to the PostgreSQL server, when its url asks for it (`sslmode=require`,
//! `verify-ca` or `verify-full`): rustls over the store's own socket, the server's
//! certificate always checked, chain and name (what libpq calls `verify-full`), against
//! the file `sslrootcert` names when the url names one, else the system's roots. A url
//! that does not ask (no `sslmode`, `disable`, `prefer`) is spoken in plain text, as
//! before, and so is a unix socket, which PostgreSQL never encrypts.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, TlsConnect};

use crate::pg_wire::Socket;

/// What the url asked of TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TlsWanted {
    /// `sslrootcert`: the certificates (PEM) the server's must chain to, instead of the
    /// system's.
    pub(crate) roots: Option<PathBuf>,
}

/// `url` as the driver reads it (`sslmode` of `verify-ca` or `verify-full` said as
/// `require`, `sslrootcert` taken out, which the driver does not know), and whether it
/// asks for TLS.
pub(crate) fn from_url(url: &str) -> (String, Option<TlsWanted>) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_owned(), None);
    };
    let mut wanted = false;
    let mut roots = None;
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "sslmode" => match value {
                "require" | "verify-ca" | "verify-full" => {
                    wanted = true;
                    kept.push("sslmode=require".to_owned());
                }
                _ => kept.push(pair.to_owned()),
            },
            "sslrootcert" => {
                let path = percent_encoding::percent_decode_str(value).decode_utf8_lossy();
                roots = Some(PathBuf::from(path.as_ref()));
            }
            _ => kept.push(pair.to_owned()),
        }
    }
    let url = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    (url, wanted.then_some(TlsWanted { roots }))
}

/// The client's TLS settings for `wanted`: its roots read now, so a missing or unreadable
/// file is an error when the store is opened, not a refusal later.
pub(crate) fn client_config(wanted: &TlsWanted) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    match &wanted.roots {
        Some(file) => {
            let certificates = CertificateDer::pem_file_iter(file)
                .and_then(Iterator::collect::<Result<Vec<_>, _>>)
                .map_err(|e| format!("sslrootcert {}: {e}", file.display()))?;
            let (added, _) = roots.add_parsable_certificates(certificates);
            if added == 0 {
                return Err(format!(
                    "sslrootcert {}: no certificate in it",
                    file.display()
                ));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return Err(
                    "the system has no root certificates: name the server's in sslrootcert"
                        .to_owned(),
                );
            }
        }
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// How the driver opens TLS on a socket: to `name`, with `config`, or not at all.
pub(crate) struct Connector {
    pub(crate) tls: Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
}

impl Connector {
    /// For the server `host` (its name in the url, checked against its certificate).
    pub(crate) fn to(config: Arc<rustls::ClientConfig>, host: &str) -> Result<Self, String> {
        let name = ServerName::try_from(host.to_owned())
            .map_err(|e| format!("{host}: not a name a certificate can carry: {e}"))?;
        Ok(Self {
            tls: Some((config, name)),
        })
    }

    pub(crate) fn plain() -> Self {
        Self { tls: None }
    }
}

type Handshake = Pin<Box<dyn Future<Output = Result<Encrypted, std::io::Error>> + Send>>;

impl TlsConnect<Socket> for Connector {
    type Stream = Encrypted;
    type Error = std::io::Error;
    type Future = Handshake;

    fn connect(self, socket: Socket) -> Handshake {
        Box::pin(async move {
            let Some((config, name)) = self.tls else {
                return Err(std::io::Error::other("TLS was not asked for"));
            };
            let stream = tokio_rustls::TlsConnector::from(config)
                .connect(name, socket)
                .await?;
            Ok(Encrypted(Box::new(stream)))
        })
    }
}

/// The socket, encrypted.
pub(crate) struct Encrypted(Box<tokio_rustls::client::TlsStream<Socket>>);

impl tokio_postgres::tls::TlsStream for Encrypted {
    fn channel_binding(&self) -> ChannelBinding {
        // SCRAM without channel binding: the certificate check is what binds the
        // connection to the server.
        ChannelBinding::none()
    }
}

impl AsyncRead for Encrypted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for Encrypted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_url_asks_for_tls_with_sslmode_and_names_its_roots_with_sslrootcert() {
        let plain = "postgres://tau@db:5432/tau";
        assert_eq!(from_url(plain), (plain.to_owned(), None));
        assert_eq!(
            from_url("postgres://tau@db/tau?sslmode=prefer&application_name=x"),
            (
                "postgres://tau@db/tau?sslmode=prefer&application_name=x".to_owned(),
                None
            )
        );
        for mode in ["require", "verify-ca", "verify-full"] {
            let (url, wanted) = from_url(&format!(
                "postgres://tau@db/tau?sslmode={mode}&sslrootcert=%2Fetc%2Ftau%2Fca.pem"
            ));
            assert_eq!(url, "postgres://tau@db/tau?sslmode=require", "{mode}");
            assert_eq!(
                wanted,
                Some(TlsWanted {
                    roots: Some(PathBuf::from("/etc/tau/ca.pem"))
                }),
                "{mode}"
            );
        }
        let (_, wanted) = from_url("postgres://tau@db/tau?sslmode=require");
        assert_eq!(wanted, Some(TlsWanted { roots: None }));
    }

    #[test]
    fn roots_that_cannot_be_read_are_an_error_when_the_store_opens() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.pem");
        let error = client_config(&TlsWanted {
            roots: Some(missing.clone()),
        })
        .err()
        .unwrap();
        assert!(error.starts_with(&format!("sslrootcert {}", missing.display())));
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let error = client_config(&TlsWanted {
            roots: Some(empty.clone()),
        })
        .err()
        .unwrap();
        assert!(error.contains("no certificate in it"), "{error}");
    }
}
