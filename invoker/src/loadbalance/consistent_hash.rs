//! `consistenthash` (`ConsistentHashLoadBalance`): a ketama ring of MD5 virtual nodes per service
//! key + method.

use std::io::{self, Write};
use std::sync::{Arc, Weak};

use arc_swap::ArcSwapOption;
use md5::{Digest, Md5};
use registry_core::url::comma_split;

use super::{write_java_string_value, KeyedCache, LoadBalance};
use crate::invoker_set::InvokerSet;
use crate::rpc::{Invocation, Invoker};

/// Dubbo's default `hash.nodes`.
pub const DEFAULT_REPLICAS: i64 = 160;
/// The most virtual nodes per invoker a `hash.nodes` value may ask for, by default.
pub const DEFAULT_MAX_REPLICAS: i64 = 16_384;
/// The most points one ring may hold, by default (2^23, 64 MiB of points: 50,000 providers at
/// the default 160 virtual nodes fit).
pub const DEFAULT_MAX_RING_POINTS: usize = 1 << 23;

/// The virtual nodes per invoker a ring of `n` invokers gets when the URL asks for
/// `replicas`: as asked when within the limits; else at most `max_replicas`, and fewer (but at
/// least 4, one MD5 digest) when `n` invokers would pass `max_points`, as a multiple of 4
/// (Dubbo makes `replicas / 4` digests of 4 points).
pub fn effective_replicas(replicas: i64, n: usize, max_replicas: i64, max_points: usize) -> i64 {
    let n = i64::try_from(n.max(1)).unwrap_or(i64::MAX);
    let max_points = i64::try_from(max_points).unwrap_or(i64::MAX);
    let mut r = replicas.min(max_replicas.max(4));
    if r > 0 && r.saturating_mul(n) > max_points {
        r = (max_points / n).max(4);
    }
    if r == replicas {
        r
    } else {
        r - r % 4
    }
}

/// One ring: sorted `(hash, invoker index)` points.
#[derive(Debug)]
struct Ring {
    content_hash: u64,
    first: Option<Weak<dyn Invoker>>,
    replicas: i64,
    arguments: Box<[usize]>,
    points: Box<[(u32, u32)]>,
    /// Radix index: `index[b]` is the first point whose hash is >= `b << shift`, so a lookup
    /// binary-searches only one small bucket (about two cache misses instead of ~16).
    index: Box<[u32]>,
    shift: u32,
}

impl Ring {
    fn index(points: &[(u32, u32)]) -> (Box<[u32]>, u32) {
        // About two points per bucket, at least 2 and at most 2^20 buckets.
        let bits = (usize::BITS - points.len().max(4).leading_zeros() - 2).clamp(1, 20);
        let shift = 32 - bits;
        let buckets = 1usize << bits;
        let mut index = Vec::with_capacity(buckets + 1);
        let mut p = 0usize;
        for b in 0..buckets {
            let start = u64::try_from(b).unwrap_or(u64::MAX) << shift;
            while p < points.len() && u64::from(points[p].0) < start {
                p += 1;
            }
            index.push(u32::try_from(p).unwrap_or(u32::MAX));
        }
        index.push(u32::try_from(points.len()).unwrap_or(u32::MAX));
        (index.into_boxed_slice(), shift)
    }

    /// The position in `points` of the ceiling point of `hash` (may be `points.len()`: wrap).
    fn position(&self, hash: u32) -> usize {
        let b = (hash >> self.shift) as usize;
        let lo = self.index.get(b).map_or(0, |&x| x as usize);
        let hi = self
            .index
            .get(b + 1)
            .map_or(self.points.len(), |&x| x as usize);
        lo + self
            .points
            .get(lo..hi)
            .map_or(0, |bucket| bucket.partition_point(|p| p.0 < hash))
    }

    /// The invoker index of the ceiling point of `hash`, wrapping to the first.
    fn ceiling(&self, hash: u32) -> Option<u32> {
        let i = self.position(hash);
        self.points
            .get(i)
            .or_else(|| self.points.first())
            .map(|p| p.1)
    }

