//! Failback (`FailbackClusterInvoker`): on failure return an empty result and retry in the
//! background.
//!
//! Retries are bounded: at most `retries` background attempts per failed call (consumer URL,
//! service level, default 3, negative → 3, 0 → none) and at most `failbacktasks` pending
//! retry tasks per cluster (default 100; more are dropped with an error log). Each retry
//! lists the directory again and excludes the invoker that failed last.
//!
//! **Divergence** (`failback-exponential-backoff`): Dubbo retries every 5 s; here the first
//! retry is after 5 s and later ones back off exponentially (×2, capped at 60 s), each delay
//! plus up to 10 % random jitter, so a fleet of consumers does not retry in lock step.
//! Retry tasks end when the cluster invoker is dropped or destroyed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use registry_core::backoff::Backoff;

use super::core::ClusterCore;
use crate::invoker_set::InvokerSet;
use crate::loadbalance::LoadBalance;
use crate::rpc::{Invocation, RpcResponse, RpcResult, SharedInvoker};

/// The default background `retries` for failback.
pub const DEFAULT_FAILBACK_TIMES: i64 = 3;
/// The default `failbacktasks` (max pending retry tasks).
pub const DEFAULT_FAILBACK_TASKS: i64 = 100;

/// Timing of background retries.
#[derive(Debug, Clone, PartialEq)]
pub struct FailbackOptions {
    /// Delay before the first retry (Dubbo: 5 s).
    pub first_delay: Duration,
    /// Upper bound of a delay before jitter.
    pub max_delay: Duration,
    /// Factor between consecutive delays (1 = Dubbo's fixed period).
    pub multiplier: u32,
    /// Extra random delay, as a fraction of the delay (0.1 = up to +10 %).
    pub jitter: f64,
}

impl Default for FailbackOptions {
    fn default() -> Self {
        FailbackOptions {
            first_delay: Duration::from_secs(5),
            max_delay: Duration::from_secs(60),
            multiplier: 2,
            jitter: 0.1,
        }
    }
}

impl FailbackOptions {
    /// The schedule: `first_delay` times `multiplier` per attempt up to `max_delay`, plus up
    /// to `jitter` of each delay.
    pub fn backoff(&self) -> Backoff {
        let jitter = self.jitter.clamp(0.0, 1.0);
        Backoff::exponential(self.first_delay, self.max_delay)
            .with_multiplier(self.multiplier)
            .with_jitter(1.0, 1.0 + jitter)
    }

    /// The delay before background attempt `attempt` (1-based), without jitter.
    pub fn base_delay(&self, attempt: u32) -> Duration {
        self.backoff().nominal(attempt.saturating_sub(1))
    }

    /// The delay before background attempt `attempt`, with jitter.
    pub fn delay(&self, attempt: u32) -> Duration {
        self.backoff().delay(attempt.saturating_sub(1))
    }
}

/// `retries` for failback: consumer URL service-level value, default 3, negative → 3.
pub fn failback_retries(url: &registry_core::Url) -> u32 {
    let r = url.param_i64("retries", DEFAULT_FAILBACK_TIMES);
    let r = if r < 0 { DEFAULT_FAILBACK_TIMES } else { r };
    u32::try_from(r).unwrap_or(u32::MAX)
}

/// `failbacktasks`: default 100; <= 0 → 100.
pub fn failback_tasks(url: &registry_core::Url) -> usize {
    let t = url.param_i64("failbacktasks", DEFAULT_FAILBACK_TASKS);
    let t = if t <= 0 { DEFAULT_FAILBACK_TASKS } else { t };
    usize::try_from(t).unwrap_or(usize::MAX)
}

/// The background-retry state of one failback cluster; dropping it stops every retry task.
#[derive(Debug)]
pub(crate) struct Failback {
    options: FailbackOptions,
    token: CancellationToken,
    pending: Arc<AtomicUsize>,
}

