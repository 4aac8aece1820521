//! The Dubbo URL model (Dubbo's `URL`, `URLStrParser`, `URLParam`): parsing, parameters, method
//! parameters, keys and string forms.
//!
//! A [`Url`] is immutable and cheap to clone (one `Arc`). Parameters are split into a table that
//! is shared (interned by content) between every URL with the same stable parameters, plus the
//! few per-process keys (`timestamp`, `pid`, `ipv6`) kept inline with the host, so 100k
//! providers of one service share one copy of `methods`, `application`, `interface`, ...
//! Parsing a query in the form registries store it finds that table without building the
//! parameter list (`canonical.rs`).

mod canonical;
mod intern;
mod local;
mod parse;
mod scratch;
pub mod secret;
mod service_address;

use std::cmp::Ordering;
use std::fmt::{self, Write as _};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use intern::{intern, intern_table, Atom, ParamTable};
use local::{volatile_index, Local, VOLATILE_KEYS};
pub(crate) use parse::parse_java_int;
pub use parse::parse_params_raw;
pub use service_address::ServiceAddressUrl;

use crate::error::Result;

/// A Dubbo URL: `protocol://[user[:password]@]host[:port]/path?k=v&...`.
///
/// Equality and hashing follow Dubbo 3.x: protocol, credentials, host, port, path and all
/// parameters, ignoring the **value** of `timestamp` (the key must be present in both).
/// `Display` renders `toString()`, which never shows credentials.
#[derive(Clone)]
pub struct Url {
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    protocol: Option<Atom>,
    path: Option<Atom>,
    creds: Option<Box<Creds>>,
    port: i32,
    table: Arc<ParamTable>,
    /// The host and the volatile parameters (`ipv6`, `pid`, `timestamp`), in one buffer.
    own: Local,
}

#[derive(Clone)]
struct Creds {
    username: Atom,
    password: Option<Atom>,
}

/// Borrowed pieces of a URL before interning.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct UrlParts<'a> {
    pub(crate) protocol: Option<&'a str>,
    pub(crate) username: Option<&'a str>,
    pub(crate) password: Option<&'a str>,
    pub(crate) host: Option<&'a str>,
    pub(crate) port: i32,
    pub(crate) path: Option<&'a str>,
}

impl Url {
    /// Parses a decoded URL string exactly like Dubbo 3.x `URL.valueOf`.
    ///
    /// ```
    /// let u = registry_core::Url::parse("dubbo://10.0.0.1:20880/com.foo.Bar?version=1.0").unwrap();
    /// assert_eq!(u.port(), 20880);
    /// assert_eq!(u.param("version"), Some("1.0"));
    /// ```
    pub fn parse(s: &str) -> Result<Url> {
        parse::parse_decoded(s).and_then(|u| u.with_fixed_side(s))
    }

    /// Parses a fully `URL.encode`d string (a ZooKeeper node name), like `parseEncodedStr`.
    pub fn parse_encoded(s: &str) -> Result<Url> {
        parse::parse_encoded(s).and_then(|u| u.with_fixed_side(s))
    }

    /// Dubbo 3's `URLParam` stores `side` in a fixed value table (`DefaultDynamicParamSource`:
    /// `consumer`, `provider`, matched lower-cased): another value makes `URL.valueOf` throw,
    /// and a differently cased one is stored lower-cased.
    fn with_fixed_side(self, input: &str) -> Result<Url> {
        match self.param("side") {
            None | Some("consumer" | "provider") => Ok(self),
            Some(v) => match v.to_lowercase().as_str() {
                side @ ("consumer" | "provider") => Ok(self.with_param("side", side)),
                _ => Err(crate::Error::invalid_url(
                    "side must be consumer or provider",
                    input,
                )),
            },
        }
    }

    /// Starts a builder for a URL with this protocol.
    pub fn builder(protocol: &str) -> UrlBuilder {
        UrlBuilder {
            protocol: Some(protocol.to_owned()),
            ..UrlBuilder::default()
        }
    }

