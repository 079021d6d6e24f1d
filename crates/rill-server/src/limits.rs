//! What the server admits before a WebSocket opens: the message size, the
//! page origins that may connect, and how many sockets may be open at once.
//!
//! A browser lets any page it shows open `ws://127.0.0.1:8080/ws`; the Origin
//! check is what keeps a foreign page from playing (or exhausting) the
//! instrument. Requests without an `Origin` header come from non-browser
//! clients, which a page cannot forge, so they are admitted.
//!
//! The Host check stops DNS rebinding: a page of `evil.example` whose name is
//! re-pointed at 127.0.0.1 is same-origin with this server as far as the
//! browser knows, so every request must also name this server by an IP
//! address, `localhost`, or a name given with `--allow-host`. A rebinding
//! attack needs a DNS name, so IP-literal hosts are safe to admit.

use std::fmt;
use std::sync::Arc;

use axum::http::header::{HOST, ORIGIN};
use axum::http::HeaderMap;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Largest client message (and frame) accepted: a full control message is well
/// under 4 KiB, and a 64 KiB bound keeps one socket from holding tungstenite's
/// default 64 MiB.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// Default `--max-connections`: idle sockets cost little, but not nothing.
pub const DEFAULT_MAX_CONNECTIONS: usize = 64;

/// Default `--idle-timeout`: a socket without a stream that sends nothing for a
/// minute is closed (the instrument opens its socket only to play).
pub const DEFAULT_IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Largest `--idle-timeout` accepted, in seconds (a day).
pub const MAX_IDLE_TIMEOUT_SECS: u64 = 86_400;

/// Largest `--max-connections` accepted (one task and two buffers each).
pub const MAX_CONNECTIONS_LIMIT: usize = 65_536;

/// A web origin, `scheme://host[:port]`, normalised for comparison (lower-case
/// scheme and host, the default port of http/https made explicit). Host names
/// are compared literally: `localhost` and `127.0.0.1` are different origins,
/// as they are to a browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    scheme: String,
    host: String,
    port: Option<u16>,
}

impl Origin {
    /// Parses an origin as browsers send it (`http://localhost:3000`); a path,
    /// query, user name or `null` is an error that shows the expected form.
    pub fn parse(s: &str) -> Result<Origin, String> {
        let bad = |why: &str| {
            format!("{s:?} is not an origin ({why}); write scheme://host[:port], e.g. http://localhost:3000")
        };
        let (scheme, rest) = s.split_once("://").ok_or_else(|| bad("no scheme://"))?;
        let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
        if !scheme_ok {
            return Err(bad("the scheme must be letters, e.g. http"));
        }
        let scheme = scheme.to_ascii_lowercase();
        let (host, port) = split_host_port(rest).map_err(|why| bad(&why))?;
        let port = port.or(match scheme.as_str() {
            "http" | "ws" => Some(80),
            "https" | "wss" => Some(443),
            _ => None,
        });
        Ok(Origin { scheme, host, port })
    }

    /// The origin of a page this server served: plain HTTP at the `Host` the
    /// request names.
    fn own(host_header: &str) -> Option<Origin> {
        let (host, port) = split_host_port(host_header).ok()?;
        Some(Origin {
            scheme: "http".into(),
            host,
            port: Some(port.unwrap_or(80)),
        })
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.scheme, self.host)?;
        match self.port {
            Some(p) => write!(f, ":{p}"),
            None => Ok(()),
        }
    }
}

/// `host[:port]` with `[v6]` hosts; the host lower-cased. Anything else a URL
/// may carry (path, query, fragment, user info) is refused.
fn split_host_port(s: &str) -> Result<(String, Option<u16>), String> {
    if s.is_empty() {
        return Err("no host".into());
    }
    if s.contains(['/', '?', '#', '@', ' ', '\\']) {
        return Err("only scheme, host and port; no path, query or user".into());
    }
    let (host, port) = if let Some(v6) = s.strip_prefix('[') {
        let (inside, after) = v6.split_once(']').ok_or("unclosed [ in the host")?;
        if inside.is_empty()
            || !inside
                .chars()
                .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
        {
            return Err("not an IPv6 address inside [ ]".into());
        }
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':').ok_or("junk after ]")?),
        };
        (format!("[{inside}]"), port)
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (s.to_string(), None),
        }
    };
    if host.is_empty() || (host.contains(':') && !host.starts_with('[')) {
        return Err("a bad host (IPv6 addresses go in [ ])".into());
    }
    let port = match port {
        None => None,
        Some(p) => Some(
            p.parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or("the port must be 1..65535")?,
        ),
    };
    Ok((host.to_ascii_lowercase(), port))
}

/// Why an upgrade request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginRefusal {
    /// The header is present more than once, not text, or not an origin.
    Malformed,
    /// A well-formed origin that is neither this server nor allowed.
    Foreign(String),
}

