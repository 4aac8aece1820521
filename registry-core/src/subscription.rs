//! The ordered, coalescing notification stream between a registry backend and its subscriber.
//!
//! A backend holds a [`Publisher`]; the consumer holds the [`Subscription`]. Guarantees:
//! - every [`Notification`] carries the **complete** current list of one category, never a
//!   delta, and never an empty list ("no providers" is a single `empty://` URL);
//! - per category, notifications arrive in the order they were published; when the consumer is
//!   slower than the registry, intermediate lists of a category are replaced by newer ones
//!   (coalescing), so memory stays bounded and the **latest** list is always delivered;
//! - across categories, a category is delivered in the order it first became pending;
//! - dropping the [`Subscription`] unsubscribes: the publisher sees [`Publisher::is_closed`]
//!   and [`Publisher::closed`] completes, so backend tasks end with their owner.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use parking_lot::Mutex;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::url::Url;

/// The complete current list of one category for one subscription.
#[derive(Clone, PartialEq, Eq)]
pub struct Notification {
    /// `providers`, `configurators`, `routers`, `consumers`, ...
    pub category: Arc<str>,
    /// Never empty; `[empty://...]` means the category has no entries.
    pub urls: Arc<[Url]>,
}

impl Notification {
    /// True when this notification says "no entries" (a single `empty://` URL).
    pub fn is_empty_marker(&self) -> bool {
        self.urls.len() == 1 && self.urls[0].protocol() == Some("empty")
    }
}

impl fmt::Debug for Notification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notification")
            .field("category", &self.category)
            .field("urls", &self.urls.len())
            .finish()
    }
}

struct State {
    /// Pending notifications, at most one per category.
    pending: VecDeque<Notification>,
    /// Last list published per category (for change detection).
    last: Vec<Notification>,
    publisher_gone: bool,
    waker: Option<std::task::Waker>,
}

struct Shared {
    state: Mutex<State>,
    /// Live [`Publisher`] clones; the stream ends when it reaches zero.
    publishers: AtomicUsize,
    /// Cancelled when the subscription is dropped.
    unsubscribed: CancellationToken,
    /// Called (outside the lock) after each queued notification; used by the failback layer
    /// to schedule a debounced cache-file save off the notify path.
    on_publish: Option<PublishHook>,
}

/// A cheap callback run after every queued notification (it must not block).
pub type PublishHook = Arc<dyn Fn() + Send + Sync>;

/// Creates a connected publisher / subscription pair for `consumer`.
pub fn channel(consumer: Url) -> (Publisher, Subscription) {
    channel_with_hook(consumer, None)
}

/// Like [`channel`], with a hook called after every queued notification.
pub fn channel_with_hook(
    consumer: Url,
    on_publish: Option<PublishHook>,
) -> (Publisher, Subscription) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            pending: VecDeque::new(),
            last: Vec::new(),
            publisher_gone: false,
            waker: None,
        }),
        unsubscribed: CancellationToken::new(),
        publishers: AtomicUsize::new(1),
        on_publish,
    });
    (
        Publisher {
            shared: shared.clone(),
            consumer: consumer.clone(),
        },
        Subscription { shared, consumer },
    )
}

/// The backend's end of a subscription. Cloneable; the stream ends when every clone is gone.
pub struct Publisher {
    shared: Arc<Shared>,
    consumer: Url,
}

impl Publisher {
    /// The subscribed (consumer) URL.
    pub fn consumer(&self) -> &Url {
        &self.consumer
    }

    /// Publishes the complete list of `category`. An empty `urls` is ignored (the caller must
    /// send an `empty://` URL to say "none"). Returns false when the subscriber is gone.
    pub fn publish(&self, category: &str, urls: Arc<[Url]>) -> bool {
        if urls.is_empty() {
            return !self.is_closed();
        }
        self.push(category, urls, false)
    }

    /// Like [`Publisher::publish`], but does nothing when the list equals the last one
    /// published for that category (same URLs in the same order, timestamps included).
    /// Returns true when something was queued.
    pub fn publish_if_changed(&self, category: &str, urls: Arc<[Url]>) -> bool {
        if urls.is_empty() || self.is_closed() {
            return false;
        }
        self.push(category, urls, true)
    }

    fn push(&self, category: &str, urls: Arc<[Url]>, only_changed: bool) -> bool {
        if self.is_closed() {
            return false;
        }
        let count = urls.len();
        let waker = {
            let mut st = self.shared.state.lock();
            let last = st.last.iter_mut().find(|n| &*n.category == category);
            if only_changed {
                if let Some(last) = &last {
                    if same_list(&last.urls, &urls) {
                        return false;
                    }
                }
            }
            let category: Arc<str> = match last {
                Some(l) => {
                    l.urls = urls.clone();
                    l.category.clone()
                }
                None => {
                    let c: Arc<str> = Arc::from(category);
                    st.last.push(Notification {
                        category: c.clone(),
                        urls: urls.clone(),
                    });
                    c
                }
            };
            match st.pending.iter_mut().find(|n| n.category == category) {
                Some(p) => p.urls = urls,
                None => st.pending.push_back(Notification { category, urls }),
            }
            st.waker.take()
        };
        crate::metrics::notification();
        tracing::debug!(
            service = self.consumer.service_interface().unwrap_or(""),
            category,
            count,
            "notify"
        );
        if let Some(w) = waker {
            w.wake();
        }
        if let Some(h) = &self.shared.on_publish {
            h();
        }
        true
    }