    /// A builder pre-filled with every part of this URL.
    pub fn to_builder(&self) -> UrlBuilder {
        UrlBuilder {
            protocol: self.protocol().map(str::to_owned),
            username: self.username().map(str::to_owned),
            password: self.password().map(str::to_owned),
            host: self.host().map(str::to_owned),
            port: self.port(),
            path: self.path().map(str::to_owned),
            params: self
                .params()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        }
    }

    /// Parsed parts plus raw parameters in input order, applied like Java's `HashMap`: each
    /// item is put (the last of a key wins) and a `default.X` item is immediately followed by a
    /// put-if-absent of `X` (`URLStrParser.addParam`).
    pub(crate) fn from_parsed(parts: UrlParts<'_>, params: Vec<(&str, &str)>) -> Result<Url> {
        let params = apply_java_puts(params);
        Ok(Url::from_sorted(parts, &params))
    }

    /// `params` must be sorted by key with unique keys.
    fn from_sorted(parts: UrlParts<'_>, params: &[(&str, &str)]) -> Url {
        let mut volatile = [None; VOLATILE_KEYS.len()];
        let table = if params.iter().any(|(k, _)| volatile_index(k).is_some()) {
            let mut stable: Vec<(&str, &str)> = Vec::with_capacity(params.len());
            for &(k, v) in params {
                match volatile_index(k) {
                    Some(i) => volatile[i] = Some(v),
                    None => stable.push((k, v)),
                }
            }
            intern_table(&stable)
        } else {
            intern_table(params)
        };
        Url::assemble(parts, table, volatile)
    }

    /// A URL from its parts, its shared stable parameters and its volatile values (in
    /// `VOLATILE_KEYS` order).
    fn assemble(
        parts: UrlParts<'_>,
        table: Arc<ParamTable>,
        volatile: [Option<&str>; VOLATILE_KEYS.len()],
    ) -> Url {
        let path = parts.path.map(|p| {
            let p = p.trim_start_matches('/');
            // The path is usually the interface name, which the table already holds.
            match table.known_atom(Known::Interface as usize) {
                Some(a) if **a == *p => a.clone(),
                _ => intern(p),
            }
        });
        Url {
            inner: Arc::new(Inner {
                protocol: parts.protocol.map(intern),
                path,
                creds: parts.username.map(|u| {
                    Box::new(Creds {
                        username: Atom::from(u),
                        password: parts.password.map(Atom::from),
                    })
                }),
                port: parts.port,
                table,
                own: Local::new(parts.host, volatile),
            }),
        }
    }

    // ----- address parts -----

    /// The protocol, absent for inputs like `10.0.0.1:20880`.
    pub fn protocol(&self) -> Option<&str> {
        self.inner.protocol.as_deref()
    }

    /// The protocol or `""`.
    pub fn protocol_str(&self) -> &str {
        self.protocol().unwrap_or("")
    }

    /// The user name of the user info, if any (may be `""` for `:pw@host`).
    pub fn username(&self) -> Option<&str> {
        self.inner.creds.as_ref().map(|c| &*c.username)
    }

    /// The password of the user info, if any.
    pub fn password(&self) -> Option<&str> {
        self.inner
            .creds
            .as_ref()
            .and_then(|c| c.password.as_deref())
    }

    /// The host, absent when empty.
    pub fn host(&self) -> Option<&str> {
        self.inner.own.host()
    }

    /// The port; 0 when absent.
    pub fn port(&self) -> i32 {
        self.inner.port
    }

    /// The path without leading `/`.
    pub fn path(&self) -> Option<&str> {
        self.inner.path.as_deref()
    }

    /// `host` if the port is <= 0, else `host:port`; absent without a host.
    pub fn address(&self) -> Option<String> {
        let host = self.host()?;
        Some(if self.port() > 0 {
            format!("{host}:{}", self.port())
        } else {
            host.to_owned()
        })
    }

    /// True when both handles point at the same URL object (a cheap "unchanged" test).
    pub fn ptr_eq(a: &Url, b: &Url) -> bool {
        Arc::ptr_eq(&a.inner, &b.inner)
    }

