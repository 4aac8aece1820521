//! [`DirectoryDiscover`]: a registry directory as a `tower::discover` stream.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::watch;
use tower::discover::Change;

use super::InvokerService;
use crate::directory::{Directory, RegistryDirectory};
use crate::rpc::{Invocation, SharedInvoker};

type Changed = Pin<Box<dyn Future<Output = Option<watch::Receiver<u64>>> + Send>>;

/// The providers of a [`RegistryDirectory`] as a stream of `tower::discover::Change`s, keyed
/// by the provider's identity (its merged URL as `to_identity_string`; it may carry
/// credentials: do not log keys).
///
/// The first poll yields an `Insert` per provider the directory lists now; after every new
/// snapshot (providers, configurators or routers changed) the difference: `Remove` for a
/// provider gone, `Insert` for a new one, and `Remove` then `Insert` for a provider whose
/// invoker was replaced. The list is what [`Directory::list`] returns for the invocation of
/// [`DirectoryDiscover::for_invocation`] (default: method `*`), so the directory's routers
/// apply; a forbidden directory (`empty://`) lists nothing. The stream ends when the
/// directory is destroyed or dropped.
pub struct DirectoryDiscover {
    directory: Arc<RegistryDirectory>,
    invocation: Invocation,
    current: HashMap<Arc<str>, SharedInvoker>,
    pending: VecDeque<Change<Arc<str>, InvokerService>>,
    started: bool,
    changed: Option<Changed>,
    rx: Option<watch::Receiver<u64>>,
}

impl std::fmt::Debug for DirectoryDiscover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectoryDiscover")
            .field("directory", &self.directory)
            .field("invocation", &self.invocation.method())
            .field("providers", &self.current.len())
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

impl DirectoryDiscover {
    /// Follows `directory`'s providers for any method (`*`).
    pub fn new(directory: Arc<RegistryDirectory>) -> Self {
        let rx = directory.watch_changes();
        DirectoryDiscover {
            directory,
            invocation: Invocation::new("*"),
            current: HashMap::new(),
            pending: VecDeque::new(),
            started: false,
            changed: None,
            rx: Some(rx),
        }
    }

    /// Lists the providers `invocation` would be routed to (a method, attachments such as
    /// `dubbo.tag`) instead of method `*`.
    pub fn for_invocation(mut self, invocation: Invocation) -> Self {
        self.invocation = invocation;
        self
    }

    /// The number of providers announced and not removed.
    pub fn len(&self) -> usize {
        self.current.len()
    }

    /// True when no provider is announced.
    pub fn is_empty(&self) -> bool {
        self.current.is_empty()
    }

    /// Diffs the directory's current list against what was announced.
    fn resync(&mut self) {
        let listed = match self.directory.list(&self.invocation) {
            Ok(set) => set,
            Err(_) => {
                // Forbidden or destroyed: nothing to call.
                for (k, _) in self.current.drain() {
                    self.pending.push_back(Change::Remove(k));
                }
                return;
            }
        };
        let mut next: HashMap<Arc<str>, SharedInvoker> = HashMap::with_capacity(listed.len());
        for (inv, meta) in listed.invokers().iter().zip(listed.meta()) {
            next.insert(meta.identity().clone(), inv.clone());
        }
        let gone: Vec<Arc<str>> = self
            .current
            .iter()
            .filter(|(k, inv)| next.get(*k).is_none_or(|n| !Arc::ptr_eq(n, inv)))
            .map(|(k, _)| k.clone())
            .collect();
        for k in gone {
            self.current.remove(&k);
            self.pending.push_back(Change::Remove(k));
        }
        for (k, inv) in next {
            if !self.current.contains_key(&k) {
                self.current.insert(k.clone(), inv.clone());
                self.pending
                    .push_back(Change::Insert(k, InvokerService::new(inv)));
            }
        }
    }
}

impl Stream for DirectoryDiscover {
    type Item = Result<Change<Arc<str>, InvokerService>, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(c) = this.pending.pop_front() {
                return Poll::Ready(Some(Ok(c)));
            }
            if !this.started {
                this.started = true;
                if let Some(rx) = this.rx.as_mut() {
                    rx.borrow_and_update();
                }
                this.resync();
                continue;
            }
            if this.changed.is_none() {
                let Some(mut rx) = this.rx.take() else {
                    return Poll::Ready(None);
                };
                this.changed = Some(Box::pin(async move {
                    match rx.changed().await {
                        Ok(()) => Some(rx),
                        Err(_) => None,
                    }
                }));
            }
            let Some(fut) = this.changed.as_mut() else {
                return Poll::Ready(None);
            };
            match fut.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(next) => {
                    this.changed = None;
                    match next {
                        Some(mut rx) => {
                            rx.borrow_and_update();
                            this.rx = Some(rx);
                            this.resync();
                            if this.directory.is_destroyed() {
                                // Report the removals, then end.
                                this.rx = None;
                            }
                        }
                        None => {
                            for (k, _) in this.current.drain() {
                                this.pending.push_back(Change::Remove(k));
                            }
                        }
                    }
                }
            }
        }
    }
}