impl Drop for Failback {
    fn drop(&mut self) {
        self.token.cancel();
    }
}

struct PendingGuard(Arc<AtomicUsize>);

impl Drop for PendingGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Failback {
    pub(crate) fn new(options: FailbackOptions) -> Self {
        Failback {
            options,
            token: CancellationToken::new(),
            pending: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Stops every retry task.
    pub(crate) fn stop(&self) {
        self.token.cancel();
    }

    /// Number of retry tasks still pending.
    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    pub(crate) async fn invoke(
        &self,
        core: &Arc<ClusterCore>,
        invocation: &Invocation,
        set: &InvokerSet,
        lb: Arc<dyn LoadBalance>,
    ) -> RpcResult {
        let (err, failed) = match core.select(&*lb, invocation, set, &[]) {
            None => (core.no_provider_error(invocation), None),
            Some(invoker) => match invoker.invoke(invocation).await {
                Ok(r) => return Ok(r),
                Err(e) if e.is_biz() => return Err(e),
                Err(e) => (e, Some(invoker)),
            },
        };
        error!(
            method = invocation.real_method(),
            service = core.interface(),
            error = %err,
            "Failback to invoke method, wait for retry in background. Ignored exception"
        );
        self.schedule(core, invocation, lb, failed);
        Ok(RpcResponse::empty())
    }

    fn schedule(
        &self,
        core: &Arc<ClusterCore>,
        invocation: &Invocation,
        lb: Arc<dyn LoadBalance>,
        failed: Option<SharedInvoker>,
    ) {
        let url = core.directory().consumer_url();
        let retries = failback_retries(&url);
        if retries == 0 || self.token.is_cancelled() {
            return;
        }
        let max = failback_tasks(&url);
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            warn!(
                method = invocation.real_method(),
                "Failback retry dropped: no tokio runtime"
            );
            return;
        };
        // Reserve a slot; never exceed `failbacktasks`.
        let admitted = self
            .pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| {
                (p < max).then_some(p + 1)
            })
            .is_ok();
        if !admitted {
            error!(
                method = invocation.real_method(),
                max_pending = max,
                "Failback background works error: too many pending retry tasks, retry dropped"
            );
            return;
        }
        let guard = PendingGuard(self.pending.clone());
        let core = core.clone();
        let invocation = invocation.clone();
        let token = self.token.clone();
        let options = self.options.clone();
        handle.spawn(async move {
            let _guard = guard;
            let mut last = failed;
            for attempt in 1..=retries {
                tokio::select! {
                    _ = token.cancelled() => return,
                    _ = tokio::time::sleep(options.delay(attempt)) => {}
                }
                if core.is_destroyed() {
                    return;
                }
                let outcome = tokio::select! {
                    _ = token.cancelled() => return,
                    r = retry_once(&core, &invocation, &*lb, &mut last) => r,
                };
                match outcome {
                    Ok(_) => {
                        info!(
                            method = invocation.real_method(),
                            attempt, "Failback retry succeeded"
                        );
                        return;
                    }
                    Err(e) => warn!(
                        method = invocation.real_method(),
                        attempt,
                        error = %e,
                        "Failback retry failed"
                    ),
                }
            }
            error!(
                method = invocation.real_method(),
                retries, "Failed retry times exceed threshold, we have to abandon the invocation"
            );
        });
    }
}

async fn retry_once(
    core: &ClusterCore,
    invocation: &Invocation,
    lb: &dyn LoadBalance,
    last: &mut Option<SharedInvoker>,
) -> RpcResult {
    crate::metrics::retry();
    let set = core.list_checked(invocation)?;
    let exclude: &[SharedInvoker] = last.as_slice();
    let Some(invoker) = core.select(lb, invocation, &set, exclude) else {
        return Err(core.no_provider_error(invocation));
    };
    *last = Some(invoker.clone());
    invoker.invoke(invocation).await
}