    /// The address of the shared URL object: a cheap identity key for pointer-keyed maps
    /// (equal for clones, see [`Url::ptr_eq`]). Only meaningful while a clone is held.
    pub fn ptr_id(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }

    // ----- parameters -----

    /// The raw value of a parameter.
    pub fn param(&self, key: &str) -> Option<&str> {
        if volatile_index(key).is_some() {
            return self.inner.own.get(key);
        }
        let e = &self.inner.table.entries;
        e.binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|i| &*e[i].1)
    }

    /// The value, or `default` when it is absent or empty (`getParameter(k, def)`).
    pub fn param_or<'a>(&'a self, key: &str, default: &'a str) -> &'a str {
        non_empty(self.param(key)).unwrap_or(default)
    }

    /// `hasParameter`: the value is present and non-empty.
    pub fn has_param(&self, key: &str) -> bool {
        non_empty(self.param(key)).is_some()
    }

    /// Boolean getter: default when empty; otherwise only a case-insensitive `true` is true.
    pub fn param_bool(&self, key: &str, default: bool) -> bool {
        parse_bool(self.param(key), default)
    }

    /// Integer getter: default when empty or not a valid integer.
    pub fn param_i64(&self, key: &str, default: i64) -> i64 {
        parse_i64(self.param(key), default)
    }

    /// `getPositiveParameter`: like [`Url::param_i64`] but values <= 0 give the default.
    pub fn param_positive_i64(&self, key: &str, default: i64) -> i64 {
        let v = self.param_i64(key, default);
        if v <= 0 {
            default
        } else {
            v
        }
    }

    /// `getParameter(k, String[])`: the value split with `COMMA_SPLIT`.
    pub fn param_list(&self, key: &str) -> Vec<&str> {
        non_empty(self.param(key))
            .map(comma_split)
            .unwrap_or_default()
    }

    /// Number of parameters.
    pub fn param_count(&self) -> usize {
        self.inner.table.entries.len() + self.inner.own.volatile_len()
    }

    /// All parameters sorted by key.
    pub fn params(&self) -> Params<'_> {
        Params {
            a: &self.inner.table.entries,
            b: &self.inner.own,
            bi: 0,
        }
    }

    // ----- method parameters (`URLParam`, `URL.getMethodParameter`) -----

    /// `getMethodParameterStrict(m, k)`: the `<m>.<k>` value, absent when a non-empty `methods`
    /// param does not contain `m` (a substring test, as Dubbo does).
    pub fn method_param_strict(&self, method: &str, key: &str) -> Option<&str> {
        if let Some(methods) = non_empty(self.param("methods")) {
            if !methods.contains(method) {
                return None;
            }
        }
        self.raw_method_param(method, key)
    }

    /// `<m>.<k>` ignoring the `methods` filter. No allocation.
    pub fn raw_method_param(&self, method: &str, key: &str) -> Option<&str> {
        let e = &self.inner.table.entries;
        e.binary_search_by(|(k, _)| cmp_dotted(k, method, key))
            .ok()
            .map(|i| &*e[i].1)
    }

    /// `getMethodParameter(m, k)`: the strict value if non-empty, else `param(k)`.
    pub fn method_param(&self, method: &str, key: &str) -> Option<&str> {
        non_empty(self.method_param_strict(method, key)).or_else(|| self.param(key))
    }

    /// `getMethodParameter(m, k, def)` for strings: default when empty.
    pub fn method_param_or<'a>(&'a self, method: &str, key: &str, default: &'a str) -> &'a str {
        non_empty(self.method_param(method, key)).unwrap_or(default)
    }

    /// Integer method parameter: default when empty or invalid.
    pub fn method_param_i64(&self, method: &str, key: &str, default: i64) -> i64 {
        parse_i64(self.method_param(method, key), default)
    }

    /// Boolean method parameter (`Boolean.parseBoolean`): default when empty.
    pub fn method_param_bool(&self, method: &str, key: &str, default: bool) -> bool {
        parse_bool(self.method_param(method, key), default)
    }

    /// `hasMethodParameter(m, k)`: a non-empty strict method-level value exists.
    pub fn has_method_param(&self, method: &str, key: &str) -> bool {
        non_empty(self.method_param_strict(method, key)).is_some()
    }

    /// `getAnyMethodParameter(k)` (`URLParam`): with a non-empty `methods` param, the first
    /// non-empty `<m>.<k>` for `m` in `methods` (split at `,`, in list order, exact names: a
    /// method not listed is never consulted); without `methods`, the first `<m>.<k>` of any
    /// method `m` (by key order; Java's hash order is unspecified).
    pub fn any_method_param(&self, key: &str) -> Option<&str> {
        if let Some(methods) = non_empty(self.param("methods")) {
            return methods
                .split(',')
                .find_map(|m| non_empty(self.raw_method_param(m, key)));
        }
        self.params()
            .find(|(k, _)| k.split_once('.').is_some_and(|(_, rest)| rest == key))
            .map(|(_, v)| v)
    }

    // ----- identity (`URL.getServiceKey`, `toFullString`) -----

    /// `getServiceInterface()`: the `interface` param if non-empty, else the path.
    pub fn service_interface(&self) -> Option<&str> {
        non_empty(self.known(Known::Interface)).or_else(|| self.path())
    }

    /// O(1) lookup of a matching-relevant parameter (same result as [`Url::param`]).
    pub(crate) fn known(&self, k: Known) -> Option<&str> {
        self.inner.table.known(k as usize)
    }

    /// `getCategory(def)`.
    pub fn category_or<'a>(&'a self, default: &'a str) -> &'a str {
        non_empty(self.known(Known::Category)).unwrap_or(default)
    }

    /// The `group` param, if non-empty.
    pub fn group(&self) -> Option<&str> {
        non_empty(self.known(Known::Group))
    }

    /// The `version` param, if non-empty.
    pub fn version(&self) -> Option<&str> {
        non_empty(self.known(Known::Version))
    }

    /// `getServiceKey()`: `[group/]interface[:version]`; absent without an interface.
    pub fn service_key(&self) -> Option<String> {
        Some(build_key(
            self.service_interface()?,
            self.group(),
            self.version(),
        ))
    }

    /// `getPathKey()`: like the service key but the path first.
    pub fn path_key(&self) -> Option<String> {
        let p = non_empty(self.path()).or_else(|| self.service_interface())?;
        Some(build_key(p, self.group(), self.version()))
    }

    /// `getDisplayServiceKey()`: `interface[:version]`.
    pub fn display_service_key(&self) -> Option<String> {
        Some(build_key(self.service_interface()?, None, self.version()))
    }

    /// `getColonSeparatedKey()`: `interface:version:group`, always three segments; a blank
    /// version or group (Dubbo `StringUtils.isBlank`) is left empty; no interface prints `null`
    /// (Java's string concatenation).
    pub fn colon_separated_key(&self) -> String {
        fn seg(v: Option<&str>) -> &str {
            v.filter(|v| !is_java_blank(v)).unwrap_or("")
        }
        format!(
            "{}:{}:{}",
            self.service_interface().unwrap_or("null"),
            seg(self.version()),
            seg(self.group())
        )
    }

    /// `getCompatibleColonSeparatedKey()`: `interface[:version][:group]`, blanks skipped.
    /// Without an interface Java's string concatenation prints `null`, and so does this.
    pub fn compatible_colon_separated_key(&self) -> String {
        let mut s = self.service_interface().unwrap_or("null").to_owned();
        for part in [self.version(), self.group()].into_iter().flatten() {
            if !is_java_blank(part) {
                s.push(':');
                s.push_str(part);
            }
        }
        s
    }

    /// `toServiceString()`: `proto://[user[:password]@]host:port/<service key>`, no params
    /// (`buildString(appendUser=true, appendParameter=false, useIP, useService)`; the host is
    /// used as given, it is not resolved).
    pub fn to_service_string(&self) -> String {
        let mut s = String::new();
        self.write_address(&mut s, true);
        if let Some(k) = self.service_key().filter(|k| !k.is_empty()) {
            s.push('/');
            s.push_str(&k);
        }
        s
    }

    /// `toServiceString(String... parameters)` (`buildString(true, true, true, true, keys)`):
    /// [`Url::to_service_string`] followed by a query of the listed keys that the URL has,
    /// sorted by key, values trimmed (`?a=1&b=2`; nothing when none is present). An empty
    /// `keys` list keeps every parameter, as Java's `buildParameters` does for an empty array.
    pub fn to_service_string_with(&self, keys: &[&str]) -> String {
        let mut s = self.to_service_string();
        let mut first = true;
        for (k, v) in self.params() {
            if k.is_empty() || !(keys.is_empty() || keys.contains(&k)) {
                continue;
            }
            s.push(if first { '?' } else { '&' });
            first = false;
            s.push_str(k);
            s.push('=');
            s.push_str(java_trim(v));
        }
        s
    }

    // ----- string forms -----

    /// `toFullString()`: credentials and all params (sorted by key, values trimmed).
    pub fn to_full_string(&self) -> String {
        let mut s = String::with_capacity(256);
        self.write_to(&mut s, true, true);
        s
    }

    /// `toIdentityString()`: credentials, no params.
    pub fn to_identity_string(&self) -> String {
        let mut s = String::with_capacity(64);
        self.write_to(&mut s, true, false);
        s
    }

    /// Writes the URL to `out` (with credentials if `user`, with params if `params`).
    pub fn write_to(&self, out: &mut String, user: bool, params: bool) {
        self.write_to_masked(out, user, params, false);
    }

    /// [`Url::write_to`], with the values of secret parameters ([`secret::is_secret_key`])
    /// replaced by [`secret::MASK`] when `mask`.
    fn write_to_masked(&self, out: &mut String, user: bool, params: bool, mask: bool) {
        self.write_address(out, user);
        if let Some(p) = self.path().filter(|p| !p.is_empty()) {
            out.push('/');
            out.push_str(p);
        }
        if params {
            let mut first = true;
            for (k, v) in self.params() {
                if k.is_empty() {
                    continue;
                }
                out.push(if first { '?' } else { '&' });
                first = false;
                out.push_str(k);
                out.push('=');
                if mask && secret::is_secret_key(k) {
                    out.push_str(secret::MASK);
                } else {
                    out.push_str(java_trim(v));
                }
            }
        }
    }

    /// `proto://[user:******@]host:port/path`: the identity string with the password masked,
    /// for messages.
    pub fn to_masked_identity_string(&self) -> String {
        let mut s = String::with_capacity(64);
        self.write_address_masked(&mut s, true, true);
        if let Some(p) = self.path().filter(|p| !p.is_empty()) {
            s.push('/');
            s.push_str(p);
        }
        s
    }

    fn write_address(&self, out: &mut String, user: bool) {
        self.write_address_masked(out, user, false);
    }

    fn write_address_masked(&self, out: &mut String, user: bool, mask: bool) {
        if let Some(p) = self.protocol().filter(|p| !p.is_empty()) {
            out.push_str(p);
            out.push_str("://");
        }
        if user {
            if let Some(u) = self.username().filter(|u| !u.is_empty()) {
                out.push_str(u);
                if let Some(pw) = self.password().filter(|p| !p.is_empty()) {
                    out.push(':');
                    out.push_str(if mask { secret::MASK } else { pw });
                }
                out.push('@');
            }
        }
        if let Some(h) = self.host().filter(|h| !h.is_empty()) {
            out.push_str(h);
            if self.port() > 0 {
                let _ = write!(out, ":{}", self.port());
            }
        }
    }

    // ----- derived URLs -----

    /// A copy with another protocol.
    pub fn with_protocol(&self, protocol: &str) -> Url {
        let mut u = self.clone();
        Arc::make_mut(&mut u.inner).protocol = Some(intern(protocol));
        u
    }

    /// A copy with another host.
    pub fn with_host(&self, host: &str) -> Url {
        let mut u = self.clone();
        let inner = Arc::make_mut(&mut u.inner);
        inner.own = inner.own.with_host((!host.is_empty()).then_some(host));
        u
    }

    /// A copy with another port.
    pub fn with_port(&self, port: i32) -> Url {
        let mut u = self.clone();
        Arc::make_mut(&mut u.inner).port = port;
        u
    }

    /// A copy with another path (leading `/` stripped).
    pub fn with_path(&self, path: &str) -> Url {
        let mut u = self.clone();
        Arc::make_mut(&mut u.inner).path = Some(intern(path.trim_start_matches('/')));
        u
    }

    /// A copy with `key=value` set (replacing any value).
    pub fn with_param(&self, key: &str, value: &str) -> Url {
        self.with_params([(key, value)])
    }

    /// A copy with all of `params` set (replacing existing values).
    pub fn with_params<'a>(&self, params: impl IntoIterator<Item = (&'a str, &'a str)>) -> Url {
        let mut all: Vec<(&str, &str)> = self.params().collect();
        all.extend(params.into_iter().map(|(k, v): (&str, &str)| (k, v)));
        sort_dedup_last(&mut all);
        Url::from_sorted(self.parts(), &all)
    }

    /// A copy with each of `params` set only where the key is absent (`addParametersIfAbsent`).
    pub fn with_params_if_absent<'a>(
        &self,
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Url {
        let mut all: Vec<(&str, &str)> = params.into_iter().collect();
        all.extend(self.params());
        sort_dedup_last(&mut all);
        Url::from_sorted(self.parts(), &all)
    }

    /// A copy without the given keys.
    pub fn without_params(&self, keys: &[&str]) -> Url {
        if !keys.iter().any(|k| self.param(k).is_some()) {
            return self.clone();
        }
        let all: Vec<(&str, &str)> = self.params().filter(|(k, _)| !keys.contains(k)).collect();
        Url::from_sorted(self.parts(), &all)
    }

    /// A copy whose parameters are exactly `params` (any order; the last of a key wins).
    pub fn with_replaced_params<'a>(
        &self,
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Url {
        let mut all: Vec<(&str, &str)> = params.into_iter().collect();
        sort_dedup_last(&mut all);
        Url::from_sorted(self.parts(), &all)
    }

    fn parts(&self) -> UrlParts<'_> {
        UrlParts {
            protocol: self.protocol(),
            username: self.username(),
            password: self.password(),
            host: self.host(),
            port: self.port(),
            path: self.path(),
        }
    }

    fn eq_params(&self, other: &Url) -> bool {
        let (a, b) = (&*self.inner, &*other.inner);
        let tables = Arc::ptr_eq(&a.table, &b.table) || a.table.entries == b.table.entries;
        tables && a.own.volatile_eq_ignoring_timestamp(&b.own)
    }
}

