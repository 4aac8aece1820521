//! What goes inside the gRPC messages: [`PayloadMode::Wrapper`] (plain Java interfaces, Hessian2
//! inside `TripleRequestWrapper`) or [`PayloadMode::Idl`] (protobuf messages of a schema).

use std::sync::Arc;

use crate::idl::ProtoSchema;

/// How an invoker encodes arguments and decodes results.
#[derive(Debug, Clone, Default)]
pub enum PayloadMode {
    /// Wrapper mode: `serializeType` `hessian4`, Hessian2 arguments typed by the invocation's
    /// parameter types, path `/{interface}/{method}`.
    #[default]
    Wrapper,
    /// IDL mode: the invocation's single argument is a proto3 JSON message of the rpc's
    /// input type, path `/{package.Service}/{Method}`; results are proto3 JSON.
    Idl(IdlService),
}

/// The schema and SERVICE name an IDL-mode invoker resolves methods with
/// ([`ProtoSchema::method`]).
#[derive(Debug, Clone)]
pub struct IdlService {
    /// The compiled `.proto` files.
    pub schema: Arc<ProtoSchema>,
    /// The SERVICE as the user named it (proto full name, `java_package` + name, or any name
    /// when only one service has the called rpc).
    pub service: String,
}
