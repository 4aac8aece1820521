//! [`MockRegistry`]: what Java finds by class name: impl mocks and exception classes.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use parking_lot::RwLock;

use crate::rpc::{Invocation, RpcResult};

/// An impl mock: answers calls in place of the providers (Dubbo's `<Interface>Mock` class).
pub trait MockImpl: Send + Sync {
    /// Answers one call.
    fn invoke(&self, invocation: &Invocation) -> RpcResult;
}

impl<F> MockImpl for F
where
    F: Fn(&Invocation) -> RpcResult + Send + Sync,
{
    fn invoke(&self, invocation: &Invocation) -> RpcResult {
        self(invocation)
    }
}

/// An impl mock whose answers complete later: the counterpart of a Java mock class whose
/// methods return a `CompletableFuture` (Dubbo's proxy invoker waits for the future and the
/// call completes with its value or its exception). The returned future is awaited by the
/// mock cluster; it must not borrow the invocation (clone what it needs).
pub trait AsyncMockImpl: Send + Sync {
    /// Starts answering one call.
    fn invoke(&self, invocation: &Invocation) -> BoxFuture<'static, RpcResult>;
}

impl<F> AsyncMockImpl for F
where
    F: Fn(&Invocation) -> BoxFuture<'static, RpcResult> + Send + Sync,
{
    fn invoke(&self, invocation: &Invocation) -> BoxFuture<'static, RpcResult> {
        self(invocation)
    }
}

/// One registered impl mock.
#[derive(Clone)]
pub enum RegisteredImpl {
    /// Answers at once ([`MockImpl`]).
    Sync(Arc<dyn MockImpl>),
    /// Answers through a future ([`AsyncMockImpl`]).
    Async(Arc<dyn AsyncMockImpl>),
}

impl fmt::Debug for RegisteredImpl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RegisteredImpl::Sync(_) => "Sync",
            RegisteredImpl::Async(_) => "Async",
        })
    }
}

/// Exception classes `throw <Class>` accepts without registration: common JDK exceptions
/// with a `(String)` constructor.
const BUILTIN_EXCEPTIONS: &[&str] = &[
    "java.lang.Exception",
    "java.lang.RuntimeException",
    "java.lang.IllegalStateException",
    "java.lang.IllegalArgumentException",
    "java.lang.UnsupportedOperationException",
    "java.lang.NullPointerException",
    "java.lang.ArithmeticException",
    "java.lang.IndexOutOfBoundsException",
    "java.lang.SecurityException",
    "java.lang.Error",
    "java.lang.Throwable",
    "java.io.IOException",
    "java.util.NoSuchElementException",
    "java.util.concurrent.TimeoutException",
    "org.apache.dubbo.rpc.RpcException",
];

/// Impl mocks and exception classes, looked up by (Java) class name.
#[derive(Default)]
pub struct MockRegistry {
    impls: RwLock<HashMap<String, RegisteredImpl>>,
    exceptions: RwLock<HashSet<String>>,
}

impl fmt::Debug for MockRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockRegistry")
            .field("impls", &self.impls.read().keys().collect::<Vec<_>>())
            .field("exceptions", &self.exceptions.read().len())
            .finish()
    }
}

impl MockRegistry {
    /// An empty registry (the built-in JDK exception classes are always known).
    pub fn new() -> Self {
        MockRegistry::default()
    }

    /// The process-wide registry used when a cluster is built without one.
    pub fn global() -> Arc<MockRegistry> {
        static GLOBAL: OnceLock<Arc<MockRegistry>> = OnceLock::new();
        GLOBAL.get_or_init(|| Arc::new(MockRegistry::new())).clone()
    }

    /// Registers an impl mock under a class name, e.g. `com.foo.DemoServiceMock` (found by
    /// `mock=true` / `mock=default` for interface `com.foo.DemoService`, or by
    /// `mock=com.foo.DemoServiceMock`).
    pub fn register_impl(&self, class_name: impl Into<String>, imp: Arc<dyn MockImpl>) {
        self.impls
            .write()
            .insert(class_name.into(), RegisteredImpl::Sync(imp));
    }

    /// Registers an impl mock that answers asynchronously (a Java mock class whose methods
    /// return `CompletableFuture`), found by the same names as [`MockRegistry::register_impl`]
    /// (which it replaces for that name, and the other way round).
    pub fn register_async_impl(&self, class_name: impl Into<String>, imp: Arc<dyn AsyncMockImpl>) {
        self.impls
            .write()
            .insert(class_name.into(), RegisteredImpl::Async(imp));
    }

    /// The synchronous impl mock registered under `class_name` (`None` for an asynchronous
    /// one: see [`MockRegistry::registered`]).
    pub fn impl_for(&self, class_name: &str) -> Option<Arc<dyn MockImpl>> {
        match self.impls.read().get(class_name)? {
            RegisteredImpl::Sync(i) => Some(i.clone()),
            RegisteredImpl::Async(_) => None,
        }
    }

    /// The impl mock registered under `class_name`, synchronous or asynchronous.
    pub fn registered(&self, class_name: &str) -> Option<RegisteredImpl> {
        self.impls.read().get(class_name).cloned()
    }

    /// Makes an exception class known to `throw <Class>`.
    pub fn register_exception(&self, class_name: impl Into<String>) {
        self.exceptions.write().insert(class_name.into());
    }

    /// True when `throw <class_name>` can "instantiate" the class.
    pub fn knows_exception(&self, class_name: &str) -> bool {
        BUILTIN_EXCEPTIONS.contains(&class_name) || self.exceptions.read().contains(class_name)
    }
}