    /// The first invoker clockwise from `hash` that is not excluded.
    fn ceiling_excluding(&self, hash: u32, excluded: &dyn Fn(usize) -> bool) -> Option<usize> {
        let len = self.points.len();
        let start = self.position(hash);
        (0..len)
            .map(|k| self.points[(start + k) % len].1 as usize)
            .find(|&i| !excluded(i))
    }
}

/// Word `k` (0..4) of an MD5 digest, little-endian (Dubbo's ketama `hash(digest, k)`).
fn word(d: &[u8], k: usize) -> u32 {
    let b = &d[4 * k..4 * k + 4];
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// The points of one ring, as Dubbo's `TreeMap` holds them: every address contributes
/// `replicas / 4` digests of `address + i`, 4 points each; a later point with the same hash
/// replaces an earlier one.
pub fn ring_points<'a>(
    addresses: impl IntoIterator<Item = &'a str>,
    replicas: i64,
) -> Vec<(u32, u32)> {
    let per = usize::try_from(replicas / 4).unwrap_or(0);
    let mut points = Vec::new();
    let mut num = itoa_buf();
    for (idx, addr) in addresses.into_iter().enumerate() {
        let idx = u32::try_from(idx).unwrap_or(u32::MAX);
        for i in 0..per {
            let mut h = Md5::new();
            h.update(addr.as_bytes());
            h.update(fmt_usize(&mut num, i));
            let d = h.finalize();
            for k in 0..4 {
                points.push((word(&d, k), idx));
            }
        }
    }
    // Stable sort keeps insertion order among equal hashes; keep the last of each run.
    points.sort_by_key(|p| p.0);
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(points.len());
    for p in points {
        match out.last_mut() {
            Some(last) if last.0 == p.0 => *last = p,
            _ => out.push(p),
        }
    }
    out
}

fn itoa_buf() -> [u8; 20] {
    [0; 20]
}

fn fmt_usize(buf: &mut [u8; 20], mut v: usize) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        // v % 10 < 10: the cast cannot truncate.
        buf[i] = b'0' + u8::try_from(v % 10).unwrap_or(0);
        v /= 10;
        if v == 0 {
            break;
        }
    }
    &buf[i..]
}

/// The ring position of a key: word 0 of `MD5(key)`.
pub fn key_hash(key: &str) -> u32 {
    word(&Md5::digest(key.as_bytes()), 0)
}

/// The index in `points` of the ceiling entry of `hash`, wrapping to the first.
pub fn ceiling(points: &[(u32, u32)], hash: u32) -> Option<u32> {
    let i = points.partition_point(|p| p.0 < hash);
    points.get(i).or_else(|| points.first()).map(|p| p.1)
}

struct HashWriter<'a>(&'a mut Md5);

impl Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Consistent hash: the same arguments go to the same provider while the provider list is
/// unchanged, and a provider change moves only its share of keys.
///
/// `hash.nodes` (default 160) and `hash.arguments` (COMMA_SPLIT, default `0`) are read from the
/// first invoker, method level. The key is the concatenation of `String.valueOf(arg)` (see
/// [`write_java_string_value`]) of the selected real arguments (generic `$invoke` uses the real
/// method and arguments). The ring is cached per (service key, method) and rebuilt when the set's
/// content (identities in order) or its first invoker changes.
///
/// `hash.nodes` comes from provider URLs and the config centre, so it is bounded (see
/// [`effective_replicas`]): at most [`DEFAULT_MAX_REPLICAS`] virtual nodes per invoker and
/// [`DEFAULT_MAX_RING_POINTS`] points per ring, or the limits given to
/// [`ConsistentHashLoadBalance::with_limits`]. Java builds whatever the URL says (one
/// `hash.nodes=2147483647` exhausts its heap).
#[derive(Debug)]
pub struct ConsistentHashLoadBalance {
    rings: KeyedCache<ArcSwapOption<Ring>>,
    max_replicas: i64,
    max_points: usize,
}

impl Default for ConsistentHashLoadBalance {
    fn default() -> Self {
        ConsistentHashLoadBalance::with_limits(DEFAULT_MAX_REPLICAS, DEFAULT_MAX_RING_POINTS)
    }
}