impl PartialEq for Url {
    fn eq(&self, other: &Url) -> bool {
        if Url::ptr_eq(self, other) {
            return true;
        }
        let (a, b) = (&*self.inner, &*other.inner);
        a.protocol == b.protocol
            && a.port == b.port
            && self.host() == other.host()
            && a.path == b.path
            && self.username() == other.username()
            && self.password() == other.password()
            && self.eq_params(other)
    }
}

impl Eq for Url {}

impl Hash for Url {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let i = &*self.inner;
        i.protocol.hash(state);
        self.host().hash(state);
        i.port.hash(state);
        i.path.hash(state);
        self.username().hash(state);
        self.password().hash(state);
        for (k, v) in self.params() {
            k.hash(state);
            if k != "timestamp" {
                v.hash(state);
            }
        }
    }
}

impl fmt::Display for Url {
    /// `toString()`: like the full string but never with credentials, and with the values of
    /// secret parameters masked ([`secret`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::with_capacity(128);
        self.write_to_masked(&mut s, false, true, true);
        f.write_str(&s)
    }
}

impl fmt::Debug for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Url({self})")
    }
}

impl std::str::FromStr for Url {
    type Err = crate::Error;
    fn from_str(s: &str) -> Result<Url> {
        Url::parse(s)
    }
}

