//! Open-API authentication: `POST /nacos/v1/auth/login` with `username`/`password` gives an
//! access token with a TTL. The token is refreshed when 90 % of its TTL has passed (the Nacos
//! clients' refresh window) and dropped when a request is refused with 403, so the next request
//! logs in again. Tokens and passwords are [`Secret`]s: never logged, never in errors.

use std::time::{Duration, Instant};

use crate::config::{Credentials, Secret};

/// The current token and when to refresh it.
#[derive(Debug)]
struct Token {
    value: Secret,
    refresh_at: Instant,
}

/// Holds the access token of one registry (shared by all its requests).
#[derive(Debug)]
pub(crate) struct TokenManager {
    credentials: Option<Credentials>,
    token: parking_lot::Mutex<Option<Token>>,
    /// Serialises logins so concurrent requests do not log in N times.
    login_lock: tokio::sync::Mutex<()>,
}

impl TokenManager {
    pub(crate) fn new(credentials: Option<Credentials>) -> Self {
        TokenManager {
            credentials,
            token: parking_lot::Mutex::new(None),
            login_lock: tokio::sync::Mutex::new(()),
        }
    }

    pub(crate) fn credentials(&self) -> Option<&Credentials> {
        self.credentials.as_ref()
    }

    /// The token if one is held and not due for refresh.
    pub(crate) fn current(&self) -> Option<Secret> {
        let t = self.token.lock();
        t.as_ref()
            .filter(|t| Instant::now() < t.refresh_at)
            .map(|t| t.value.clone())
    }

    pub(crate) fn login_lock(&self) -> &tokio::sync::Mutex<()> {
        &self.login_lock
    }

    /// Stores a fresh token valid for `ttl`.
    pub(crate) fn store(&self, value: Secret, ttl: Duration) {
        // Refresh after 90 % of the TTL (at least one second before it ends).
        let window = (ttl / 10).max(Duration::from_secs(1)).min(ttl);
        *self.token.lock() = Some(Token {
            value,
            refresh_at: Instant::now() + (ttl - window),
        });
    }

    /// Forgets the token (after a 403) so the next request logs in again.
    pub(crate) fn invalidate(&self, seen: &Secret) {
        let mut t = self.token.lock();
        if t.as_ref().is_some_and(|t| &t.value == seen) {
            *t = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_and_invalidate() {
        let m = TokenManager::new(None);
        assert!(m.current().is_none());
        m.store(Secret::new("tk-9f3a"), Duration::from_secs(3600));
        let t = m.current().unwrap();
        assert_eq!(t.expose(), "tk-9f3a");
        assert_eq!(format!("{m:?}").matches("tk-9f3a").count(), 0);
        m.invalidate(&Secret::new("other"));
        assert!(m.current().is_some());
        m.invalidate(&t);
        assert!(m.current().is_none());
        m.store(Secret::new("short"), Duration::from_millis(500));
        assert!(
            m.current().is_none(),
            "a TTL shorter than the window is refreshed at once"
        );
    }
}
