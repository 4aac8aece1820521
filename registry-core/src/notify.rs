//! `AbstractRegistry.notify` semantics as plain functions every backend uses.

use crate::matching::{empty_url, is_match, PROVIDERS};
use crate::url::Url;

/// Keeps the URLs that [`is_match`] the consumer and groups them by
/// `getCategory("providers")`, in order of first appearance. Categories with no match are
/// absent (Dubbo does not call the listener for them).
pub fn group_by_category(consumer: &Url, urls: &[Url]) -> Vec<(String, Vec<Url>)> {
    let mut out: Vec<(String, Vec<Url>)> = Vec::new();
    for u in urls.iter().filter(|u| is_match(consumer, u)) {
        let cat = u.category_or(PROVIDERS);
        match out.iter_mut().find(|(c, _)| c == cat) {
            Some((_, v)) => v.push(u.clone()),
            None => out.push((cat.to_owned(), vec![u.clone()])),
        }
    }
    out
}

/// The list to publish for one category: `urls` if non-empty, else `[empty://]` built from the
/// consumer (`toUrlsWithEmpty`), or `None` when `empty_protection` holds back an empty providers
/// list.
pub fn with_empty_marker(
    consumer: &Url,
    category: &str,
    urls: Vec<Url>,
    empty_protection: bool,
) -> Option<Vec<Url>> {
    if !urls.is_empty() {
        return Some(urls);
    }
    if empty_protection && category == PROVIDERS {
        return None;
    }
    Some(vec![empty_url(consumer, category)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_and_filters() {
        let c = Url::parse("consumer://1.1.1.1/S?category=providers,routers&version=1").unwrap();
        let urls: Vec<Url> = [
            "dubbo://a:1/S?version=1",
            "route://0.0.0.0/S?category=routers&version=1",
            "dubbo://b:1/S?version=2",
        ]
        .iter()
        .map(|s| Url::parse(s).unwrap())
        .collect();
        let g = group_by_category(&c, &urls);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].0, "providers");
        assert_eq!(g[0].1.len(), 1);
        assert!(with_empty_marker(&c, "providers", vec![], true).is_none());
        let e = with_empty_marker(&c, "routers", vec![], true).unwrap();
        assert_eq!(e[0].protocol(), Some("empty"));
    }
}