/// Iterator over a URL's parameters in key order.
#[derive(Debug, Clone)]
pub struct Params<'a> {
    a: &'a [(Atom, Atom)],
    b: &'a Local,
    /// Next volatile slot to consider.
    bi: usize,
}

impl<'a> Params<'a> {
    fn next_volatile(&self) -> Option<(usize, &'a str, &'a str)> {
        let b: &'a Local = self.b;
        (self.bi..VOLATILE_KEYS.len()).find_map(|i| b.volatile(i).map(|v| (i, VOLATILE_KEYS[i], v)))
    }
}

impl<'a> Iterator for Params<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        let vol = self.next_volatile();
        match (self.a.first(), vol) {
            (Some((ka, va)), Some((_, kb, _))) if &**ka <= kb => {
                self.a = &self.a[1..];
                Some((&**ka, &**va))
            }
            (Some((ka, va)), None) => {
                self.a = &self.a[1..];
                Some((&**ka, &**va))
            }
            (_, Some((i, kb, vb))) => {
                self.bi = i + 1;
                Some((kb, vb))
            }
            (None, None) => None,
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.a.len()
            + (self.bi..VOLATILE_KEYS.len())
                .filter(|&i| self.b.volatile(i).is_some())
                .count();
        (n, Some(n))
    }
}

