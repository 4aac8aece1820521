//! IDL mode with run-time schemas: `.proto` files compiled without protoc (`protox`) into a
//! `prost-reflect` pool; arguments and results in the canonical proto3 JSON mapping.
//!
//! - Loading: [`ProtoSchema::load`] takes files; each file's directory is an include path, so
//!   imports resolve relative to the importing file (well-known types are bundled).
//! - Service lookup ([`ProtoSchema::method`]): a service of the schema, named by its proto full
//!   name or by `java_package` + service name, is called on its proto path
//!   `/{package.Service}/{Rpc}` (what Dubbo's generated stub consumer sends whichever name the
//!   reference uses); METHOD matches the rpc exactly, or with the case of its first letter
//!   ignored (Java method names vs proto rpc names).
//! - Any other SERVICE (a plain Java interface whose methods take and return protobuf
//!   messages, which Dubbo serves at `/{interface}/{javaMethod}`, or a service the files do not
//!   describe) is called at `/{SERVICE}/{METHOD}` exactly as named, never on a schema service
//!   of the same rpc name: its messages are named with [`ProtoSchema::interface_method`]
//!   (`invoke --proto-messages`), or are those of the only rpc named METHOD in the schema. A
//!   provider without that service answers `UNIMPLEMENTED` (`METHOD_NOT_FOUND`).
//! - JSON in: `[msg]`, with `[]` (or no argument) meaning the empty message; every proto3 JSON
//!   form is accepted (json or proto field names, numbers as strings, enum names or numbers);
//!   unknown fields and wrong types are errors.
//! - JSON out: json field names, 64-bit integers as strings, enums by name, bytes as padded
//!   base64, fields with presence printed when set, implicit-presence fields at their default
//!   omitted.
//! - Memory: before a response is decoded, what it and its JSON form will take is estimated
//!   from the wire bytes (`idl_cost`); past the memory budget of the decode limits
//!   ([`hessian2::Limits::memory_budget`] of the message length) it is refused.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use prost::Message;
use prost_reflect::{
    DescriptorPool, DynamicMessage, MessageDescriptor, MethodDescriptor, SerializeOptions,
    ServiceDescriptor,
};
use serde_json::Value;

use crate::error::TripleError;

/// A compiled set of `.proto` files.
#[derive(Debug, Clone)]
pub struct ProtoSchema {
    pool: DescriptorPool,
}

/// One resolved method: its `:path` and message types.
#[derive(Debug, Clone)]
pub struct IdlMethod {
    path: Arc<str>,
    input: MessageDescriptor,
    output: MessageDescriptor,
}

impl ProtoSchema {
    /// Compiles `files` (and their imports). Errors name the file and the parse problem.
    pub fn load(files: &[PathBuf]) -> Result<ProtoSchema, TripleError> {
        if files.is_empty() {
            return Err(TripleError::InvalidArgument(
                "no .proto file given".to_owned(),
            ));
        }
        let mut includes: Vec<PathBuf> = Vec::new();
        let mut names: Vec<PathBuf> = Vec::new();
        for f in files {
            let dir = f
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            let name = f.file_name().map(PathBuf::from).ok_or_else(|| {
                TripleError::InvalidArgument(format!("{} is not a file", f.display()))
            })?;
            if !includes.contains(&dir) {
                includes.push(dir.clone());
            }
            names.push(name);
        }
        // Every file's directory comes first for its own name; open by relative name so
        // protox resolves it against the include paths in order.
        let mut compiler = protox::Compiler::new(&includes).map_err(|e| {
            TripleError::InvalidArgument(format!("cannot use the .proto directories: {e}"))
        })?;
        compiler.include_imports(true);
        for (f, name) in files.iter().zip(&names) {
            compiler
                .open_file(if f.is_absolute() {
                    f.as_path()
                } else {
                    name.as_path()
                })
                .map_err(|e| {
                    TripleError::InvalidArgument(format!("cannot compile {}: {e}", f.display()))
                })?;
        }
        Ok(ProtoSchema {
            pool: compiler.descriptor_pool(),
        })
    }

