//! Reading Prometheus scrapes in tests: the text exposition format (as micrometer and
//! `metrics-exporter-prometheus` write it) into samples, and families with their label keys.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// `(name, labels) -> value` of every sample of a scrape.
pub type Samples = BTreeMap<(String, BTreeMap<String, String>), f64>;

/// Parses the samples of a scrape (comments skipped; a trailing comma in the label set, as
/// micrometer writes it, is accepted).
pub fn parse(text: &str) -> Samples {
    let mut out = Samples::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (series, value) = match line.rsplit_once(' ') {
            Some(p) => p,
            None => continue,
        };
        let (name, labels) = match series.split_once('{') {
            Some((n, rest)) => (n, rest.trim_end_matches('}')),
            None => (series, ""),
        };
        let mut map = BTreeMap::new();
        let mut rest = labels;
        while let Some((k, after)) = rest.split_once("=\"") {
            let k = k.trim_start_matches(',').trim();
            let mut v = String::new();
            let mut chars = after.char_indices();
            let mut end = after.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, e)) = chars.next() {
                            v.push(match e {
                                'n' => '\n',
                                other => other,
                            });
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => v.push(c),
                }
            }
            map.insert(k.to_owned(), v);
            rest = &after[end..];
        }
        let value = match value {
            "NaN" => f64::NAN,
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().unwrap_or(f64::NAN),
        };
        out.insert((name.to_owned(), map), value);
    }
    out
}

/// Every family (sample name) with the label key sets its samples use.
pub fn families(s: &Samples) -> BTreeMap<String, BTreeSet<BTreeSet<String>>> {
    let mut out: BTreeMap<String, BTreeSet<BTreeSet<String>>> = BTreeMap::new();
    for (name, labels) in s.keys() {
        out.entry(name.clone())
            .or_default()
            .insert(labels.keys().cloned().collect());
    }
    out
}

/// The value of the sample `name` whose labels include every pair of `with`.
pub fn value(s: &Samples, name: &str, with: &[(&str, &str)]) -> Option<f64> {
    s.iter()
        .find(|((n, l), _)| {
            n == name
                && with
                    .iter()
                    .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|(_, v)| *v)
}

/// `GET http://addr/metrics`: the body, or `None` when nothing answers (yet).
pub async fn scrape(addr: &str) -> Option<String> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .no_proxy()
        .build()
        .ok()?;
    let r = client
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .ok()?;
    if !r.status().is_success() {
        return None;
    }
    r.text().await.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_writers() {
        let text = "# HELP a_total x\n# TYPE a_total counter\n\
            a_total{application_name=\"app\",group=\"\",method=\"say\\\"Hi\",} 2.0\n\
            b{x=\"1\"} 3\nc 4\n";
        let s = parse(text);
        assert_eq!(value(&s, "a_total", &[("method", "say\"Hi")]), Some(2.0));
        assert_eq!(value(&s, "a_total", &[("group", "")]), Some(2.0));
        assert_eq!(value(&s, "b", &[("x", "1")]), Some(3.0));
        assert_eq!(value(&s, "c", &[]), Some(4.0));
        let f = families(&s);
        assert_eq!(f["a_total"].len(), 1);
        assert!(f["a_total"]
            .iter()
            .next()
            .is_some_and(|k| k.len() == 3 && k.contains("method")));
    }
}