impl ExactSizeIterator for Params<'_> {}

/// Builds a [`Url`] from parts.
#[derive(Debug, Default, Clone)]
pub struct UrlBuilder {
    protocol: Option<String>,
    username: Option<String>,
    password: Option<String>,
    host: Option<String>,
    port: i32,
    path: Option<String>,
    params: Vec<(String, String)>,
}

impl UrlBuilder {
    /// Sets the protocol.
    pub fn protocol(mut self, p: &str) -> Self {
        self.protocol = Some(p.to_owned());
        self
    }
    /// Sets user name and password.
    pub fn credentials(mut self, user: &str, password: Option<&str>) -> Self {
        self.username = Some(user.to_owned());
        self.password = password.map(str::to_owned);
        self
    }
    /// Sets the host.
    pub fn host(mut self, h: &str) -> Self {
        self.host = (!h.is_empty()).then(|| h.to_owned());
        self
    }
    /// Sets the port.
    pub fn port(mut self, p: i32) -> Self {
        self.port = p;
        self
    }
    /// Sets the path (leading `/` stripped).
    pub fn path(mut self, p: &str) -> Self {
        self.path = Some(p.to_owned());
        self
    }
    /// Adds a parameter (a later value for the same key wins).
    pub fn param(mut self, k: &str, v: &str) -> Self {
        self.params.push((k.to_owned(), v.to_owned()));
        self
    }
    /// Adds parameters.
    pub fn params<'a>(mut self, it: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        self.params
            .extend(it.into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())));
        self
    }
    /// Builds the URL (no `default.` copy: that is a parse-time rule).
    pub fn build(self) -> Url {
        let mut params: Vec<(&str, &str)> = self
            .params
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        sort_dedup_last(&mut params);
        Url::from_sorted(
            UrlParts {
                protocol: self.protocol.as_deref(),
                username: self.username.as_deref(),
                password: self.password.as_deref(),
                host: self.host.as_deref(),
                port: self.port,
                path: self.path.as_deref(),
            },
            &params,
        )
    }
}