    /// A schema from an existing pool.
    pub fn from_pool(pool: DescriptorPool) -> ProtoSchema {
        ProtoSchema { pool }
    }

    /// The pool.
    pub fn pool(&self) -> &DescriptorPool {
        &self.pool
    }

    /// Resolves SERVICE and METHOD by the rules in the module docs: a service the schema
    /// defines (by proto full name or `java_package` + name) is called on its proto path; any
    /// other SERVICE is called at `/{SERVICE}/{METHOD}` exactly as named, with the message
    /// types of the only rpc named METHOD in the schema.
    pub fn method(&self, service: &str, method: &str) -> Result<IdlMethod, TripleError> {
        if let Some(svc) = self.defined_service(service) {
            let m = find_method(&svc, method).ok_or_else(|| {
                TripleError::InvalidArgument(format!(
                    "service {} has no rpc {method} (rpcs: {})",
                    svc.full_name(),
                    svc.methods()
                        .map(|m| m.name().to_owned())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
            return Ok(IdlMethod {
                path: Arc::from(format!("/{}/{}", svc.full_name(), m.name())),
                input: m.input(),
                output: m.output(),
            });
        }
        let with: Vec<MethodDescriptor> = self
            .pool
            .services()
            .filter_map(|s| find_method(&s, method))
            .collect();
        match with.as_slice() {
            [m] => Ok(IdlMethod {
                path: interface_path(service, method)?,
                input: m.input(),
                output: m.output(),
            }),
            [] => Err(TripleError::InvalidArgument(format!(
                "{service} is not a service of the .proto files (services: {}) and no rpc is \
                 named {method}: name its request and response messages",
                self.pool
                    .services()
                    .map(|s| s.full_name().to_owned())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
            several => Err(TripleError::InvalidArgument(format!(
                "{service} is not a service of the .proto files and several rpcs are named \
                 {method} ({}): name its request and response messages",
                several
                    .iter()
                    .map(|m| m.full_name().to_owned())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// METHOD of a service the schema need not define (a plain Java interface whose methods
    /// take and return protobuf messages): called at `/{service}/{method}` exactly as named,
    /// the request a `request` message, the response a `response` message (full names).
    pub fn interface_method(
        &self,
        service: &str,
        method: &str,
        request: &str,
        response: &str,
    ) -> Result<IdlMethod, TripleError> {
        let message = |name: &str| {
            self.pool.get_message_by_name(name).ok_or_else(|| {
                TripleError::InvalidArgument(format!("no message {name} in the .proto files"))
            })
        };
        Ok(IdlMethod {
            path: interface_path(service, method)?,
            input: message(request)?,
            output: message(response)?,
        })
    }

    /// The schema's service SERVICE names: its proto full name, else `java_package` + name.
    fn defined_service(&self, service: &str) -> Option<ServiceDescriptor> {
        if let Some(s) = self.pool.get_service_by_name(service) {
            return Some(s);
        }
        self.pool.services().find(|s| {
            let jp = s
                .parent_file()
                .file_descriptor_proto()
                .options
                .as_ref()
                .and_then(|o| o.java_package.clone());
            jp.is_some_and(|p| {
                service.len() == p.len() + 1 + s.name().len()
                    && service.starts_with(p.as_str())
                    && service[p.len()..].starts_with('.')
                    && service.ends_with(s.name())
            })
        })
    }
}

/// `/{service}/{method}`, both as named (no empty part, no `/` inside).
fn interface_path(service: &str, method: &str) -> Result<Arc<str>, TripleError> {
    let service = service.trim_matches('/');
    if service.is_empty() || method.is_empty() || method.contains('/') {
        return Err(TripleError::InvalidArgument(format!(
            "cannot call {service:?} method {method:?}: both must be non-empty names"
        )));
    }
    Ok(Arc::from(format!("/{service}/{method}")))
}

fn find_method(svc: &ServiceDescriptor, method: &str) -> Option<MethodDescriptor> {
    svc.methods().find(|m| m.name() == method).or_else(|| {
        svc.methods()
            .find(|m| first_letter_case_insensitive_eq(m.name(), method))
    })
}

fn first_letter_case_insensitive_eq(a: &str, b: &str) -> bool {
    let (mut ca, mut cb) = (a.chars(), b.chars());
    match (ca.next(), cb.next()) {
        (Some(x), Some(y)) => x.to_lowercase().eq(y.to_lowercase()) && ca.as_str() == cb.as_str(),
        _ => false,
    }
}

impl IdlMethod {
    /// The `:path`: `/{package.Service}/{Rpc}` for a service of the schema,
    /// `/{SERVICE}/{METHOD}` as named otherwise.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The request message type.
    pub fn input(&self) -> &MessageDescriptor {
        &self.input
    }

    /// The response message type.
    pub fn output(&self) -> &MessageDescriptor {
        &self.output
    }

    /// Encodes the request from the invocation arguments (`[]` or `[msg]`), framing prefix
    /// space included: the returned buffer starts with 5 bytes for the caller to fill.
    pub fn encode_args(&self, args: &[Value]) -> Result<BytesMut, TripleError> {
        let input = self.input.clone();
        let msg = match args {
            [] => DynamicMessage::new(input),
            [v] => DynamicMessage::deserialize(input.clone(), v).map_err(|e| {
                TripleError::InvalidArgument(format!(
                    "argument is not a valid {} in proto3 JSON: {e}",
                    input.full_name()
                ))
            })?,
            _ => {
                return Err(TripleError::InvalidArgument(format!(
                    "an IDL call takes one message argument ([{{...}}]), got {}",
                    args.len()
                )))
            }
        };
        let len = msg.encoded_len();
        let mut buf = BytesMut::with_capacity(crate::frame::PREFIX_LEN + len);
        buf.put_bytes(0, crate::frame::PREFIX_LEN);
        msg.encode(&mut buf)
            .map_err(|e| TripleError::Codec(format!("protobuf encode: {e}")))?;
        Ok(buf)
    }

    /// Decodes a response message into proto3 JSON, within the default memory budget.
    pub fn decode_result(&self, data: Option<Bytes>) -> Result<Value, TripleError> {
        self.decode_result_with(data, hessian2::Limits::DEFAULT)
    }

    /// An upper estimate of the memory decoding `data` as this rpc's response and printing it
    /// as JSON takes (at most `limit + 1`: the estimate stops there).
    pub fn result_memory(&self, data: &[u8], limit: usize) -> usize {
        crate::idl_cost::json_cost(&self.output, data, limit)
    }

    /// Decodes a response message into proto3 JSON, refusing one whose decoded form and JSON
    /// would take more than `limits.memory_budget(length)` bytes (estimated before decoding).
    pub fn decode_result_with(
        &self,
        data: Option<Bytes>,
        limits: hessian2::Limits,
    ) -> Result<Value, TripleError> {
        let output = self.output.clone();
        if let Some(d) = &data {
            let budget = limits.memory_budget(d.len());
            if self.result_memory(d, budget) > budget {
                return Err(TripleError::Codec(format!(
                    "decoding a {} needs more than the memory budget of {budget} bytes for {} bytes of input",
                    output.full_name(),
                    d.len()
                )));
            }
        }
        let msg =
            DynamicMessage::decode(output.clone(), data.unwrap_or_default()).map_err(|e| {
                TripleError::Codec(format!(
                    "response is not a valid {}: {e}",
                    output.full_name()
                ))
            })?;
        let opts = SerializeOptions::new()
            .stringify_64_bit_integers(true)
            .use_enum_numbers(false)
            .use_proto_field_name(false)
            .skip_default_fields(true);
        msg.serialize_with_options(serde_json::value::Serializer, &opts)
            .map_err(|e| TripleError::Codec(format!("cannot print the response as JSON: {e}")))
    }
}