    /// The last list published for every category, in the order categories first appeared.
    pub fn last_all(&self) -> Vec<Notification> {
        self.shared.state.lock().last.clone()
    }

    /// The last list published for `category`, if any.
    pub fn last(&self, category: &str) -> Option<Arc<[Url]>> {
        let st = self.shared.state.lock();
        st.last
            .iter()
            .find(|n| &*n.category == category)
            .map(|n| n.urls.clone())
    }

    /// True when both publishers feed the same subscription.
    pub fn same_channel(a: &Publisher, b: &Publisher) -> bool {
        Arc::ptr_eq(&a.shared, &b.shared)
    }

    /// True once the subscription has been dropped.
    pub fn is_closed(&self) -> bool {
        self.shared.unsubscribed.is_cancelled()
    }

    /// Completes when the subscription is dropped.
    pub fn closed(&self) -> WaitForCancellationFutureOwned {
        self.shared.unsubscribed.clone().cancelled_owned()
    }

    /// A token cancelled when the subscription is dropped (for `select!` in backend tasks).
    pub fn closed_token(&self) -> CancellationToken {
        self.shared.unsubscribed.clone()
    }
}

impl Clone for Publisher {
    fn clone(&self) -> Self {
        self.shared.publishers.fetch_add(1, Ordering::Relaxed);
        Publisher {
            shared: self.shared.clone(),
            consumer: self.consumer.clone(),
        }
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        // The last publisher gone ends the stream after its pending items.
        if self.shared.publishers.fetch_sub(1, Ordering::AcqRel) == 1 {
            let waker = {
                let mut st = self.shared.state.lock();
                st.publisher_gone = true;
                st.waker.take()
            };
            if let Some(w) = waker {
                w.wake();
            }
        }
    }
}

impl fmt::Debug for Publisher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Publisher")
            .field("consumer", &self.consumer.to_string())
            .finish()
    }
}

fn same_list(a: &[Url], b: &[Url]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            Url::ptr_eq(x, y) || (x == y && x.param("timestamp") == y.param("timestamp"))
        })
}

/// The consumer's end: an ordered stream of [`Notification`]s. Dropping it unsubscribes.
pub struct Subscription {
    shared: Arc<Shared>,
    consumer: Url,
}

impl Subscription {
    /// The subscribed (consumer) URL.
    pub fn consumer(&self) -> &Url {
        &self.consumer
    }

    /// The next notification; `None` when the registry ended the stream (destroyed).
    pub async fn next(&mut self) -> Option<Notification> {
        std::future::poll_fn(|cx| self.poll_next_inner(cx)).await
    }

    /// Takes a pending notification without waiting.
    pub fn try_next(&mut self) -> Option<Notification> {
        self.shared.state.lock().pending.pop_front()
    }

    fn poll_next_inner(&self, cx: &mut Context<'_>) -> Poll<Option<Notification>> {
        let mut st = self.shared.state.lock();
        if let Some(n) = st.pending.pop_front() {
            return Poll::Ready(Some(n));
        }
        if st.publisher_gone {
            return Poll::Ready(None);
        }
        st.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Stream for Subscription {
    type Item = Notification;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Notification>> {
        self.poll_next_inner(cx)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.shared.unsubscribed.cancel();
    }
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("consumer", &self.consumer.to_string())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(s: &[&str]) -> Arc<[Url]> {
        s.iter().map(|x| Url::parse(x).unwrap()).collect()
    }

    #[tokio::test]
    async fn coalesces_per_category_in_order() {
        let (p, mut s) = channel(Url::parse("consumer://1.1.1.1/S").unwrap());
        assert!(p.publish("providers", urls(&["dubbo://a:1/S"])));
        assert!(p.publish("routers", urls(&["empty://1.1.1.1/S?category=routers"])));
        assert!(p.publish("providers", urls(&["dubbo://a:1/S", "dubbo://b:1/S"])));
        let n = s.next().await.unwrap();
        assert_eq!(&*n.category, "providers");
        assert_eq!(n.urls.len(), 2);
        let n = s.next().await.unwrap();
        assert_eq!(&*n.category, "routers");
        assert!(n.is_empty_marker());
        assert!(!p.publish_if_changed("providers", urls(&["dubbo://a:1/S", "dubbo://b:1/S"])));
        assert!(s.try_next().is_none());
        drop(p);
        assert!(s.next().await.is_none());
    }

    #[tokio::test]
    async fn dropping_subscription_closes_publisher() {
        let (p, s) = channel(Url::parse("consumer://1.1.1.1/S").unwrap());
        assert!(!p.is_closed());
        drop(s);
        p.closed().await;
        assert!(!p.publish("providers", urls(&["dubbo://a:1/S"])));
    }
}