// ----- helpers -----

/// The parameters a table indexes (`intern::KNOWN_KEYS`, same order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Known {
    Category = 0,
    Classifier = 1,
    Enabled = 2,
    Group = 3,
    Interface = 4,
    Version = 5,
}

/// Java `put` of every item in order plus `putIfAbsent(X)` right after each `default.X`, as a
/// sorted, de-duplicated list.
pub(crate) fn apply_java_puts<'a>(mut params: Vec<(&'a str, &'a str)>) -> Vec<(&'a str, &'a str)> {
    if params.iter().any(|(k, _)| k.starts_with("default.")) {
        let mut out: Vec<(&'a str, &'a str)> = Vec::with_capacity(params.len() + 4);
        for (k, v) in params {
            match out.iter_mut().find(|(x, _)| *x == k) {
                Some(e) => e.1 = v,
                None => out.push((k, v)),
            }
            if let Some(x) = k.strip_prefix("default.") {
                if !out.iter().any(|(y, _)| *y == x) {
                    out.push((x, v));
                }
            }
        }
        params = out;
    }
    sort_dedup_last(&mut params);
    params
}

/// Stable sort by key, keeping the last value of each key.
fn sort_dedup_last(params: &mut Vec<(&str, &str)>) {
    if !params.windows(2).all(|w| w[0].0 < w[1].0) {
        params.sort_by(|a, b| a.0.cmp(b.0));
        // After a stable sort equal keys keep input order: keep the last of each run.
        let mut out: Vec<(&str, &str)> = Vec::with_capacity(params.len());
        for p in params.drain(..) {
            match out.last_mut() {
                Some(last) if last.0 == p.0 => *last = p,
                _ => out.push(p),
            }
        }
        *params = out;
    }
}

