//! `tau doctor`'s model row: whether the spec reads, and whether its server accepts a
//! connection (for a replay script: whether the script reads). Sends nothing to it.

use std::time::Duration;

use crate::ModelSpec;

/// How long the model's server has to accept a connection.
const CONNECT_WAIT: Duration = Duration::from_secs(3);

/// The row's mark (`ok`, or `no` for a problem), what it is about and what was found.
pub type DoctorRow = (&'static str, &'static str, String);

/// The row for the model `spec`.
pub async fn doctor_row(spec: &str) -> DoctorRow {
    match ModelSpec::parse(spec) {
        Err(error) => ("no", "spec", error.to_string()),
        Ok(ModelSpec::Replay { path }) => match std::fs::metadata(&path) {
            Ok(_) => ("ok", "script", "readable".to_owned()),
            Err(error) => ("no", "script", format!("{}: {error}", path.display())),
        },
        Ok(spec) => {
            let (host, port) = spec.endpoint();
            let address = format!("{host}:{port}");
            match tokio::time::timeout(CONNECT_WAIT, tokio::net::TcpStream::connect(&address)).await
            {
                Ok(Ok(_)) => ("ok", "server", format!("{address} accepts connections")),
                Ok(Err(error)) => ("no", "server", format!("{address}: {error}")),
                Err(_) => (
                    "no",
                    "server",
                    format!("{address}: no answer within {} s", CONNECT_WAIT.as_secs()),
                ),
            }
        }
    }
}
