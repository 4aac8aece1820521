//! What goes inside the gRPC messages: [`PayloadMode::Wrapper`] (plain Java interfaces, Hessian2
//! inside `TripleRequestWrapper`) or [`PayloadMode::Idl`] (protobuf messages of a schema).

use std::sync::Arc;

use crate::error::TripleError;
use crate::idl::{IdlMethod, ProtoSchema};

/// How an invoker encodes arguments and decodes results.
#[derive(Debug, Clone, Default)]
pub enum PayloadMode {
    /// Wrapper mode: `serializeType` `hessian4`, Hessian2 arguments typed by the invocation's
    /// parameter types, path `/{interface}/{method}`.
    #[default]
    Wrapper,
    /// IDL mode: the invocation's single argument is a proto3 JSON message, results are proto3
    /// JSON; the path and message types as [`IdlService::resolve`] finds them.
    Idl(IdlService),
}

/// The schema and SERVICE name an IDL-mode invoker resolves methods with.
#[derive(Debug, Clone)]
pub struct IdlService {
    /// The compiled `.proto` files.
    pub schema: Arc<ProtoSchema>,
    /// The SERVICE as the user named it: a service of the schema (proto full name or
    /// `java_package` + name), or any other name, called as named.
    pub service: String,
    /// The request and response message names (full names) of every method, for a SERVICE
    /// the schema does not define (a plain Java interface taking protobuf messages).
    pub messages: Option<(String, String)>,
}

impl IdlService {
    /// SERVICE of `schema`, message types from the schema ([`ProtoSchema::method`]).
    pub fn new(schema: Arc<ProtoSchema>, service: impl Into<String>) -> IdlService {
        IdlService {
            schema,
            service: service.into(),
            messages: None,
        }
    }

    /// Every method of SERVICE takes a `request` and returns a `response` message (full
    /// names) and is called at `/{SERVICE}/{method}`: a plain Java interface whose methods take
    /// protobuf messages, which the schema describes only by its messages.
    pub fn with_messages(mut self, request: &str, response: &str) -> IdlService {
        self.messages = Some((request.to_owned(), response.to_owned()));
        self
    }

    /// The `:path` and message types of `method`.
    pub fn resolve(&self, method: &str) -> Result<IdlMethod, TripleError> {
        match &self.messages {
            Some((request, response)) => {
                self.schema
                    .interface_method(&self.service, method, request, response)
            }
            None => self.schema.method(&self.service, method),
        }
    }
}