/// Compares `key` with the virtual string `m + "." + k` without building it.
fn cmp_dotted(key: &str, m: &str, k: &str) -> Ordering {
    let virt = m.bytes().chain(std::iter::once(b'.')).chain(k.bytes());
    key.bytes().cmp(virt)
}

/// `Some(v)` only for a non-empty value.
pub(crate) fn non_empty(v: Option<&str>) -> Option<&str> {
    v.filter(|s| !s.is_empty())
}

fn parse_bool(v: Option<&str>, default: bool) -> bool {
    match non_empty(v) {
        None => default,
        Some(s) => s.eq_ignore_ascii_case("true"),
    }
}

fn parse_i64(v: Option<&str>, default: i64) -> i64 {
    match non_empty(v) {
        None => default,
        Some(s) => s.trim().parse().unwrap_or(default),
    }
}

/// `COMMA_SPLIT` with Java `String.split` semantics: `\s*[,]+\s*`, a leading empty item kept,
/// trailing empty items dropped.
pub fn comma_split(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(c) = rest.find(',') {
        out.push(rest[..c].trim_end_matches(is_java_space));
        rest = rest[c..]
            .trim_start_matches(',')
            .trim_start_matches(is_java_space);
    }
    out.push(rest);
    while out.last() == Some(&"") {
        out.pop();
    }
    out
}

/// Java `String.trim()`: strips every char `<= ' '` at both ends (not Unicode spaces such as
/// U+00A0).
pub fn java_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

/// Java `Character.isWhitespace`: the Unicode space, line and paragraph separators except the
/// no-break ones (U+00A0, U+2007, U+202F), plus `\t \n \x0B \f \r` and `\x1C`-`\x1F`.
pub fn is_java_whitespace(c: char) -> bool {
    match c {
        '\t' | '\n' | '\x0B' | '\x0C' | '\r' | '\x1C'..='\x1F' | ' ' => true,
        '\u{A0}' | '\u{2007}' | '\u{202F}' => false,
        '\u{1680}'
        | '\u{2000}'..='\u{200A}'
        | '\u{2028}'
        | '\u{2029}'
        | '\u{205F}'
        | '\u{3000}' => true,
        _ => false,
    }
}

/// Dubbo `StringUtils.isBlank`: empty or only [`is_java_whitespace`] characters.
pub fn is_java_blank(s: &str) -> bool {
    s.chars().all(is_java_whitespace)
}

/// Java regex `\s`: `[ \t\n\x0B\f\r]`.
pub(crate) fn is_java_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0B' | '\x0C' | '\r')
}

/// `URL.buildKey(path, group, version)`: `[group/]path[:version]`.
pub fn build_key(path: &str, group: Option<&str>, version: Option<&str>) -> String {
    let mut s = String::with_capacity(path.len() + 16);
    if let Some(g) = non_empty(group) {
        s.push_str(g);
        s.push('/');
    }
    s.push_str(path);
    if let Some(v) = non_empty(version) {
        s.push(':');
        s.push_str(v);
    }
    s
}

#[cfg(test)]
mod tests;