impl ConsistentHashLoadBalance {
    /// A balancer with no cached rings and the default limits.
    pub fn new() -> Self {
        ConsistentHashLoadBalance::default()
    }

    /// A balancer whose rings have at most `max_replicas` virtual nodes per invoker (however
    /// large `hash.nodes` is) and at most `max_points` points.
    pub fn with_limits(max_replicas: i64, max_points: usize) -> Self {
        ConsistentHashLoadBalance {
            rings: KeyedCache::default(),
            max_replicas: max_replicas.max(4),
            max_points: max_points.max(4),
        }
    }

    fn build(&self, set: &InvokerSet, method: &str) -> Ring {
        let first = set.get(0);
        let (replicas, arguments) = first.map_or((DEFAULT_REPLICAS, vec![0]), |f| {
            let url = f.url();
            let replicas = url.method_param_i64(method, "hash.nodes", DEFAULT_REPLICAS);
            let args = comma_split(url.method_param_or(method, "hash.arguments", "0"))
                .into_iter()
                .filter_map(|s| s.parse::<usize>().ok())
                .collect();
            (replicas, args)
        });
        let addresses: Vec<String> = set
            .invokers()
            .iter()
            .map(|i| i.url().address().unwrap_or_default())
            .collect();
        let replicas = effective_replicas(
            replicas,
            addresses.len(),
            self.max_replicas,
            self.max_points,
        );
        let points = ring_points(addresses.iter().map(String::as_str), replicas);
        let (index, shift) = Ring::index(&points);
        Ring {
            content_hash: set.content_hash(),
            first: first.map(Arc::downgrade),
            replicas,
            arguments: arguments.into_boxed_slice(),
            index,
            shift,
            points: points.into_boxed_slice(),
        }
    }

    /// The replicas and points of the cached ring of (`service_key`, `method`), if any.
    pub fn ring_size(&self, service_key: &str, method: &str) -> Option<(i64, usize)> {
        let cell = self.rings.get(service_key, method)?;
        let ring = cell.load();
        ring.as_ref().map(|r| (r.replicas, r.points.len()))
    }
}

fn valid(ring: &Ring, set: &InvokerSet) -> bool {
    ring.content_hash == set.content_hash()
        && match (&ring.first, set.get(0)) {
            (Some(w), Some(f)) => {
                w.strong_count() > 0 && std::ptr::addr_eq(w.as_ptr(), Arc::as_ptr(f))
            }
            _ => false,
        }
}

fn select_in(ring: &Ring, invocation: &Invocation) -> usize {
    ring.ceiling(key_of(ring, invocation))
        .map_or(0, |i| i as usize)
}

/// Word 0 of the MD5 of the invocation's key.
fn key_of(ring: &Ring, invocation: &Invocation) -> u32 {
    let args = invocation.real_arguments();
    let mut h = Md5::new();
    for &i in ring.arguments.iter() {
        if let Some(a) = args.get(i) {
            // Hashing cannot fail.
            let _ = write_java_string_value(&mut HashWriter(&mut h), a);
        }
    }
    word(&h.finalize(), 0)
}

impl LoadBalance for ConsistentHashLoadBalance {
    fn select(&self, set: &InvokerSet, invocation: &Invocation) -> Option<usize> {
        match set.len() {
            0 => return None,
            1 => return Some(0),
            _ => {}
        }
        let method = invocation.real_method();
        let i = self
            .rings
            .with(set.service_key(), method, ArcSwapOption::empty, |cell| {
                let cur = cell.load();
                if let Some(r) = cur.as_ref().filter(|r| valid(r, set)) {
                    return select_in(r, invocation);
                }
                let ring = Arc::new(self.build(set, method));
                let i = select_in(&ring, invocation);
                cell.store(Some(ring));
                i
            });
        Some(i.min(set.len() - 1))
    }