/// [`check_origin`] for the HTTP API routes (`/api/tts`, `/api/clips`): the
/// refusal as the body of an HTTP 403.
pub fn check_api_origin(headers: &HeaderMap, allowed: &[Origin]) -> Result<(), String> {
    check_origin(headers, allowed).map_err(|refusal| {
        let why = match refusal {
            OriginRefusal::Malformed => {
                "the Origin header is not a single scheme://host[:port]".to_string()
            }
            OriginRefusal::Foreign(o) => format!("pages from {o} may not use this server"),
        };
        format!("forbidden: {why}\n")
    })
}

/// Admits a request with no `Origin` (not a browser), with the server's own
/// origin (the page it served), or with one of `allowed`.
pub fn check_origin(headers: &HeaderMap, allowed: &[Origin]) -> Result<(), OriginRefusal> {
    let mut values = headers.get_all(ORIGIN).iter();
    let Some(value) = values.next() else {
        return Ok(());
    };
    if values.next().is_some() {
        return Err(OriginRefusal::Malformed);
    }
    let text = value.to_str().map_err(|_| OriginRefusal::Malformed)?;
    let origin = Origin::parse(text).map_err(|_| OriginRefusal::Malformed)?;
    let own = headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .and_then(Origin::own);
    if own.as_ref() == Some(&origin) || allowed.contains(&origin) {
        Ok(())
    } else {
        Err(OriginRefusal::Foreign(origin.to_string()))
    }
}

/// A host name `--allow-host` admits in the `Host` header: letters, digits,
/// `-` and `.`, compared case-insensitively, without a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostName(String);

impl HostName {
    /// Parses a DNS name such as `studio.local`; an address, port or URL is an
    /// error that shows the expected form (IP addresses need no flag).
    pub fn parse(s: &str) -> Result<HostName, String> {
        let ok = !s.is_empty()
            && s.len() <= 253
            && s.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && !label.starts_with('-')
                    && !label.ends_with('-')
                    && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            });
        if ok {
            Ok(HostName(s.to_ascii_lowercase()))
        } else {
            Err(format!(
                "{s:?} is not a host name; write a DNS name such as studio.local \
                 (no scheme or port; IP addresses and localhost are always admitted)"
            ))
        }
    }
}

impl fmt::Display for HostName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a request's `Host` header was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostRefusal {
    /// The header is present more than once, not text, or not `host[:port]`.
    Malformed,
    /// A DNS name that is neither `localhost` nor allowed: possibly a rebinding page.
    Foreign(String),
}

/// Admits a request with no `Host` (not a browser: HTTP/1.1 browsers always
/// send it), an IP-literal host, `localhost` or `*.localhost` (which resolve
/// only to loopback), or a name in `allowed`.
pub fn check_host(headers: &HeaderMap, allowed: &[HostName]) -> Result<(), HostRefusal> {
    let mut values = headers.get_all(HOST).iter();
    let Some(value) = values.next() else {
        return Ok(());
    };
    if values.next().is_some() {
        return Err(HostRefusal::Malformed);
    }
    let text = value.to_str().map_err(|_| HostRefusal::Malformed)?;
    let (host, _) = split_host_port(text).map_err(|_| HostRefusal::Malformed)?;
    let name = host.trim_end_matches('.');
    let literal = host.starts_with('[') || name.parse::<std::net::Ipv4Addr>().is_ok();
    let loopback_name = name == "localhost" || name.ends_with(".localhost");
    if literal || loopback_name || allowed.iter().any(|a| a.0 == name) {
        Ok(())
    } else {
        Err(HostRefusal::Foreign(host))
    }
}

/// Counts open WebSocket connections; a [`ConnectionPermit`] is one of them.
#[derive(Debug, Clone)]
pub struct ConnectionLimit {
    slots: Arc<Semaphore>,
    max: usize,
    /// Connections ever admitted (the idle-memory release watches it change).
    admitted: Arc<std::sync::atomic::AtomicU64>,
}

/// One admitted connection; dropping it (on every exit path of the socket
/// task, or when the upgrade never completes) frees the slot.
#[derive(Debug)]
pub struct ConnectionPermit {
    _permit: OwnedSemaphorePermit,
}

impl ConnectionLimit {
    /// `max` is clamped into 1..=[`MAX_CONNECTIONS_LIMIT`] (the CLI rejects
    /// values outside it before they get here).
    pub fn new(max: usize) -> ConnectionLimit {
        let max = max.clamp(1, MAX_CONNECTIONS_LIMIT);
        ConnectionLimit {
            slots: Arc::new(Semaphore::new(max)),
            max,
            admitted: Arc::default(),
        }
    }

    /// A slot, or `None` when `max` connections are open.
    pub fn try_acquire(&self) -> Option<ConnectionPermit> {
        let permit = Arc::clone(&self.slots).try_acquire_owned().ok()?;
        self.admitted
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(ConnectionPermit { _permit: permit })
    }

