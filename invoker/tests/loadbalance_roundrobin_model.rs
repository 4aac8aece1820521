//! Round robin against a straightforward model of Dubbo's smooth WRR (a map of identity →
//! (weight, current), a full scan per pick): the balancer's fast paths (equal-weight heap
//! mode, per-set aligned state) must produce exactly the same sequence whatever happens to
//! the provider list and the weights.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on bad fixtures

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use invoker::invoker_set::InvokerSet;
use invoker::loadbalance::{LoadBalance, RoundRobinLoadBalance};
use invoker::rpc::{Invocation, Invoker, RpcResponse, RpcResult};
use proptest::prelude::*;
use registry_core::Url;

#[derive(Debug)]
struct UrlInvoker(Url);

#[async_trait]
impl Invoker for UrlInvoker {
    fn url(&self) -> &Url {
        &self.0
    }
    async fn invoke(&self, _invocation: &Invocation) -> RpcResult {
        Ok(RpcResponse::empty())
    }
}

#[derive(Default)]
struct Model {
    state: HashMap<String, (i64, i64)>,
}

impl Model {
    fn select(&mut self, list: &[(String, i64)]) -> usize {
        if list.len() == 1 {
            // `AbstractLoadBalance.select` returns a single invoker without `doSelect`.
            return 0;
        }
        let (mut max, mut picked, mut total) = (i64::MIN, 0, 0);
        for (i, (id, w)) in list.iter().enumerate() {
            let e = self.state.entry(id.clone()).or_insert((*w, 0));
            if e.0 != *w {
                *e = (*w, 0);
            }
            e.1 += w;
            if e.1 > max {
                max = e.1;
                picked = i;
            }
            total += w;
        }
        if let Some(e) = self.state.get_mut(&list[picked].0) {
            e.1 -= total;
        }
        picked
    }
}

fn build(tag: &str, list: &[(String, i64)]) -> InvokerSet {
    InvokerSet::new(
        list.iter()
            .map(|(id, w)| {
                Arc::new(UrlInvoker(
                    Url::parse(&format!("test://{tag}-{id}:1/S?weight={w}")).unwrap(),
                )) as Arc<dyn Invoker>
            })
            .collect(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Each phase: a list of (provider id, weight) and a number of picks. Weights are drawn
    /// from a small range so that many phases have all-equal weights.
    #[test]
    fn same_sequence_as_the_model(
        phases in proptest::collection::vec(
            (
                proptest::collection::btree_map(0u8..12, 1i64..3, 1..8),
                1usize..40,
                proptest::option::of(1i64..4),
            ),
            1..8,
        ),
        case in any::<u64>(),
    ) {
        let tag = format!("rrm{case}");
        let lb = RoundRobinLoadBalance::new();
        let mut model = Model::default();
        let call = Invocation::new("m");
        for (providers, picks, equal) in phases {
            let list: Vec<(String, i64)> = providers
                .into_iter()
                .map(|(id, w)| (id.to_string(), equal.unwrap_or(w)))
                .collect();
            let set = build(&tag, &list);
            // The model keys by the same identity the balancer uses.
            let keyed: Vec<(String, i64)> = set
                .meta()
                .iter()
                .zip(&list)
                .map(|(m, (_, w))| (m.identity().to_string(), *w))
                .collect();
            for _ in 0..picks {
                let want = model.select(&keyed);
                let got = lb.select(&set, &call).unwrap();
                prop_assert_eq!(got, want);
            }
        }
    }
}

/// Equal weights change for everyone (heap mode re-initialised), then become unequal with one
/// invoker keeping the new weight: its current must survive.
#[test]
fn equal_weight_change_then_unequal_matches_model() {
    let lb = RoundRobinLoadBalance::new();
    let mut model = Model::default();
    let call = Invocation::new("m");
    let phases: [(&[i64], usize); 4] = [
        (&[2, 2, 2], 4),
        (&[3, 3, 3], 5),
        (&[3, 1, 2], 7),
        (&[3, 3, 3], 4),
    ];
    for (weights, picks) in phases {
        let list: Vec<(String, i64)> = weights
            .iter()
            .enumerate()
            .map(|(i, w)| (i.to_string(), *w))
            .collect();
        let set = build("rr-eq-change", &list);
        let keyed: Vec<(String, i64)> = set
            .meta()
            .iter()
            .zip(&list)
            .map(|(m, (_, w))| (m.identity().to_string(), *w))
            .collect();
        for _ in 0..picks {
            assert_eq!(
                lb.select(&set, &call).unwrap(),
                model.select(&keyed),
                "weights {weights:?}"
            );
        }
    }
}

/// Reselect (`select_excluding`) behaves like Dubbo running round robin on the sub-list of the
/// not-excluded invokers, and shares the per-identity state with normal selects.
#[test]
fn select_excluding_matches_model_on_the_sub_list() {
    let lb = RoundRobinLoadBalance::new();
    let mut model = Model::default();
    let call = Invocation::new("m");
    for weights in [[1i64, 1, 1, 1, 1], [5, 1, 3, 2, 4]] {
        let list: Vec<(String, i64)> = weights
            .iter()
            .enumerate()
            .map(|(i, w)| (i.to_string(), *w))
            .collect();
        let set = build(&format!("rr-ex-{}", weights[0]), &list);
        let keyed: Vec<(String, i64)> = set
            .meta()
            .iter()
            .zip(&list)
            .map(|(m, (_, w))| (m.identity().to_string(), *w))
            .collect();
        for round in 0..30usize {
            let skip = round % 5;
            if round % 3 == 0 {
                let sub: Vec<(String, i64)> = keyed
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != skip)
                    .map(|(_, x)| x.clone())
                    .collect();
                let want = model.select(&sub);
                let want = if want >= skip { want + 1 } else { want };
                let got = lb.select_excluding(&set, &call, &|i| i == skip).unwrap();
                assert_eq!(got, want, "round {round} weights {weights:?}");
            } else {
                assert_eq!(
                    lb.select(&set, &call).unwrap(),
                    model.select(&keyed),
                    "round {round}"
                );
            }
        }
    }
}