    /// Reselect: the next invoker clockwise on the same ring that is not excluded (Dubbo
    /// builds a new ring over the remaining invokers, which also evicts the cached ring of the
    /// full list; walking on keeps both the ring and the key's neighbourhood).
    fn select_excluding(
        &self,
        set: &InvokerSet,
        invocation: &Invocation,
        excluded: &dyn Fn(usize) -> bool,
    ) -> Option<usize> {
        if set.is_empty() {
            return None;
        }
        let method = invocation.real_method();
        self.rings
            .with(set.service_key(), method, ArcSwapOption::empty, |cell| {
                let cur = cell.load();
                if let Some(r) = cur.as_ref().filter(|r| valid(r, set)) {
                    return r.ceiling_excluding(key_of(r, invocation), excluded);
                }
                let ring = Arc::new(self.build(set, method));
                let i = ring.ceiling_excluding(key_of(&ring, invocation), excluded);
                cell.store(Some(ring));
                i
            })
            .filter(|&i| i < set.len())
    }

    fn name(&self) -> &'static str {
        "consistenthash"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(addresses: &[&str], replicas: i64, key: &str) -> String {
        let pts = ring_points(addresses.iter().copied(), replicas);
        let i = ceiling(&pts, key_hash(key)).unwrap() as usize;
        addresses[i].to_owned()
    }

    #[test]
    fn radix_index_agrees_with_binary_search() {
        for n in [1usize, 2, 3, 7, 40, 255] {
            let addrs: Vec<String> = (0..n)
                .map(|i| format!("10.0.{}.{}:20880", i / 256, i % 256))
                .collect();
            let points = ring_points(addrs.iter().map(String::as_str), 160);
            let (index, shift) = Ring::index(&points);
            let ring = Ring {
                content_hash: 0,
                first: None,
                replicas: 160,
                arguments: Box::new([0]),
                points: points.clone().into_boxed_slice(),
                index,
                shift,
            };
            let mut h = 0x9e37_79b9u32;
            for probe in [0u32, 1, u32::MAX, u32::MAX - 1]
                .into_iter()
                .chain((0..2000).map(|_| {
                    h ^= h << 13;
                    h ^= h >> 17;
                    h ^= h << 5;
                    h
                }))
            {
                assert_eq!(
                    ring.ceiling(probe),
                    ceiling(&points, probe),
                    "n={n} probe={probe}"
                );
            }
            for p in points.iter().take(50) {
                assert_eq!(ring.ceiling(p.0), ceiling(&points, p.0));
            }
        }
    }

    #[test]
    fn replicas_are_bounded() {
        assert_eq!(effective_replicas(160, 5, 16_384, 1 << 23), 160);
        assert_eq!(effective_replicas(i64::MAX, 3, 16_384, 1 << 23), 16_384);
        assert_eq!(
            effective_replicas(2_147_483_647, 3, 16_384, 1 << 23),
            16_384
        );
        // 50,000 providers at the default fit; 100,000 get fewer nodes each.
        assert_eq!(effective_replicas(160, 50_000, 16_384, 1 << 23), 160);
        assert_eq!(effective_replicas(160, 100_000, 16_384, 1 << 23), 80);
        assert_eq!(effective_replicas(160, 10_000_000, 16_384, 1 << 23), 4);
        // Non-positive values keep Java's meaning (no points).
        assert_eq!(effective_replicas(0, 3, 16_384, 1 << 23), 0);
        assert_eq!(effective_replicas(-8, 3, 16_384, 1 << 23), -8);
        assert_eq!(effective_replicas(7, 3, 16_384, 1 << 23), 7);
        assert_eq!(effective_replicas(16_387, 3, 16_387, 40_000), 13_332);
    }

    #[test]
    fn vectors() {
        let five = [
            "127.0.0.1:1",
            "127.0.0.1:2",
            "127.0.0.1:3",
            "127.0.0.1:4",
            "127.0.0.1:5",
        ];
        assert_eq!(pick(&five, 160, "arg2"), "127.0.0.1:3");
        assert_eq!(pick(&five, 160, ""), "127.0.0.1:4");
        assert_eq!(pick(&five, 160, "1"), "127.0.0.1:5");
        assert_eq!(pick(&five, 160, "null"), "127.0.0.1:1");
        let three = ["10.0.0.1:20880", "10.0.0.2:20880", "10.0.0.3:20880"];
        assert_eq!(pick(&three, 160, "a"), "10.0.0.2:20880");
        assert_eq!(pick(&three, 8, "order-1"), "10.0.0.1:20880");
    }
}