    /// How many connections were ever admitted.
    pub fn admitted(&self) -> u64 {
        self.admitted.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn max(&self) -> usize {
        self.max
    }

    pub fn open(&self) -> usize {
        self.max - self.slots.available_permits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(origin: Option<&str>, host: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(o) = origin {
            h.insert(ORIGIN, HeaderValue::from_str(o).unwrap());
        }
        if let Some(x) = host {
            h.insert(HOST, HeaderValue::from_str(x).unwrap());
        }
        h
    }

    #[test]
    fn origins_parse_and_normalise() {
        let o = Origin::parse("HTTP://LocalHost:3000").unwrap();
        assert_eq!(o.to_string(), "http://localhost:3000");
        assert_eq!(
            Origin::parse("http://example.com").unwrap(),
            Origin::parse("http://example.com:80").unwrap()
        );
        assert_eq!(
            Origin::parse("https://[::1]").unwrap().to_string(),
            "https://[::1]:443"
        );
        for bad in [
            "",
            "null",
            "localhost:3000",
            "http://",
            "http://a.b/path",
            "http://u@a.b",
            "http://a.b:0",
            "http://a.b:99999",
            "http://a.b:x",
            "http://::1",
            "http://[::1",
            "http://[zz]",
            "1http://a.b",
        ] {
            assert!(Origin::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn same_origin_allowed_and_foreign() {
        let allowed = [Origin::parse("http://localhost:3000").unwrap()];
        let ok = |o, h| check_origin(&headers(o, h), &allowed).is_ok();
        assert!(ok(None, Some("127.0.0.1:8080")), "no Origin: not a browser");
        assert!(ok(Some("http://127.0.0.1:8080"), Some("127.0.0.1:8080")));
        assert!(ok(Some("http://[::1]:8080"), Some("[::1]:8080")));
        assert!(ok(Some("http://example.com"), Some("Example.com:80")));
        assert!(ok(Some("http://localhost:3000"), Some("127.0.0.1:8080")));
        // Literal hosts: localhost is not 127.0.0.1.
        assert!(!ok(Some("http://localhost:8080"), Some("127.0.0.1:8080")));
        assert!(!ok(Some("http://127.0.0.1:8081"), Some("127.0.0.1:8080")));
        assert!(!ok(Some("https://127.0.0.1:8080"), Some("127.0.0.1:8080")));
        assert!(!ok(Some("http://evil.example"), Some("127.0.0.1:8080")));
        assert!(!ok(Some("null"), Some("127.0.0.1:8080")));
        assert!(!ok(Some("http://127.0.0.1:8080"), None));
        let mut two = headers(Some("http://127.0.0.1:8080"), Some("127.0.0.1:8080"));
        two.append(ORIGIN, HeaderValue::from_static("http://127.0.0.1:8080"));
        assert_eq!(check_origin(&two, &[]), Err(OriginRefusal::Malformed));
    }

    #[test]
    fn hosts_by_address_localhost_or_allowed_name_only() {
        let allowed = [HostName::parse("Studio.Local").unwrap()];
        let ok = |h| check_host(&headers(None, h), &allowed);
        for good in [
            None,
            Some("127.0.0.1:8080"),
            Some("192.168.1.20"),
            Some("[::1]:8080"),
            Some("localhost:8080"),
            Some("LocalHost"),
            Some("app.localhost:8080"),
            Some("localhost.:8080"),
            Some("studio.local:8080"),
            Some("STUDIO.LOCAL"),
        ] {
            assert_eq!(ok(good), Ok(()), "{good:?}");
        }
        // A rebound page names its own domain; so does a typo'd or foreign name.
        for foreign in [
            "evil.example:8080",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
        ] {
            assert_eq!(
                ok(Some(foreign)),
                Err(HostRefusal::Foreign(
                    foreign.split(':').next().unwrap().to_ascii_lowercase()
                )),
                "{foreign}"
            );
        }
        assert_eq!(ok(Some("a/b")), Err(HostRefusal::Malformed));
        assert_eq!(ok(Some("a:0")), Err(HostRefusal::Malformed));
        let mut two = headers(None, Some("127.0.0.1:8080"));
        two.append(HOST, HeaderValue::from_static("127.0.0.1:8080"));
        assert_eq!(check_host(&two, &[]), Err(HostRefusal::Malformed));
    }

    #[test]
    fn host_names_parse() {
        assert_eq!(
            HostName::parse("My-Box.lan").unwrap().to_string(),
            "my-box.lan"
        );
        for bad in [
            "", "http://a", "a:80", "a..b", "-a", "a-", "a b", "[::1]", "a/b",
        ] {
            assert!(HostName::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn permits_are_released_on_drop() {
        let limit = ConnectionLimit::new(2);
        let a = limit.try_acquire().unwrap();
        let _b = limit.try_acquire().unwrap();
        assert!(limit.try_acquire().is_none());
        assert_eq!(limit.open(), 2);
        drop(a);
        assert_eq!(limit.open(), 1);
        assert!(limit.try_acquire().is_some());
    }
}
