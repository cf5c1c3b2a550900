//! The PostgreSQL store's plumbing: a bounded wait for the client's answers, and the texts
//! that name a server or an error without a secret.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_postgres::Config;

/// Runs `future` on this thread until it is done, or `None` once `limit` has passed. The
/// client's futures are woken by the connection's thread; no timer is needed, only a
/// bounded park between polls.
pub(crate) fn block_on_for<F: Future>(future: F, limit: Duration) -> Option<F::Output> {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }
    let deadline = Instant::now() + limit;
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return Some(output);
        }
        // A wake-up that came for nothing (or early) only polls once more.
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        std::thread::park_timeout(left);
    }
}

/// `error` and what caused it (`error connecting to server: Connection refused`): the
/// driver's own words stop at the first.
pub(crate) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(error) = cause {
        let more = error.to_string();
        if !text.ends_with(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = error.source();
    }
    text
}

/// `postgres://host:port/db`: the url without user, password or options.
pub(crate) fn describe(config: &Config) -> String {
    use tokio_postgres::config::Host;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(host)) => host.clone(),
        Some(Host::Unix(path)) => path.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config
        .get_dbname()
        .or(config.get_user())
        .unwrap_or("postgres");
    format!("postgres://{host}:{port}/{db}")
}

/// `text` with the url's password (if any) blotted out: a parse error may quote the url.
pub(crate) fn redact(text: &str, url: &str) -> String {
    let password = url
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .and_then(|(credentials, _)| credentials.split_once(':'))
        .map(|(_, password)| password)
        .filter(|password| !password.is_empty());
    match password {
        Some(password) => text.replace(password, "***"),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_wait_for_an_answer_ends_with_the_answer_or_at_its_limit() {
        let limit = Duration::from_millis(50);
        assert_eq!(block_on_for(async { 7 }, limit), Some(7));
        let started = Instant::now();
        assert_eq!(block_on_for(std::future::pending::<()>(), limit), None);
        assert!(started.elapsed() >= limit);
        // Woken from another thread, it answers long before its limit.
        let (sender, receiver) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            let _ = sender.send(3);
        });
        let started = Instant::now();
        assert_eq!(block_on_for(receiver, Duration::from_secs(60)), Some(Ok(3)));
        assert!(started.elapsed() < Duration::from_secs(30));
    }

    #[test]
    fn a_store_is_described_without_its_user_or_password() {
        let config: Config = "postgres://tau:s3cret@db.example:6543/tau_home?sslmode=disable"
            .parse()
            .unwrap();
        assert_eq!(describe(&config), "postgres://db.example:6543/tau_home");
        assert_eq!(
            redact("bad url postgres://tau:s3cret@x", "postgres://tau:s3cret@x"),
            "bad url postgres://tau:***@x"
        );
    }
}
